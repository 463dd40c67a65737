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
