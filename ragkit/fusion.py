"""Reciprocal Rank Fusion: merge ranked lists using ranks only."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rrf"]


def rrf(
    rankings: Sequence[Sequence[str]], k: float = 60, top: int | None = None
) -> list[tuple[str, float]]:
    """Fuse ranked id lists (best first) with Reciprocal Rank Fusion.

    Each list that holds ``d`` at position ``rank`` (1 for its best id) adds
    ``1 / (k + rank)`` to ``d``'s fused score; a list without ``d`` adds 0. The result is sorted by
    score, high to low, and equal scores by id in ascending order; ``top``
    keeps only the first ``top`` pairs (``None`` keeps all). ``rrf([])`` is
    ``[]``. Raises ``ValueError`` for ``k < 0``, ``top < 0``, or an id that
    appears twice in one list.
    """
    if k < 0:
        raise ValueError(f"k must be at least 0 (got k={k})")
    if top is not None and top < 0:
        raise ValueError(f"top must be None or at least 0 (got top={top})")
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        if isinstance(ranking, str):
            # a bare string would be read letter by letter, which is never meant
            raise TypeError(f"rankings[{n}] must be a list of ids, not a str")
        seen: set[str] = set()
        for rank, doc in enumerate(ranking, start=1):
            if doc in seen:
                raise ValueError(f"rankings[{n}] lists id {doc!r} more than once")
            seen.add(doc)
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    fused = sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))
    return fused if top is None else fused[:top]
