"""ragkit.evaluation: bootstrap intervals (and the whole-evaluation helpers)."""

import numpy as np
import pytest

from ragkit.evaluation import bootstrap_interval


def test_interval_brackets_the_mean_and_is_reproducible():
    values = [1.0] * 30 + [0.0] * 13
    low, high = bootstrap_interval(values, seed=3)
    assert low < np.mean(values) < high
    assert (low, high) == bootstrap_interval(values, seed=3)


def test_constant_values_have_no_spread():
    assert bootstrap_interval([0.5] * 20) == (0.5, 0.5)


def test_quadrupling_the_questions_roughly_halves_the_width():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 2, 50).astype(float)
    large = np.tile(small, 4)
    w_small = np.subtract(*bootstrap_interval(small)[::-1])
    w_large = np.subtract(*bootstrap_interval(large)[::-1])
    assert 0.4 < w_large / w_small < 0.6, (w_small, w_large)


def test_interval_matches_a_plain_loop_over_the_same_draws():
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.5])
    rng = np.random.default_rng(7)
    picks = rng.integers(0, len(values), size=(500, len(values)))
    means = sorted(sum(values[i] for i in row) / len(row) for row in picks)
    want = np.quantile(means, [0.05, 0.95])
    got = bootstrap_interval(values, level=0.9, n_boot=500, seed=7)
    assert np.allclose(got, want, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"values": []}, "values"), ({"values": [[1.0]]}, "values"),
     ({"values": [1.0, float("nan")]}, "values"),
     ({"values": [1.0], "level": 1.0}, "level"),
     ({"values": [1.0], "n_boot": 0}, "n_boot")],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        bootstrap_interval(**kwargs)


# ------------------------------------------------ whole-evaluation helpers

import json
import math

from ragkit.chunking import chunk_documents
from ragkit.corpus import load_documents, load_questions
from ragkit.evaluation import (
    chunk_size_study,
    evaluate_files,
    evaluate_modes,
    first_gold_ranks,
    paired_difference,
    study_chunks,
)
from ragkit.metrics import hit_at_k, mrr, recall_at_k, relevant_chunk_ids
from ragkit.retrieval import MODES, Retriever, evaluate


@pytest.fixture(scope="module")
def lab():
    docs = load_documents()
    questions = load_questions()
    retriever = Retriever(chunk_documents(docs, "sentence", size=25))
    return docs, questions, retriever


def test_mode_table_repeats_evaluate_row_by_row(lab):
    _, questions, retriever = lab
    table = evaluate_modes(retriever, questions, ["dense", "bm25"], k=2)
    assert list(table.columns) == ["mode", "hit", "recall", "mrr", "ndcg", "n"]
    assert list(table["mode"]) == ["dense", "bm25"]
    assert list(table.index) == [0, 1]
    for _, row in table.iterrows():
        want = evaluate(retriever, questions, row["mode"], 2)
        for name in ("hit", "recall", "mrr", "ndcg", "n"):
            assert row[name] == pytest.approx(want[name], abs=1e-12), name


@pytest.mark.parametrize("modes, k, error", [
    ("hybrid", 3, TypeError), (["bm42"], 3, ValueError), ([], 3, ValueError),
    (["bm25"], 0, ValueError), (["bm25"], 2.0, TypeError)])
def test_mode_table_refuses_bad_modes_and_k(lab, modes, k, error):
    _, questions, retriever = lab
    name = "k" if k != 3 else "modes"
    with pytest.raises(error, match=name):
        evaluate_modes(retriever, questions, modes, k)


def test_first_gold_ranks_agree_with_hit_at_k(lab):
    _, questions, retriever = lab
    ranks = first_gold_ranks(retriever, questions, MODES, depth=10)
    assert list(ranks.columns) == list(MODES)
    assert list(ranks.index) == [q.qid for q in questions]
    table = evaluate_modes(retriever, questions, MODES, k=3)
    for mode, hit in zip(table["mode"], table["hit"]):
        # a hit at 3 is exactly a first gold rank of 1, 2 or 3
        assert (ranks[mode] <= 3).mean() == pytest.approx(hit)
    # q03 shares no word with its page: BM25 finds nothing at all
    assert math.isnan(ranks.loc["q03", "bm25"])
    assert ranks.loc["q03", "dense"] == 1.0


def test_first_gold_ranks_names_a_bad_depth(lab):
    _, questions, retriever = lab
    with pytest.raises(ValueError, match="depth"):
        first_gold_ranks(retriever, questions, MODES, depth=0)


@pytest.fixture(scope="module")
def study(lab):
    docs, questions, _ = lab
    return chunk_size_study(docs, questions, [8, 24],
                            ["fixed", "overlap", "sentence"], k=3)


def test_study_layout(study):
    assert list(study.columns) == ["chunker", "size", "chunks",
                                   "words_stored", "hit", "recall", "mrr",
                                   "hits"]
    assert list(study.index) == list(range(6))
    assert list(zip(study["chunker"], study["size"])) == [
        ("fixed", 8), ("fixed", 24), ("overlap", 8), ("overlap", 24),
        ("sentence", 8), ("sentence", 24)]


def test_study_cell_matches_a_recomputation(lab, study):
    docs, questions, _ = lab
    chunks = chunk_documents(docs, "overlap", size=24, overlap=6)
    retriever = Retriever(chunks)
    hits, recalls, rrs = [], [], []
    for q in questions:
        gold = relevant_chunk_ids(chunks, q.answer)
        ranked = retriever.search(q.question, 10, "hybrid")
        hits.append(hit_at_k(ranked, gold, 3))
        recalls.append(recall_at_k(ranked, gold, 3))
        rrs.append(mrr(ranked, gold, 10))
    row = study.iloc[3]
    assert row["chunks"] == len(chunks)
    assert row["hits"] == tuple(hits)
    assert row["hit"] == pytest.approx(np.mean(hits))
    assert row["recall"] == pytest.approx(np.mean(recalls))
    assert row["mrr"] == pytest.approx(np.mean(rrs))


def test_overlap_stores_more_words_and_sentences_store_each_once(lab, study):
    docs, _, _ = lab
    total = sum(len(d.text.split()) for d in docs)
    words = dict(zip(zip(study["chunker"], study["size"]),
                     study["words_stored"]))
    for size in (8, 24):
        assert words[("fixed", size)] == total
        assert words[("sentence", size)] == total
        assert words[("overlap", size)] > total
    # tiny fixed windows cut most answers; sentence chunks cut none
    by = study.set_index(["chunker", "size"])["hit"]
    assert by[("fixed", 8)] < 0.5 < by[("sentence", 8)]


def test_study_chunks_overlap_rule():
    class Doc:
        doc_id, title = "d", "D"
        text = " ".join(f"w{i}" for i in range(20))
    pieces = [c.text.split() for c in study_chunks([Doc], "overlap", 8)]
    assert pieces[0][-2:] == pieces[1][:2]  # overlap = 8 // 4 = 2
    with pytest.raises(ValueError, match="chunker"):
        study_chunks([Doc], "paragraph", 8)


def test_paired_difference_of_identical_lists_is_zero():
    a = [1.0, 0.0, 1.0, 1.0]
    assert paired_difference(a, a) == (0.0, 0.0, 0.0)
    mean, low, high = paired_difference([1, 1, 1, 0], [0, 1, 1, 0])
    assert mean == 0.25 and low <= mean <= high
    with pytest.raises(ValueError, match="same length"):
        paired_difference([1.0], [1.0, 0.0])


def _write_corpus(folder, questions=None, unanswerable=True):
    docs = [
        {"doc_id": "kettle", "title": "Kettle",
         "text": "The kettle boils in ninety seconds. Descale it monthly."},
        {"doc_id": "toaster", "title": "Toaster",
         "text": "The toaster has six browning levels. Empty the crumb tray."},
    ]
    if questions is None:
        questions = [
            {"qid": "a1", "question": "How fast does the kettle boil?",
             "answer": "ninety seconds", "doc_id": "kettle", "kind": "plain"},
            {"qid": "a2", "question": "How many browning levels?",
             "answer": "six browning levels", "doc_id": "toaster",
             "kind": "literal"},
        ]
    (folder / "documents.json").write_text(json.dumps(docs))
    (folder / "questions.json").write_text(json.dumps(questions))
    if unanswerable:
        (folder / "unanswerable.json").write_text(json.dumps([
            {"qid": "n1", "question": "What colour is the fridge?",
             "why": "no fridge page"}]))


def test_evaluate_files_on_a_small_corpus(tmp_path):
    _write_corpus(tmp_path)
    table = evaluate_files(tmp_path, modes=["bm25", "hybrid"], k=1)
    assert list(table["mode"]) == ["bm25", "hybrid"]
    assert list(table["hit"]) == [1.0, 1.0]
    assert list(table["n"]) == [2, 2]
    assert list(table["declined"]) == [1.0, 1.0]
    assert table.attrs == {"documents": 2, "chunks": 2, "questions": 2,
                           "unanswerable": 1}
    # the same files named one by one; no unanswerable file gives NaN
    paths = {"documents": tmp_path / "documents.json",
             "questions": tmp_path / "questions.json"}
    alone = evaluate_files(paths, modes=["bm25"], k=1)
    assert alone["hit"].tolist() == [1.0]
    assert math.isnan(alone.loc[0, "declined"])


def test_evaluate_files_names_the_file_and_field(tmp_path):
    _write_corpus(tmp_path, questions=[
        {"qid": "a1", "question": "How fast?", "answer": "ninety seconds",
         "doc_id": "kettle"}])
    with pytest.raises(ValueError, match=r"questions\.json.*'kind'"):
        evaluate_files(tmp_path)
    _write_corpus(tmp_path, questions=[
        {"qid": "a1", "question": "How fast?", "answer": "one hour",
         "doc_id": "kettle", "kind": "plain"}])
    with pytest.raises(ValueError, match=r"questions\.json.*'answer'"):
        evaluate_files(tmp_path)
    with pytest.raises(FileNotFoundError, match="nowhere"):
        evaluate_files(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="questions"):
        evaluate_files({"documents": tmp_path / "documents.json"})


def test_the_allotments_corpus_matches_its_readme():
    from pathlib import Path

    from ragkit.corpus import load_unanswerable

    folder = Path(__file__).resolve().parent.parent / "data" / "allotments"
    docs = load_documents(folder)
    questions = load_questions(folder)
    # the project's minimum (8 documents, 15 questions, 4 unanswerable),
    # written in paragraphs separated by blank lines
    assert len(docs) == 9 and len(questions) == 17
    assert len(load_unanswerable(folder)) == 5
    assert all("\n\n" in d.text for d in docs)
    kinds = [q.kind for q in questions]
    assert (kinds.count("paraphrase"), kinds.count("literal")) == (5, 3)
    lengths = [len(d.text.split()) for d in docs]
    assert (min(lengths), max(lengths)) == (74, 118)
    for q in questions:  # each answer sits on its own page only
        pages = [d.doc_id for d in docs if q.answer.lower() in d.text.lower()]
        assert pages == [q.doc_id], q.qid


# ------------------------------------------ the embedder= argument reaches in

from ragkit.dense import HashedEmbedder


class RecordingEmbedder:
    """The toy model behind our own embedder interface, noting each call."""

    def __init__(self):
        self.inner = HashedEmbedder()
        self.fitted, self.queries = [], []

    @property
    def dim(self):
        return self.inner.dim

    def fit(self, corpus):
        self.fitted.append(list(corpus))
        self.inner.fit(corpus)
        return self

    def embed(self, query):
        self.queries.append(query)
        return self.inner.embed(query)

    def embed_many(self, batch):
        return self.inner.embed_many(batch)


def test_study_hands_its_embedder_to_every_retriever(lab):
    docs, questions, _ = lab
    asked = questions[:4]
    stub = RecordingEmbedder()
    table = chunk_size_study(docs, asked, [8, 24], ["fixed"], k=3,
                             mode="dense", embedder=stub)
    # one fit per (chunker, size) cell, on that cell's chunk texts
    assert [len(t) for t in stub.fitted] == list(table["chunks"])
    assert [q.question for q in asked] * 2 == stub.queries
    # the stub wraps the toy model, so the figures are the default ones
    plain = chunk_size_study(docs, asked, [8, 24], ["fixed"], k=3,
                             mode="dense")
    assert table["hits"].tolist() == plain["hits"].tolist()


def test_evaluate_files_hands_its_embedder_to_the_retriever(tmp_path):
    _write_corpus(tmp_path)
    stub = RecordingEmbedder()
    table = evaluate_files(tmp_path, modes=["dense"], k=1, embedder=stub)
    assert len(stub.fitted) == 1 and len(stub.fitted[0]) == 2
    # two questions searched, then the unanswerable one for the decline rate
    assert stub.queries == ["How fast does the kettle boil?",
                            "How many browning levels?",
                            "What colour is the fridge?"]
    assert table["hit"].tolist() == [1.0]


# ------------------------------------------------ cluster bootstrap

from ragkit.evaluation import cluster_bootstrap_interval


def test_cluster_bootstrap_with_singleton_clusters_is_the_plain_one():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 2, 40).astype(float)
    for seed in (0, 5):
        assert cluster_bootstrap_interval(
            values, [f"c{i}" for i in range(40)], seed=seed) \
            == bootstrap_interval(values, seed=seed)


def test_cluster_bootstrap_matches_a_plain_loop_over_whole_clusters():
    # unequal clusters, labels in no sorted order, drawn by hand
    values = [1.0, 1.0, 0.0, 0.5, 1.0, 0.0, 0.0, 1.0, 1.0]
    clusters = ["p7", "p7", "p2", "p9", "p9", "p9", "p2", "p4", "p7"]
    members = {}
    for value, label in zip(values, clusters):
        members.setdefault(label, []).append(value)
    order = list(members)  # first appearance: p7, p2, p9, p4
    rng = np.random.default_rng(11)
    picks = rng.integers(0, len(order), size=(700, len(order)))
    means = []
    for row in picks:
        drawn = [v for i in row for v in members[order[i]]]
        means.append(sum(drawn) / len(drawn))
    want = np.quantile(means, [0.025, 0.975])
    got = cluster_bootstrap_interval(values, clusters, n_boot=700, seed=11)
    assert np.allclose(got, want, atol=1e-12)


def test_correlated_clusters_widen_the_interval():
    # 20 paragraphs of 10 questions each, all right or all wrong together:
    # really 20 draws, not 200, so the honest interval is wider
    values = np.repeat(np.random.default_rng(2).integers(0, 2, 20), 10)
    clusters = np.repeat(np.arange(20), 10).tolist()
    plain = np.subtract(*bootstrap_interval(values)[::-1])
    whole = np.subtract(*cluster_bootstrap_interval(values, clusters)[::-1])
    assert 2.5 < whole / plain < 3.8, (plain, whole)  # about sqrt(10)


@pytest.mark.parametrize(
    "kwargs, kind, name",
    [({"values": [], "clusters": []}, ValueError, "values"),
     ({"values": [1.0, float("inf")], "clusters": [1, 2]}, ValueError,
      "values"),
     ({"values": [1.0, 0.0], "clusters": "ab"}, TypeError, "clusters"),
     ({"values": [1.0, 0.0], "clusters": 3}, TypeError, "clusters"),
     ({"values": [1.0, 0.0], "clusters": [1]}, ValueError, "clusters"),
     ({"values": [1.0], "clusters": [1], "level": 0}, ValueError, "level"),
     ({"values": [1.0], "clusters": [1], "n_boot": 2.5}, ValueError,
      "n_boot")],
)
def test_cluster_bootstrap_names_a_bad_argument(kwargs, kind, name):
    with pytest.raises(kind, match=name):
        cluster_bootstrap_interval(**kwargs)


def test_paired_difference_by_cluster_keeps_each_page_whole():
    # two pages whose questions all gain together, one whose all lose: the
    # page-level interval must equal the cluster bootstrap of the differences,
    # and be wider than the one that treats 12 questions as 12 draws
    a = [1.0] * 4 + [1.0] * 4 + [0.0] * 4
    b = [0.0] * 4 + [0.0] * 4 + [1.0] * 4
    pages = ["d1"] * 4 + ["d2"] * 4 + ["d3"] * 4
    mean, low, high = paired_difference(a, b, seed=4, clusters=pages)
    diff = [x - y for x, y in zip(a, b)]
    assert mean == pytest.approx(1 / 3)
    assert (low, high) == cluster_bootstrap_interval(diff, pages, seed=4)
    _, q_low, q_high = paired_difference(a, b, seed=4)
    assert high - low > q_high - q_low
    with pytest.raises(ValueError, match="clusters"):
        paired_difference(a, b, clusters=pages[:-1])
