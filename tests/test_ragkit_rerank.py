"""ragkit.rerank: token vectors, MaxSim, its batched form, and the reranker."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from ragkit.chunking import chunk_documents
from ragkit.corpus import load_documents, load_questions
from ragkit.dense import HashedEmbedder
from ragkit.metrics import first_relevant_rank, relevant_chunk_ids
from ragkit.rerank import (
    LateInteractionReranker,
    maxsim,
    maxsim_many,
    rerank,
    token_vectors,
)
from ragkit.retrieval import MODES, Retriever
from ragkit.text import tokenize


def loop_maxsim(query, doc):
    """MaxSim with three nested loops over plain floats, no numpy."""
    if len(query) == 0 or len(doc) == 0:
        return 0.0
    total = 0.0
    for q_row in query:
        best = None
        for d_row in doc:
            dot = 0.0
            for a, b in zip(q_row, d_row):
                dot += a * b
            best = dot if best is None else max(best, dot)
        total += best
    return total


def test_token_vectors_have_one_unit_row_per_token():
    """Repeats keep their rows; stopwords give none; every row has length 1."""
    text = "The lid, the lid and the beep"
    rows = token_vectors(text)
    assert rows.shape == (len(tokenize(text)), 64) == (3, 64)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0)
    assert np.array_equal(rows[0], rows[1])
    assert token_vectors("the of and").shape == (0, 64)
    assert token_vectors("", dim=8).shape == (0, 8)


def test_a_single_token_row_is_the_unweighted_text_embedding():
    """One token, no IDF: the row equals HashedEmbedder's vector of that word."""
    for word, dim in [("spoilboard", 64), ("LC-0417", 16), ("quit", 128)]:
        row = token_vectors(word, dim)[0]
        assert np.allclose(row, HashedEmbedder(dim).embed(word), atol=1e-12)


def test_synonyms_share_a_row():
    """quit and cancel map to one concept, so their rows are identical."""
    assert np.array_equal(token_vectors("quit"), token_vectors("cancel"))


def test_self_maxsim_counts_the_query_tokens():
    """Every token finds itself with dot product 1, so the sum is the count."""
    for text in ["spoilboard level technician", "lid lid beep", "LC-0417"]:
        rows = token_vectors(text)
        assert maxsim(rows, rows) == pytest.approx(len(tokenize(text)))


def test_covering_more_query_tokens_scores_higher():
    """Two of three query words present beats one of three."""
    query = token_vectors("padlock tag timber")
    two = token_vectors("padlock tag wall")
    one = token_vectors("padlock chiller coolant")
    assert maxsim(query, two) > maxsim(query, one)


def test_maxsim_by_hand_and_empty_sides():
    """Best matches 1.0 and 0.8 add to 1.8; no rows on either side is 0.0."""
    query = [[1.0, 0.0], [0.0, 1.0]]
    doc = [[0.6, 0.8], [1.0, 0.0]]
    assert maxsim(query, doc) == pytest.approx(1.8)
    assert maxsim(query, np.zeros((0, 2))) == 0.0
    assert maxsim(np.zeros((0, 2)), doc) == 0.0
    assert maxsim(query, []) == 0.0
    # the best match may be negative: it is kept, not clipped at zero
    assert maxsim([[1.0, 0.0]], [[-1.0, 0.0], [-0.5, 0.0]]) == pytest.approx(-0.5)


MATRIX = st.integers(0, 5).flatmap(
    lambda rows: hnp.arrays(
        np.float64, (rows, 4), elements=st.floats(-3, 3, allow_nan=False)
    )
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(query=MATRIX, doc=MATRIX)
def test_numpy_maxsim_equals_the_triple_loop(query, doc):
    """Random real matrices, negatives included, any row counts."""
    assert maxsim(query, doc) == pytest.approx(
        loop_maxsim(query.tolist(), doc.tolist()), abs=1e-9
    )


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(query=MATRIX, docs=st.lists(MATRIX, max_size=6))
def test_batched_scores_equal_one_by_one(query, docs):
    """maxsim_many stacks the passages; each score is still its own MaxSim."""
    batched = maxsim_many(query, docs)
    assert batched.shape == (len(docs),)
    single = [maxsim(query, d) for d in docs]
    assert batched.tolist() == pytest.approx(single, abs=1e-9)


def test_rerank_returns_exactly_the_candidates_reordered():
    """Same ids out as in, best MaxSim first, equal scores in id order."""
    ids = ["z", "b", "a", "m"]
    texts = ["chiller coolant pump", "padlock on the tag", "padlock on the tag",
             "the locker tag needs a padlock and your number"]
    out = rerank("padlock tag number", ids, texts)
    assert sorted(i for i, _ in out) == sorted(ids)
    assert [i for i, _ in out] == ["m", "a", "b", "z"]
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert rerank("padlock", [], []) == []


def test_reranker_caches_the_passages_and_scores_in_given_order():
    """Token vectors are built once; scores() keeps the order asked for."""
    reranker = LateInteractionReranker(["padlock tag", "chiller"], ["p", "c"])
    assert set(reranker.vectors) == {"p", "c"}
    assert reranker.vectors["p"].shape == (2, 64)
    got = reranker.scores("padlock", ["c", "p"])
    assert got[1] == pytest.approx(1.0) and got[0] < got[1]


def test_bad_input_names_the_argument():
    """TypeError for a wrong type, ValueError for a bad value, named."""
    with pytest.raises(TypeError, match="text"):
        token_vectors(42)
    with pytest.raises(ValueError, match="dim"):
        token_vectors("lid", 0)
    with pytest.raises(TypeError, match="dim"):
        token_vectors("lid", 2.5)
    with pytest.raises(ValueError, match="doc_vecs"):
        maxsim(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match="query_vecs"):
        maxsim(np.ones(3), np.ones((2, 3)))
    with pytest.raises(TypeError, match="doc_vecs"):
        maxsim(np.ones((2, 3)), "lid")
    with pytest.raises(ValueError, match=r"docs\[1\]"):
        maxsim_many(np.ones((1, 3)), [np.ones((1, 3)), np.ones((1, 2))])
    with pytest.raises(ValueError, match="ids"):
        rerank("lid", ["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="ids"):
        rerank("lid", ["a"], ["x", "y"])
    reranker = LateInteractionReranker(["x"], ["a"])
    with pytest.raises(ValueError, match="ids"):
        reranker.rerank("lid", ["b"])
    with pytest.raises(TypeError, match="ids"):
        reranker.rerank("lid", "a")


@pytest.fixture(scope="module")
def help_centre():
    chunks = chunk_documents(load_documents(), "sentence", size=25)
    return chunks, Retriever(chunks), load_questions()


def test_retriever_rerank_mode_reorders_the_hybrid_shortlist(help_centre):
    """hybrid+rerank keeps the fused top `depth` and only changes their order."""
    chunks, retriever, questions = help_centre
    assert MODES[-1] == "hybrid+rerank"
    for q in questions:
        fused = retriever.search(q.question, 10, "hybrid", depth=10)
        reranked = retriever.search(q.question, 10, "hybrid+rerank", depth=10)
        assert sorted(reranked) == sorted(fused)
        assert retriever.search(q.question, 3, "hybrid+rerank") == reranked[:3]


def test_retriever_rerank_mode_on_the_help_centre(help_centre):
    """The literal code keeps rank 1; of the lab's first 12 questions, only
    q04 and q08 see the reranker demote their gold chunk."""
    chunks, retriever, questions = help_centre
    ranks = {
        q.qid: first_relevant_rank(
            retriever.search(q.question, 10, "hybrid+rerank"),
            relevant_chunk_ids(chunks, q.answer),
        )
        for q in questions
        if int(q.qid[1:]) <= 12
    }
    assert len(ranks) == 12
    assert ranks["q01"] == 1
    assert {qid for qid, rank in ranks.items() if rank != 1} == {"q04", "q08"}
