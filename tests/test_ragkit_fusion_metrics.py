"""ragkit.fusion and ragkit.metrics on small hand-made rankings."""

import math

import pytest

from ragkit.chunking import Chunk
from ragkit.fusion import rrf
from ragkit.metrics import (
    first_relevant_rank,
    hit_at_k,
    mrr,
    ndcg_at_k,
    recall_at_k,
    relevant_chunk_ids,
)


def test_rrf_formula():
    """k=60: rank 1 is worth 1/61 and rank 2 is worth 1/62."""
    fused = rrf([["a", "b"], ["b", "c"]])
    scores = dict(fused)
    assert scores["a"] == pytest.approx(1 / 61)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 62)
    assert [d for d, _ in fused] == ["b", "a", "c"]


def test_rrf_rewards_agreement():
    """'m' is 2nd in both lists: 2/62 = 0.0323 beats one 1st place, 1/61 = 0.0164."""
    assert rrf([["x", "m", "y"], ["z", "m", "w"]])[0][0] == "m"


def test_rrf_single_list_empty_input_and_ties():
    """One list keeps its order; nothing in, nothing out; equal scores by id."""
    assert [d for d, _ in rrf([["c", "a", "b"]])] == ["c", "a", "b"]
    assert rrf([]) == []
    assert rrf([[], []]) == []
    assert rrf([["b"], ["a"]]) == [("a", 1 / 61), ("b", 1 / 61)]


def test_rrf_k_and_top():
    """k=0 gives 1/rank; top keeps the first pairs only."""
    assert rrf([["a", "b"]], k=0) == [("a", 1.0), ("b", 0.5)]
    assert len(rrf([["a", "b", "c"]], top=2)) == 2


def test_rrf_bad_input():
    """Negative k, a repeated id, or a bare string are refused."""
    with pytest.raises(ValueError, match=r"k must be at least 0 \(got k=-1\)"):
        rrf([["a"]], k=-1)
    with pytest.raises(ValueError, match="more than once"):
        rrf([["a", "b", "a"]])
    with pytest.raises(TypeError, match="rankings"):
        rrf(["abc"])


RANKED = ["d3", "d7", "d1", "d2"]
RELEVANT = {"d1", "d2"}


def test_metrics_on_the_hand_example():
    """Relevant docs sit at ranks 3 and 4.

    hit@2 = 0, hit@3 = 1; recall@3 = 1/2, recall@4 = 2/2; MRR = 1/3;
    nDCG@4 = (1/log2 4 + 1/log2 5) / (1 + 1/log2 3) = 0.9307 / 1.6309 = 0.5706.
    """
    assert hit_at_k(RANKED, RELEVANT, 2) == 0.0
    assert hit_at_k(RANKED, RELEVANT, 3) == 1.0
    assert recall_at_k(RANKED, RELEVANT, 3) == 0.5
    assert recall_at_k(RANKED, RELEVANT, 4) == 1.0
    assert mrr(RANKED, RELEVANT) == pytest.approx(1 / 3)
    assert mrr(RANKED, RELEVANT, k=2) == 0.0
    expected = (1 / math.log2(4) + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg_at_k(RANKED, RELEVANT, 4) == pytest.approx(expected)
    assert ndcg_at_k(RANKED, RELEVANT, 4) == pytest.approx(0.5706, abs=1e-4)
    assert first_relevant_rank(RANKED, RELEVANT) == 3


def test_ndcg_ideal_uses_min_of_relevant_and_k():
    """Three relevant, k=2, both top slots relevant: DCG equals the ideal, so 1."""
    assert ndcg_at_k(["a", "b", "x"], {"a", "b", "c"}, 2) == pytest.approx(1.0)
    # one relevant at rank 2 of 2: (1/log2 3) / 1
    assert ndcg_at_k(["x", "a"], {"a"}, 2) == pytest.approx(1 / math.log2(3))


def test_empty_relevant_gives_zero_everywhere():
    """Nothing to find scores 0.0, never a division error."""
    assert hit_at_k(RANKED, set(), 3) == 0.0
    assert recall_at_k(RANKED, set(), 3) == 0.0
    assert mrr(RANKED, set()) == 0.0
    assert ndcg_at_k(RANKED, set(), 3) == 0.0
    assert first_relevant_rank(RANKED, set()) is None


def test_metric_argument_errors():
    """k below 1 and repeated ids in the ranking are refused."""
    with pytest.raises(ValueError, match="k must be at least 1"):
        hit_at_k(RANKED, RELEVANT, 0)
    with pytest.raises(ValueError, match="repeat"):
        recall_at_k(["a", "a"], {"a"}, 2)
    with pytest.raises(TypeError, match="k must be an int"):
        ndcg_at_k(RANKED, RELEVANT, 2.0)


def test_relevant_chunk_ids_ignores_case_and_context():
    """Containment in chunk.text, case-insensitive; the context note is not read."""
    chunks = [
        Chunk("a#0", "a", "Lockers cost Twelve Pounds a quarter."),
        Chunk("b#0", "b", "Nothing here.", context="twelve pounds a quarter"),
    ]
    assert relevant_chunk_ids(chunks, "twelve pounds a QUARTER") == ["a#0"]
    assert relevant_chunk_ids(chunks, "lathe") == []
    with pytest.raises(ValueError, match="answer"):
        relevant_chunk_ids(chunks, "  ")
