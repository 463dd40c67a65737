"""Okapi BM25 over sparse matrices, scored with precomputed per-term columns.

For a query with distinct terms ``t`` and a text ``d``::

    score(d) = sum_t idf(t) * f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))
    idf(t)   = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))

where ``f`` is how often ``t`` occurs in ``d``, ``|d|`` is the number of
tokens of ``d``, ``avgdl`` the mean of ``|d|`` over the corpus, ``N`` the
number of texts and ``n_t`` how many of them contain ``t``. This IDF variant
stays positive even for a term found in every text. Terms repeated in the
query count once. This is the variant bm25s calls ``method="atire"`` with
``idf_method="lucene"``.

Texts and queries go through :func:`ragkit.text.tokenize` unless the index
is given another ``tokenizer``; a text or query given as a list of tokens is
used as it is, so any tokeniser's output can be compared like for like.

Every term of a text gets its whole contribution to the score computed once,
when the index is built: column ``t`` of the sparse CSC matrix ``weights``
holds ``idf(t) * f * (k1 + 1) / (f + k1 * ...)`` for the texts that hold
``t``. A query then only adds up the columns of its terms, which costs time
in proportion to how many texts hold them, not to the size of the corpus.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np
from scipy import sparse

from ._checks import check_int
from .text import tokenize

__all__ = ["BM25Index", "Tokenizer", "bm25_idf", "check_ids"]

# a text goes in, its tokens (a list of str) come out
Tokenizer = Callable[[str], list]


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


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """Best ``k`` positive scores, high to low; ties keep corpus order.

    Gives what a stable sort of all ``-scores`` cut to ``k`` would give,
    without sorting the whole corpus: a partial sort finds the k-th best
    value, and only the texts that reach it are sorted.
    """
    check_int(k, "k")
    n = len(scores)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        # below a positive k-th value nothing can make the cut; with a k-th
        # value <= 0 fewer than k texts score > 0, and only those are kept
        keep = scores >= kth if kth > 0 else scores > 0
        cand = np.flatnonzero(keep)
    else:
        cand = np.arange(n)
    # cand is in corpus order, so a stable sort on -score breaks ties by it
    order = cand[np.argsort(-scores[cand], kind="stable")][:k]
    return [(ids[i], float(scores[i])) for i in order if scores[i] > 0]


class BM25Index:
    """BM25 over ``texts``; ``ids`` name the texts (default ``"0"``, ``"1"``...).

    Each text (and later each query) is either a str, split into tokens by
    ``tokenizer`` (default :func:`ragkit.text.tokenize`), or a list of
    tokens, taken as it is. With ``tokenizer=None`` every text and query
    must be a list of tokens.

    Attributes: ``vocab`` (term -> column, terms sorted), ``tf`` (CSR
    matrix, texts x vocab, term counts), ``weights`` (CSC matrix of the same
    shape: each stored entry is that term's share of that text's score),
    ``doc_len``, ``avgdl``, ``df`` and ``idf_values`` (one entry per column).
    """

    def __init__(
        self,
        texts: Sequence[str | Sequence[str]],
        ids: Sequence[str] | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        tokenizer: Tokenizer | None = tokenize,
    ) -> None:
        if isinstance(texts, str):
            raise TypeError("texts must be a list of texts, not one str")
        texts = list(texts)
        if not texts:
            raise ValueError("texts must hold at least one text (got an empty list)")
        if k1 < 0:
            raise ValueError(f"k1 must be at least 0 (got k1={k1})")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be between 0 and 1 (got b={b})")
        if tokenizer is not None and not callable(tokenizer):
            raise TypeError(
                "tokenizer must be a function from str to a list of tokens, "
                f"or None (got {type(tokenizer).__name__})"
            )
        self.tokenizer = tokenizer
        self.ids = check_ids(ids, len(texts))
        self.k1, self.b = float(k1), float(b)
        token_lists = [self._tokens(t, f"texts[{i}]") for i, t in enumerate(texts)]
        self.n_docs = len(token_lists)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=self.n_docs)
        # sorted vocabulary: the same corpus always gives the same columns
        terms = sorted(dict.fromkeys(chain.from_iterable(token_lists)))
        self.vocab = {t: j for j, t in enumerate(terms)}
        n_terms = len(terms)
        cols = np.fromiter(
            map(self.vocab.__getitem__, chain.from_iterable(token_lists)),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
        rows = np.repeat(np.arange(self.n_docs, dtype=np.int64), lengths)
        # one key per (text, term) pair; counting equal keys gives the counts
        pairs, counts = np.unique(rows * n_terms + cols, return_counts=True)
        pair_rows, pair_cols = np.divmod(pairs, max(n_terms, 1))
        indptr = np.zeros(self.n_docs + 1, dtype=np.int64)
        np.cumsum(np.bincount(pair_rows, minlength=self.n_docs), out=indptr[1:])
        shape = (self.n_docs, n_terms)
        f = counts.astype(np.float64)
        self.tf = sparse.csr_matrix((f, pair_cols, indptr), shape=shape)
        self.doc_len = lengths.astype(np.float64)
        self.avgdl = float(self.doc_len.mean())
        self.df = np.bincount(pair_cols, minlength=n_terms)
        self.idf_values = self._idf_from_df(self.df)
        # an all-empty corpus has avgdl 0; its texts have no terms to score anyway
        length_norm = 1 - self.b + self.b * self.doc_len / (self.avgdl or 1.0)
        # only stored entries (f >= 1) are computed, so k1 = 0 gives no 0/0
        gain = f * (self.k1 + 1) / (f + self.k1 * length_norm[pair_rows])
        share = self.idf_values[pair_cols] * gain
        # regroup the entries by term; stable, so texts stay in corpus order
        by_term = np.argsort(pair_cols, kind="stable")
        col_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(self.df, out=col_ptr[1:])
        self.weights = sparse.csc_matrix(
            (share[by_term], pair_rows[by_term], col_ptr), shape=shape
        )
        # the three arrays of the matrix, kept apart for the query loop
        self._w_data = self.weights.data
        self._w_rows = self.weights.indices
        self._w_ptr = self.weights.indptr

    def _tokens(self, text: object, name: str) -> list:
        if isinstance(text, str):
            if self.tokenizer is None:
                raise TypeError(
                    f"{name} is a str but tokenizer is None: give a list of "
                    "tokens, or a tokenizer"
                )
            tokens = self.tokenizer(text)
            if isinstance(tokens, str) or not isinstance(tokens, (list, tuple)):
                raise TypeError(
                    "tokenizer must return a list of tokens "
                    f"(got {type(tokens).__name__} for {name})"
                )
            return list(tokens)
        if isinstance(text, (list, tuple)):
            return list(text)
        raise TypeError(
            f"{name} must be a str or a list of tokens (got {type(text).__name__})"
        )

    def _idf_from_df(self, df: np.ndarray) -> np.ndarray:
        return np.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))

    def idf(self, term: str) -> float:
        """IDF of one token (as the tokenizer writes it); unseen terms get n_t = 0."""
        j = self.vocab.get(term)
        df = 0 if j is None else int(self.df[j])
        return float(self._idf_from_df(np.float64(df)))

    def query_columns(self, query: str | Sequence[str]) -> list[int]:
        """Sorted columns of the query's distinct terms that the corpus holds."""
        tokens = self._tokens(query, "query")
        return sorted({self.vocab[t] for t in tokens if t in self.vocab})

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every text for ``query``, in corpus order."""
        cols = self.query_columns(query)
        if not cols:
            return np.zeros(self.n_docs)
        ptr = self._w_ptr
        if len(cols) == 1:
            lo, hi = ptr[cols[0]], ptr[cols[0] + 1]
            rows, shares = self._w_rows[lo:hi], self._w_data[lo:hi]
        else:
            spans = [(ptr[j], ptr[j + 1]) for j in cols]
            rows = np.concatenate([self._w_rows[lo:hi] for lo, hi in spans])
            shares = np.concatenate([self._w_data[lo:hi] for lo, hi in spans])
        # shares of one text are added in column order, so equal texts tie
        return np.bincount(rows, weights=shares, minlength=self.n_docs)

    def search(self, query: str | Sequence[str], k: int = 5) -> list[tuple[str, float]]:
        """Top ``k`` ``(id, score)`` pairs with score > 0, best first."""
        check_int(k, "k")
        return top_k(self.scores(query), self.ids, k)

    def __len__(self) -> int:
        return self.n_docs
