"""Late interaction: per-token vectors scored with MaxSim, and a reranker.

A ColBERT-style model keeps one vector per token instead of one per text and
scores a query against a passage with MaxSim: every query token takes the
dot product of its best-matching passage token, and these best matches are
added up. This module is the toy version used by the course, with no neural
network: a token's vector is built from hashed features exactly as
:class:`ragkit.dense.HashedEmbedder` builds a text's vector, but for one token
at a time and without IDF weights.

Recipe of :func:`token_vectors` (notebook 05 has students re-write it):

1. for every token of ``tokenize(text)``, repeats kept, take
   ``c = concept(token)`` and start a row of ``dim`` zeros;
2. add ``WORD_WEIGHT * sign`` at ``index`` for the feature ``"w:" + c``,
   where ``index, sign = feature_bucket(feature, dim)``;
3. add ``TRIGRAM_WEIGHT * sign`` for the feature ``"g:" + g`` of every
   trigram ``g`` in ``trigrams(c)`` (repeats included);
4. divide the row by its Euclidean length (a zero row stays zero).

MaxSim of ``Q`` (``m x dim``) against ``D`` (``n x dim``) is
``(Q @ D.T).max(axis=1).sum()``, and 0.0 when either has no rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache

import numpy as np

from .bm25 import check_ids
from .checks import check_int
from .dense import TRIGRAM_WEIGHT, WORD_WEIGHT, feature_bucket, trigrams
from .text import concept, tokenize

__all__ = [
    "LateInteractionReranker",
    "maxsim",
    "maxsim_many",
    "rerank",
    "rerank_vectors",
    "token_vectors",
]


@lru_cache(maxsize=4096)
def _concept_row(word: str, dim: int) -> tuple[float, ...]:
    """Unit row of one concept word; cached, as a corpus repeats its words."""
    row = np.zeros(dim)
    features = [("w:" + word, WORD_WEIGHT)]
    features += [("g:" + gram, TRIGRAM_WEIGHT) for gram in trigrams(word)]
    for feature, weight in features:
        slot, sign = feature_bucket(feature, dim)
        row[slot] += sign * weight
    norm = np.linalg.norm(row)
    # a tuple keeps the cached value immutable; callers get fresh arrays
    return tuple(row / norm if norm > 0 else row)


def token_vectors(text: str, dim: int = 64) -> np.ndarray:
    """One unit row per token of ``text`` (see the module doc), ``(n, dim)``.

    A text with no tokens (empty, or only stopwords) gives shape ``(0, dim)``.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str (got {type(text).__name__})")
    check_int(dim, "dim")
    rows = [_concept_row(concept(token), dim) for token in tokenize(text)]
    if not rows:
        return np.zeros((0, dim))
    return np.array(rows, dtype=float)


def _as_matrix(value: object, name: str) -> np.ndarray:
    """``value`` as a 2-D float array, or a TypeError/ValueError naming it."""
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a 2-D array of numbers, not a str")
    try:
        matrix = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a 2-D array of numbers") from None
    if matrix.ndim == 1 and matrix.size == 0:
        # a bare [] is a text with no tokens; its width is unknown, not wrong
        return np.zeros((0, 0))
    if matrix.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D, one row per token (got {matrix.ndim}-D)"
        )
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} must hold finite numbers only")
    return matrix


def _check_widths(query: np.ndarray, doc: np.ndarray, doc_name: str) -> None:
    if query.shape == (0, 0) or doc.shape == (0, 0):
        return
    if query.shape[1] != doc.shape[1]:
        raise ValueError(
            f"query_vecs and {doc_name} must have the same number of columns "
            f"(got {query.shape[1]} and {doc.shape[1]})"
        )


def maxsim(query_vecs: object, doc_vecs: object) -> float:
    """Sum over query rows of the best dot product with any document row.

    Both arguments are 2-D (one row per token, same number of columns);
    lists of lists are accepted. 0.0 when either side has no rows.
    """
    query = _as_matrix(query_vecs, "query_vecs")
    doc = _as_matrix(doc_vecs, "doc_vecs")
    _check_widths(query, doc, "doc_vecs")
    if len(query) == 0 or len(doc) == 0:
        return 0.0
    # one product gives every (query token, passage token) pair at once
    return float((query @ doc.T).max(axis=1).sum())


def maxsim_many(query_vecs: object, docs: Sequence[object]) -> np.ndarray:
    """MaxSim of one query against each of ``docs``, as a float array.

    All passages' rows are stacked, so a single matrix product scores every
    candidate; each passage then takes its own row maxima. An empty passage
    scores 0.0, as in :func:`maxsim`.
    """
    query = _as_matrix(query_vecs, "query_vecs")
    if isinstance(docs, (str, bytes)) or not isinstance(docs, Sequence):
        raise TypeError("docs must be a list of 2-D arrays, one per passage")
    mats = [_as_matrix(d, f"docs[{n}]") for n, d in enumerate(docs)]
    for n, mat in enumerate(mats):
        _check_widths(query, mat, f"docs[{n}]")
    scores = np.zeros(len(mats))
    filled = [n for n, mat in enumerate(mats) if len(mat)]
    if len(query) == 0 or not filled:
        return scores
    stacked = np.vstack([mats[n] for n in filled])
    sims = query @ stacked.T  # (query tokens) x (all passage tokens)
    starts = np.cumsum([0] + [len(mats[n]) for n in filled[:-1]])
    # reduceat takes the max over each passage's block of columns
    scores[filled] = np.maximum.reduceat(sims, starts, axis=1).sum(axis=0)
    return scores


def _ordered(pairs: list[tuple[str, float]]) -> list[tuple[str, float]]:
    return sorted(pairs, key=lambda pair: (-pair[1], pair[0]))


class LateInteractionReranker:
    """Token vectors of every passage, computed once, and MaxSim reranking.

    ColBERT stores its passage token vectors offline in the same way, so a
    query only needs its own tokens encoded at search time.
    """

    def __init__(
        self, texts: Sequence[str], ids: Sequence[str] | None = None, dim: int = 64
    ) -> None:
        if isinstance(texts, str):
            raise TypeError("texts must be a list of str, not a single str")
        texts = list(texts)
        check_int(dim, "dim")
        self.dim = dim
        self.ids = check_ids(ids, len(texts))
        # computed once, as ColBERT stores passage token vectors offline
        self.vectors = {
            chunk_id: token_vectors(text, dim)
            for chunk_id, text in zip(self.ids, texts)
        }

    def _candidates(self, ids: object) -> list[str]:
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            raise TypeError("ids must be a list of ids (got a single value)")
        seen: set[str] = set()
        for chunk_id in ids:
            if chunk_id not in self.vectors:
                raise ValueError(f"ids holds {chunk_id!r}, which is not indexed")
            if chunk_id in seen:
                raise ValueError(f"ids lists {chunk_id!r} more than once")
            seen.add(chunk_id)
        return list(ids)

    def scores(self, query: str, ids: Sequence[str]) -> np.ndarray:
        """MaxSim of ``query`` against each of ``ids``, in the given order."""
        ids = self._candidates(ids)
        query_vecs = token_vectors(query, self.dim)
        return maxsim_many(query_vecs, [self.vectors[i] for i in ids])

    def rerank(self, query: str, ids: Sequence[str]) -> list[tuple[str, float]]:
        """``(id, MaxSim)`` for exactly ``ids``, high to low, ties by id."""
        ids = self._candidates(ids)
        scored = self.scores(query, ids)
        return _ordered([(i, float(s)) for i, s in zip(ids, scored)])


def rerank_vectors(
    query_vecs: object, ids: Sequence[str], vectors: Mapping[str, object]
) -> list[tuple[str, float]]:
    """Reorder ``ids`` by MaxSim of ``query_vecs`` against stored vectors.

    ``vectors`` maps every id to its passage's rows, computed elsewhere (a
    trained encoder's token vectors, say). Returns ``(id, score)`` for
    exactly ``ids``, high to low, equal scores in ascending id order. With a
    single row on each side MaxSim is one dot product, so the same call
    reranks with a bi-encoder's sentence vectors. Raises ``ValueError``
    naming ``ids`` for a repeated id or one missing from ``vectors``.
    """
    if isinstance(ids, str) or not isinstance(ids, Sequence):
        raise TypeError("ids must be a list of ids (got a single value)")
    if not isinstance(vectors, Mapping):
        raise TypeError(
            f"vectors must map ids to arrays (got {type(vectors).__name__})")
    if len(set(ids)) != len(ids):
        raise ValueError("ids must not repeat an id")
    missing = [i for i in ids if i not in vectors]
    if missing:
        raise ValueError(f"ids holds {missing[0]!r}, which vectors lacks")
    scores = maxsim_many(query_vecs, [vectors[i] for i in ids])
    return _ordered([(i, float(s)) for i, s in zip(ids, scores)])


def rerank(
    query: str, ids: Sequence[str], texts: Sequence[str], dim: int = 64
) -> list[tuple[str, float]]:
    """Reorder ``ids`` (with their ``texts``) by MaxSim against ``query``.

    Returns ``(id, score)`` for exactly the given ids, high to low, equal
    scores in ascending id order. Raises ``ValueError`` naming ``ids`` for a
    repeated id or a length that differs from ``texts``.
    """
    if isinstance(ids, str) or isinstance(texts, str):
        raise TypeError("ids and texts must be lists, not a single str")
    ids, texts = list(ids), list(texts)
    if len(ids) != len(texts):
        raise ValueError(
            f"ids must have one id per text (got {len(ids)} ids, {len(texts)} texts)"
        )
    if len(set(ids)) != len(ids):
        raise ValueError("ids must not repeat an id")
    return LateInteractionReranker(texts, ids, dim).rerank(query, ids)
