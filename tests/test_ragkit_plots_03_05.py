"""ragkit.plots, sections 03 (indexing) and 05 (reranking).

These functions draw the notebooks' figures and gather their tables, and
the notebooks' check cells assert only a few of the numbers they return;
the rest of what the prose states is asserted here. Each test compares
with a computation of its own (a loop over words, a count by hand), or
with the number the prose prints, never with the function's own output.
No kernel runs; matplotlib draws off screen.
"""
import math

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ragkit import ann, chunking, plots  # noqa: E402
from ragkit.corpus import load_documents, load_questions  # noqa: E402

DOCS = load_documents()
QUESTIONS = load_questions()
NOTICE = ("Book the laser cutter online. Each booked slot lasts forty "
          "minutes. Members must pass the safety induction first. If the "
          "cutter shows LC-0417, the lid is open. Close it and press reset.")


@pytest.fixture(autouse=True)
def no_open_figures():
    """plt.show() draws nothing off screen: close what a test drew."""
    yield
    plt.close("all")


def windows_by_hand(words: list[str], size: int, overlap: int = 0) -> list[list[str]]:
    """Fixed windows as the prose of 03 defines them, written apart."""
    out, start = [], 0
    while start < len(words):
        out.append(words[start:start + size])
        if start + size >= len(words):
            break
        start += size - overlap
    return out


# --------------------------------------------------------------------- 03


def test_a_figure_title_must_name_its_figure():
    with pytest.raises(ValueError, match="title"):
        plots.chunker_figure(NOTICE, "three chunkers")
    with pytest.raises(TypeError, match="title"):
        plots.nprobe_figure(None, 3.2)


def test_chunker_figure_counts_what_the_prose_reads_off_it():
    """32 words, five sentences; 4 plain windows (the last of 2 words),
    5 with 3 words of overlap, 4 sentence chunks on sentence ends."""
    counts = plots.chunker_figure(NOTICE, "Figure 3.1: test")
    words = NOTICE.split()
    assert counts["words"] == len(words) == 32
    assert counts["sentences"] == NOTICE.count(". ") + 1 == 5
    plain, shared = windows_by_hand(words, 10), windows_by_hand(words, 10, 3)
    assert counts["chunks"][:2] == [len(plain), len(shared)] == [4, 5]
    assert counts["last window words"] == len(plain[-1]) == 2
    assert counts["chunks"][2] == 4
    ax = plt.gcf().axes[0]
    assert ax.get_title() == "Figure 3.1: test"
    assert len(ax.patches) == 4 + 5 + 4  # one bar per chunk


def test_answer_survival_counts_the_broken_answers_of_section_3():
    """Fixed windows of 12 break 21 of the 43 gold answers, q01 first; the
    sentence chunker keeps all 43."""
    table = plots.answer_survival(QUESTIONS, DOCS, 12)
    pages = {doc.doc_id: doc.text for doc in DOCS}
    broken = []
    for q in QUESTIONS:
        windows = [" ".join(w) for w in windows_by_hand(pages[q.doc_id].split(), 12)]
        if not any(q.answer.lower() in w.lower() for w in windows):
            broken.append(q.qid)
    assert list(table.index) == [q.qid for q in QUESTIONS]
    assert sorted(table.index[~table["fixed_12"]]) == sorted(broken)
    assert len(broken) == 21 and broken[0] == "q01" == table.index[~table["fixed_12"]][0]
    assert table["sentence_12"].all() and len(table) == 43


def test_cut_windows_shows_the_two_windows_q01_straddles():
    q01 = QUESTIONS[0]
    numbers = plots.cut_windows(q01, DOCS, 12)
    page = next(doc.text for doc in DOCS if doc.doc_id == q01.doc_id)
    windows = [" ".join(w) for w in windows_by_hand(page.split(), 12)]
    assert len(numbers) == 2 and numbers[1] == numbers[0] + 1
    assert not any(q01.answer in windows[n] for n in numbers)
    assert q01.answer in " ".join(windows[n] for n in numbers)


def test_failure_drops_are_relative_to_the_first_row():
    table = plots.failure_drops({"plain": 5.7, "contextual": 3.7, "+ BM25": 2.9,
                                 "+ reranker": 1.9})
    by_hand = [round(100 * (5.7 - x) / 5.7) for x in (3.7, 2.9, 1.9)]
    assert table["drop vs plain %"].tolist() == [0, *by_hand] == [0, 35, 49, 67]


def test_bm25_top_backs_the_locker_and_router_paragraphs():
    """The locker price chunk never says "locker": plain, lockers#0 beats it;
    with title notes it comes first. The router chunk stays second."""
    chunks = chunking.chunk_documents(DOCS, "sentence", size=25)
    noted = chunking.add_context(chunks, {doc.doc_id: doc.title for doc in DOCS})
    q04 = next(q for q in QUESTIONS if q.qid == "q04")
    gold = [c for c in chunks if q04.answer in c.text]
    assert [c.chunk_id for c in gold] == ["lockers#2"]
    assert "locker" not in gold[0].text.lower()
    assert plots.bm25_top(chunks, q04.question)[:2] == ["lockers#0", "lockers#2"]
    assert plots.bm25_top(noted, q04.question, k=1) == ["lockers#2"]
    router = "How far ahead must I book the CNC router?"
    assert noted[5].chunk_id == "booking#5" and "two full days ahead" in noted[5].text
    for pieces in (chunks, noted):
        assert plots.bm25_top(pieces, router)[:2] == ["booking#4", "booking#5"]
    assert len(plots.bm25_top(chunks, router, k=5)) == 5


def test_overlap_three_ways_agree_with_a_count_by_hand():
    """10,000 words, windows of 200 sharing 40: the section's numbers; and
    another text where the columns are compared with windows counted."""
    table = plots.overlap_three_ways(10_000, 200, 40)
    assert (200 - 40, (10_000 - 200) / (200 - 40)) == (160, 61.25)
    want = [63, 50, 62 * 160, 80, 63 * 200, 62 * 200 + 80, 26.0, 24.8]
    for column in table:
        assert table[column].round(1).tolist() == want, column
    windows = windows_by_hand(list(range(1_003)), 30, 7)
    other = plots.overlap_three_ways(1_003, 30, 7)
    stored = sum(len(w) for w in windows)
    assert (other.loc["windows"] == len(windows)).all()
    assert (other.loc["last window starts at"] == windows[-1][0]).all()
    assert (other.loc["words stored"] == stored).all()
    assert np.allclose(other.loc["stored share extra %"], 100 * (stored / 1_003 - 1))


def test_overlap_per_page_backs_the_help_centre_paragraph():
    """Overlap 6 on windows of 20: 142 chunks, 2,750 words for 1,988 (38.3%);
    every page under 6 / 14 = 42.9%; pages under 110 words 36.4%, the six
    longer 39.8%; firstaid (246 words) 41.5% the most, billing (90 words,
    6 windows) 33.3% the least, laser (91 words, 7 windows) 39.6%."""
    table = plots.overlap_per_page(DOCS, 20, 6)
    for doc in DOCS:
        windows = windows_by_hand(doc.text.split(), 20, 6)
        assert table.loc[doc.doc_id, "windows"] == len(windows)
        assert table.loc[doc.doc_id, "words_stored"] == sum(map(len, windows))
    assert list(table["words"]) == sorted(table["words"])
    assert table[["windows", "words_stored", "words"]].sum().tolist() == [142, 2750, 1988]
    assert round(100 * (2750 / 1988 - 1), 1) == 38.3
    assert (table["extra_pct"] < 100 * 6 / 14).all() and round(100 * 6 / 14, 1) == 42.9
    short = table["words"] < 110

    def group(mask):
        part = table[mask]
        return round(100 * (part["words_stored"].sum() / part["words"].sum() - 1), 1)

    assert (short.sum(), (~short).sum(), group(short), group(~short)) == (9, 6, 36.4, 39.8)
    assert table["extra_pct"].idxmax() == "firstaid" and table.loc["firstaid", "words"] == 246
    assert table["extra_pct"].idxmin() == "billing"
    assert table.loc["billing", ["words", "windows"]].tolist() == [90, 6]
    assert table.loc["laser", ["words", "windows"]].tolist() == [91, 7]
    assert table.loc[["firstaid", "billing", "laser"], "extra_pct"].round(1).tolist() == \
        [41.5, 33.3, 39.6]


def test_exact_search_cost_of_a_million_vectors(capsys):
    cost = plots.exact_search_cost(1_000_000, 768)
    assert cost["multiply-adds"] == 768 * 10**6
    assert cost["bytes"] == 4 * 768 * 10**6 and round(cost["bytes"] / 2**30, 2) == 2.86
    assert cost["bytes, 100 times the chunks"] == 100 * cost["bytes"]
    assert "3.07 GB" in capsys.readouterr().out


def test_topic_vectors_are_unit_float32_rows_near_their_topics():
    points = plots.topic_vectors(500, 16, 4, 0.1, seed=1)
    assert points.shape == (500, 16) and points.dtype == np.float32
    assert np.allclose(np.linalg.norm(points, axis=1), 1, atol=1e-6)
    assert np.array_equal(points, plots.topic_vectors(500, 16, 4, 0.1, seed=1))
    # with little noise a point's nearest other point lies far closer than
    # among as many points drawn uniformly in every direction
    uniform = np.random.default_rng(1).standard_normal((500, 16))
    uniform /= np.linalg.norm(uniform, axis=1, keepdims=True)
    others = ~np.eye(500, dtype=bool)
    best = (points @ points.T).max(axis=1, initial=-1, where=others)
    assert best.mean() > 0.9 > 0.75 > (uniform @ uniform.T).max(axis=1, initial=-1,
                                                              where=others).mean()


def test_nprobe_sweep_recall_share_and_speedup_by_hand():
    """A small collection: recall against an overlap count of our own, the
    share scored and the comparisons from the list sizes; every list
    probed finds every neighbour."""
    rng = np.random.default_rng(4)
    stored = rng.standard_normal((600, 8)).astype(np.float32)
    queries = rng.standard_normal((20, 8)).astype(np.float32)
    index = ann.IVFIndex(stored, 6, seed=0)
    truth = np.argsort(-(queries @ stored.T), axis=1, kind="stable")[:, :5]
    sweep = plots.nprobe_sweep(index, queries, truth, [1, 6])
    found, _ = index.search(queries, 5, 1)
    recall = np.mean([len(set(f) & set(t)) / 5 for f, t in zip(found, truth)])
    assert math.isclose(sweep.loc[1, "recall@10"], recall)
    assert sweep.loc[1, "missed"] == round((1 - recall) * truth.size)
    assert sweep.loc[6, "recall@10"] == 1.0 and sweep.loc[6, "missed"] == 0
    assert math.isclose(sweep.loc[6, "scored_pct"], 100)
    assert math.isclose(sweep.loc[6, "speedup"], 600 / (6 + 600))
    assert 100 * index.list_sizes.min() / 600 <= sweep.loc[1, "scored_pct"] \
        <= 100 * index.list_sizes.max() / 600


@pytest.fixture(scope="module")
def section_6():
    """Section 6 of 03 as the notebook runs it: 40,000 clustered vectors."""
    pool = plots.topic_vectors(40_200, 64, 40, 0.22, seed=12)
    stored, probes = pool[:40_000], pool[40_000:]
    index = ann.IVFIndex(stored, 64, train_size=4_000, seed=0)
    truth, _ = ann.exact_search(stored, probes, 10)
    return plots.nprobe_sweep(index, probes, truth, [1, 2, 4, 8, 16])


def test_section_6_numbers_of_the_prose(section_6):
    """Recall 0.71, 0.90, 0.95 at nprobe 1, 4, 8, still under 1 at 16 with
    36 of 2,000 missed; about 2%, 12% and 25% scored; about 47 and 8 times
    less work at nprobe 1 and 8; and Figure 3.2's axes."""
    sweep = section_6
    assert sweep["recall@10"].is_monotonic_increasing and sweep.loc[16, "recall@10"] < 1
    assert sweep.loc[[1, 4, 8], "recall@10"].round(2).tolist() == [0.71, 0.90, 0.95]
    assert sweep.loc[16, "missed"] == 36
    assert sweep.loc[[1, 8, 16], "scored_pct"].round().tolist() == [2, 12, 25]
    assert sweep.loc[[1, 8], "speedup"].round().tolist() == [47, 8]
    left, right = plots.nprobe_figure(sweep, "Figure 3.2: test")
    assert left.get_ylim() == right.get_ylim() == (0, 1.02)
    assert right.get_xlim()[0] == 0 and left.get_xscale() == "log"


def test_uniform_vectors_lose_most_of_the_recall(section_6):
    """Uniform vectors: 0.12 at nprobe 1 and 0.47 at 8, each more than 0.4
    below the clustered collection."""
    compare = plots.uniform_recall(section_6, 40_000, 64, 64, [1, 8], seed=12)
    assert compare["clustered"].tolist() == section_6.loc[[1, 8], "recall@10"].tolist()
    assert compare["uniform"].round(2).tolist() == [0.12, 0.47]
    assert (compare["uniform"] < compare["clustered"] - 0.4).all()


# --------------------------------------------------------------------- 05


@pytest.fixture(scope="module")
def help_centre():
    """Notebook 05's help centre: sentence chunks of 25 words, a Retriever."""
    from ragkit.retrieval import Retriever
    chunks = chunking.chunk_documents(DOCS, "sentence", size=25)
    return chunks, {c.chunk_id: c.indexed_text for c in chunks}, Retriever(chunks)


def own_questions():
    """The two questions notebook 05 writes for section 8."""
    from ragkit.corpus import Question
    return [Question("x01", "Do I get my induction fee back?",
                     "comes back as credit if you attend", "induction", "paraphrase"),
            Question("x02", "What should a member do with a locker padlock?",
                     "Bring your own padlock", "lockers", "plain")]


def test_two_stage_lists_are_one_shortlist_in_two_orders(help_centre):
    chunks, _, retriever = help_centre
    q05 = next(q for q in QUESTIONS if q.qid == "q05")
    table = plots.two_stage_lists(retriever, q05.question)
    first, second = table["hybrid"].tolist(), table["hybrid + rerank"].tolist()
    assert list(table.index) == list(range(1, 11))
    assert sorted(first) == sorted(second) and first != second and len(set(first)) == 10
    assert first[0] == second[0] == "booking#1"
    assert [c.chunk_id for c in chunks if q05.answer.lower() in c.text.lower()] == ["booking#1"]


def test_figure_5_1_and_the_scorer_table():
    titles = plots.meeting_points_figure("Figure 5.1: test")
    assert [t.split(":")[0] for t in titles] == ["bi-encoder", "cross-encoder",
                                                "late interaction"]
    assert plt.gcf()._suptitle.get_text() == "Figure 5.1: test"
    table = plots.scorer_table()
    assert table.shape == (5, 3) and list(table) == [t.split(":")[0] for t in titles]
    assert list(table.loc["precomputable"]) == ["yes", "no", "yes"]
    assert table.loc["storage", "late interaction"] == "large"


def test_section_3_costs_by_hand(capsys):
    """100 cross-encoder runs against one query encoding; 25,600 bytes of
    token vectors against 3,072, about 8.3 times; break-even at 12."""
    runs = plots.model_runs(100)
    assert runs.to_dict() == {"bi-encoder": 1, "cross-encoder": 100, "late interaction": 1}
    sums = plots.passage_bytes(100, 128, 2, 768, 4)
    assert (sums["per token"], sums["token vectors"], sums["one vector"]) == \
        (128 * 2, 100 * 128 * 2, 768 * 4) == (256, 25_600, 3_072)
    assert round(sums["ratio"], 1) == 8.3 and sums["break-even tokens"] == 12
    assert "25,600 bytes" in capsys.readouterr().out


def test_token_storage_on_the_help_centre_and_a_million_chunks(help_centre):
    """1,210 tokens in 97 chunks (12.47 a chunk, just past 12): 309,760
    bytes of token vectors against 297,984; a million 100-token chunks take
    25.6 GB against 3.07 GB, 2.56 to 4.27 GB compressed; the first eight
    pages 10.75 tokens a chunk, the last seven 13.91."""
    from ragkit.text import tokenize
    chunks, texts, _ = help_centre
    scale = plots.token_storage(list(texts.values()), plots.passage_bytes(100, 128, 2, 768, 4),
                                1_000_000, 100)
    tokens = sum(len(tokenize(c.indexed_text)) for c in chunks)
    hc, big = scale.iloc[0], scale.iloc[1]
    assert (hc["passages"], hc["tokens"]) == (len(chunks), tokens) == (97, 1_210)
    assert round(tokens / 97, 2) == 12.47
    assert round(hc["token vectors (GB)"] * 1e9) == 1_210 * 256 == 309_760
    assert round(hc["one vector (GB)"] * 1e9) == 97 * 3_072 == 297_984
    assert (round(big["one vector (GB)"], 2), round(big["token vectors (GB)"], 1)) == (3.07, 25.6)
    assert (round(big["ColBERTv2, /10 (GB)"], 2), round(big["ColBERTv2, /6 (GB)"], 2)) == \
        (2.56, 4.27)
    groups = plots.tokens_by_pages(DOCS, chunks, 8)
    assert [d.doc_id for d in DOCS[:8]][::7] == ["booking", "hours"]
    assert groups["chunks"].tolist() == [44, 53] and groups["tokens"].tolist() == [473, 737]
    assert groups["tokens"].sum() == tokens
    assert groups["tokens per chunk"].round(2).tolist() == [10.75, 13.91]


def test_section_8_ranks_and_summary(help_centre):
    """Hybrid search puts the gold chunk first for 36 questions, reranked
    34; nine move (five up, four down); hit@3 40 of 43 either way, but
    q18, q24, q33 outside the top 3 before and q33, q34, q35 after; MRR
    0.889 -> 0.869; of the first twelve questions only q08 moves."""
    from ragkit.metrics import relevant_chunk_ids
    chunks, _, retriever = help_centre
    ranks = plots.gold_ranks(retriever, chunks, QUESTIONS)
    q34 = next(q for q in QUESTIONS if q.qid == "q34")
    reranked = retriever.search(q34.question, 10, "hybrid+rerank")
    assert ranks.loc["q34", "hybrid+rerank"] == \
        1 + reranked.index(relevant_chunk_ids(chunks, q34.answer)[0]) == 7
    assert ranks.notna().all().all() and (ranks == 1).sum().tolist() == [36, 34]
    moved = ranks[ranks["hybrid+rerank"] != ranks["hybrid"]]
    assert {qid: tuple(row) for qid, row in moved.iterrows()} == {
        "q08": (1, 2), "q18": (5, 3), "q24": (4, 2), "q33": (10, 8), "q34": (1, 7),
        "q35": (3, 4), "q37": (2, 1), "q41": (1, 2), "q42": (3, 2)}
    assert [list(ranks.index[ranks[m] > 3]) for m in plots.RERANK_MODES] == \
        [["q18", "q24", "q33"], ["q33", "q34", "q35"]]
    assert ranks.loc["q04"].tolist() == [2, 2]
    summary = plots.rerank_summary(retriever, QUESTIONS)
    assert (summary["hit@3"] * 43).round().tolist() == [40, 40]
    assert (ranks <= 3).sum().tolist() == [40, 40]
    assert summary["MRR"].round(3).tolist() == [0.889, 0.869] == \
        (1 / ranks).mean().round(3).tolist()


def test_best_matches_explain_q34_q08_and_q04(help_centre):
    """Each query token's best partner and its dot, against a table of dot
    products computed here; the claims of the paragraphs on q34, q08, q04."""
    from ragkit.dense import feature_bucket, trigrams
    from ragkit.rerank import token_vectors
    from ragkit.text import concept, tokenize
    _, texts, _ = help_centre
    ask = {q.qid: q.question for q in QUESTIONS}
    q34 = plots.best_matches(ask["q34"], texts, ["loans#3", "loans#4"])
    dots = token_vectors(ask["q34"]) @ token_vectors(texts["loans#4"]).T
    assert np.allclose(q34[("loans#4", "dot")], dots.max(axis=1).round(3))
    exact = q34.xs("dot", axis=1, level=1) == 1.0
    assert list(exact.index[exact["loans#3"]]) == ["borrow", "late"]
    assert list(exact.index[exact["loans#4"]]) == ["borrow", "tool", "back"]
    assert [plots.chunk_count(w, texts) for w in ("late", "tool", "back")] == \
        [sum(w in tokenize(t) for t in texts.values()) for w in ("late", "tool", "back")] == \
        [1, 7, 7]
    assert q34.loc["twice", ("loans#3", "match")] == "warn"
    q08 = plots.best_matches(ask["q08"], texts, ["guests#3", "laser#0"])
    assert q08.loc["use", ("laser#0", "match")] == "check"
    assert q08.loc["use", ("laser#0", "dot")] == 0.803
    assert q08.loc["stand", ("laser#0", "match")] == "front"
    assert q08.loc["stand", ("laser#0", "dot")] == 0.65
    for a, b in (("use", "check"), ("stand", "front")):  # no trigram shared: a collision
        assert not set(trigrams(a)) & set(trigrams(b))
        assert feature_bucket("w:" + a, 64) == feature_bucket("w:" + b, 64)
    q04 = plots.best_matches(ask["q04"], texts, ["lockers#2", "guests#2"])
    assert [concept(t) for t in tokenize(ask["q04"])] == ["cost", "locker", "cost"]
    assert "locker" not in tokenize(texts["lockers#2"]) + tokenize(texts["guests#2"])
    assert q04.loc["locker", ("lockers#2", "dot")] == 0.06
    assert q04.loc["locker", ("guests#2", "dot")] == 0.201


def test_our_own_questions_are_rescued_and_128_buckets_fix_four(help_centre):
    """x01 and x02: the gold chunk second under hybrid search, first once
    reranked; BM25 had it first, the dense retriever not. At 128
    dimensions q04, q08, x01 and x02 all come first, while the MRR of the
    43 questions goes 0.889 (hybrid), 0.869 (64), 0.894 (128)."""
    chunks, texts, retriever = help_centre
    extra = own_questions()
    table = plots.rescue_table(retriever, chunks, extra)
    assert table["gold"].tolist() == ["induction#3", "lockers#3"]
    assert table["hybrid first"].tolist() == ["billing#3", "lockers#0"]
    assert table[["hybrid", "hybrid+rerank"]].values.tolist() == [[2, 1], [2, 1]]
    assert [retriever.bm25.search(q.question, 1)[0][0] for q in extra] == table["gold"].tolist()
    assert [retriever.dense.search(q.question, 1)[0][0] for q in extra] == \
        table["hybrid first"].tolist()
    assert [plots.chunk_count(w, texts) for w in ("member", "induction", "back", "fee")] == \
        [16, 8, 7, 1]
    ranks = plots.ranks_by_dim(retriever, chunks, QUESTIONS + extra, dims=(64, 128))
    show = ["q04", "q08", "x01", "x02"]
    assert ranks.loc[show].values.T.tolist() == [[2, 1, 2, 2], [2, 2, 1, 1], [1, 1, 1, 1]]
    official = ranks.loc[[q.qid for q in QUESTIONS]]
    assert (1 / official).mean().round(3).tolist() == [0.889, 0.869, 0.894]
    assert official.loc[["q18", "q34", "q41"]].values.tolist() == [[5, 3, 5], [1, 7, 4],
                                                                   [1, 2, 3]]
    # the dim=64 column is the Retriever's own reranking
    assert official["dim=64"].tolist() == \
        plots.gold_ranks(retriever, chunks, QUESTIONS)["hybrid+rerank"].tolist()
