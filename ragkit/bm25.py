"""Okapi BM25 over a sparse term-frequency matrix.

For a query with distinct terms ``t`` and a text ``d``::

    score(d) = sum_t idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))
    idf(t)   = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))

where ``f`` is how often ``t`` occurs in ``d``, ``|d|`` is the number of
tokens of ``d``, ``avgdl`` the mean of ``|d|`` over the corpus, ``N`` the
number of texts and ``n_t`` how many of them contain ``t``. This IDF variant
stays positive even for a term found in every text. Terms repeated in the
query count once. Texts and queries go through :func:`ragkit.text.tokenize`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from .text import tokenize

__all__ = ["BM25Index", "bm25_idf", "check_ids"]


def check_ids(ids: Sequence[str] | None, n: int) -> list[str]:
    """Return ids for ``n`` items: ``"0"``, ``"1"``, ... or validated ``ids``."""
    if ids is None:
        return [str(i) for i in range(n)]
    ids = list(ids)
    if len(ids) != n:
        raise ValueError(f"ids must have one id per text (got {len(ids)} for {n})")
    if len(set(ids)) != n:
        raise ValueError("ids must be unique")
    return ids


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """The course's IDF for one term: ``ln(1 + (N - n + 0.5) / (n + 0.5))``.

    ``n_docs`` is N, the number of texts; ``doc_freq`` is n, how many of them
    hold the term (0 for a term no text holds). The twin of notebook 04's
    Part A; :class:`BM25Index` computes the same values for all terms at once.
    """
    for name, value in (("n_docs", n_docs), ("doc_freq", doc_freq)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an int (got {type(value).__name__})")
    if n_docs < 1:
        raise ValueError(f"n_docs must be at least 1 (got n_docs={n_docs})")
    if not 0 <= doc_freq <= n_docs:
        raise ValueError(
            f"doc_freq must be between 0 and n_docs (got doc_freq={doc_freq}, "
            f"n_docs={n_docs})"
        )
    return math.log(1.0 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def _check_k(k: object) -> None:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an int (got {type(k).__name__})")
    if k < 1:
        raise ValueError(f"k must be at least 1 (got k={k})")


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """Best ``k`` positive scores, high to low; ties keep corpus order."""
    _check_k(k)
    # a stable sort on -score keeps equal scores in their corpus order
    order = np.argsort(-scores, kind="stable")
    return [(ids[i], float(scores[i])) for i in order[:k] if scores[i] > 0]


class BM25Index:
    """BM25 over ``texts``; ``ids`` name the texts (default ``"0"``, ``"1"``...).

    Attributes: ``vocab`` (term -> column), ``tf`` (CSR matrix, texts x
    vocab, term counts), ``doc_len``, ``avgdl``, ``df`` and ``idf_values``
    (one entry per column).
    """

    def __init__(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> None:
        texts = list(texts)
        if not texts:
            raise ValueError("texts must hold at least one text (got an empty list)")
        if k1 < 0:
            raise ValueError(f"k1 must be at least 0 (got k1={k1})")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be between 0 and 1 (got b={b})")
        self.ids = check_ids(ids, len(texts))
        self.k1, self.b = float(k1), float(b)
        token_lists = [tokenize(t) for t in texts]
        # sorted vocabulary: the same corpus always gives the same columns
        terms = sorted({t for tokens in token_lists for t in tokens})
        self.vocab = {t: j for j, t in enumerate(terms)}
        rows, cols = [], []
        for i, tokens in enumerate(token_lists):
            rows.extend([i] * len(tokens))
            cols.extend(self.vocab[t] for t in tokens)
        shape = (len(texts), len(self.vocab))
        data = np.ones(len(rows), dtype=np.float64)
        # duplicate (row, col) pairs are summed, which turns ones into counts
        self.tf = sparse.csr_matrix((data, (rows, cols)), shape=shape)
        self.tf.sum_duplicates()
        self.n_docs = len(texts)
        self.doc_len = np.array([len(d) for d in token_lists], dtype=np.float64)
        self.avgdl = float(self.doc_len.mean())
        self.df = np.bincount(self.tf.indices, minlength=len(self.vocab))
        self.idf_values = self._idf_from_df(self.df)

    def _idf_from_df(self, df: np.ndarray) -> np.ndarray:
        return np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))

    def idf(self, term: str) -> float:
        """IDF of one token (as ``tokenize`` writes it); unseen terms get n_t = 0."""
        j = self.vocab.get(term)
        df = 0 if j is None else int(self.df[j])
        return float(self._idf_from_df(np.float64(df)))

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every text for ``query``, in corpus order."""
        cols = sorted({self.vocab[t] for t in tokenize(query) if t in self.vocab})
        if not cols:
            return np.zeros(self.n_docs)
        f = self.tf[:, cols].toarray()
        # an all-empty corpus has avgdl 0; its texts have no terms to score anyway
        length_norm = 1 - self.b + self.b * self.doc_len / (self.avgdl or 1.0)
        denom = f + self.k1 * length_norm[:, None]
        # with k1 = 0 an absent term would give 0/0; absent terms add nothing
        gain = np.divide(f * (self.k1 + 1), denom, out=np.zeros_like(f), where=f > 0)
        return gain @ self.idf_values[cols]

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        """Top ``k`` ``(id, score)`` pairs with score > 0, best first."""
        _check_k(k)
        return top_k(self.scores(query), self.ids, k)

    def __len__(self) -> int:
        return self.n_docs
