"""Retrieval metrics with binary relevance.

``ranked`` is a list of distinct ids, best first; ``relevant`` is any
collection of ids (duplicates count once). With no relevant ids every metric
is 0.0, since there is nothing to find.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence

from .checks import check_int

__all__ = [
    "first_relevant_rank",
    "hit_at_k",
    "mrr",
    "ndcg_at_k",
    "recall_at_k",
    "relevant_chunk_ids",
]


def _check(ranked: Sequence[str], k: object) -> None:
    if k is not None:
        check_int(k, "k")
    seen: set[str] = set()
    for doc in ranked:
        if doc in seen:
            raise ValueError(f"ranked must not repeat an id (got {doc!r} twice)")
        seen.add(doc)


def hit_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """1.0 when any of the first ``k`` ids is relevant, else 0.0."""
    _check(ranked, k)
    rel = set(relevant)
    return 1.0 if any(doc in rel for doc in ranked[:k]) else 0.0


def recall_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Share of the relevant ids found among the first ``k``."""
    _check(ranked, k)
    rel = set(relevant)
    if not rel:
        return 0.0
    return sum(doc in rel for doc in ranked[:k]) / len(rel)


def first_relevant_rank(
    ranked: Sequence[str], relevant: Collection[str]
) -> int | None:
    """Rank (from 1) of the first relevant id, or ``None`` when there is none."""
    rel = set(relevant)
    for rank, doc in enumerate(ranked, start=1):
        if doc in rel:
            return rank
    return None


def mrr(
    ranked: Sequence[str], relevant: Collection[str], k: int | None = None
) -> float:
    """Reciprocal rank of the first relevant id within the first ``k`` (all if None).

    Averaged over questions this is the mean reciprocal rank; for one
    question it is ``1/rank``, or 0.0 when nothing relevant is in reach.
    """
    _check(ranked, k)
    window = ranked if k is None else ranked[:k]
    rank = first_relevant_rank(window, relevant)
    return 0.0 if rank is None else 1.0 / rank


def ndcg_at_k(ranked: Sequence[str], relevant: Collection[str], k: int) -> float:
    """Normalised discounted cumulative gain at ``k``, binary relevance.

    ``DCG = sum of 1 / log2(rank + 1)`` over relevant ids in the first ``k``;
    the ideal DCG puts ``min(len(relevant), k)`` relevant ids at ranks 1, 2, ...
    """
    _check(ranked, k)
    rel = set(relevant)
    if not rel:
        return 0.0
    dcg = sum(
        1.0 / math.log2(rank + 1)
        for rank, doc in enumerate(ranked[:k], start=1)
        if doc in rel
    )
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(rel), k) + 1))
    return dcg / ideal


def relevant_chunk_ids(chunks: Iterable, answer: str) -> list[str]:
    """Ids of the chunks whose ``text`` contains ``answer``, ignoring case.

    This is the lab's gold label: a chunk is relevant when a reader could
    quote the whole answer from it. The context note is not searched.
    """
    if not isinstance(answer, str):
        raise TypeError(f"answer must be a str (got {type(answer).__name__})")
    if not answer.strip():
        raise ValueError("answer must not be empty (it would match every chunk)")
    needle = answer.lower()
    return [c.chunk_id for c in chunks if needle in c.text.lower()]
