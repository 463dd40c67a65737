"""Okapi BM25 over a compact inverted index, scored a term at a time.

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

A term's share of a text's score is ``idf(t) * g``, where the saturated
count ``g = f * (k1 + 1) / (f + k1 * (1 - b + b * |d| / avgdl))`` depends
only on the pair ``(f, |d|)``: call it the entry's kind. A corpus has few
kinds (counts are small, and many texts share a length), so the index
computes ``g`` once per kind, into the small table ``gain_table``, and keeps
two integers for each (term, text) entry: the text's row and the number of
its kind, each in the narrowest unsigned type that holds it (4 bytes and 1
on 100,000 chunks of the help centre's lengths, where bm25s keeps 8: a
float32 score and a row).
The entries are stored term by term, as in the columns of a sparse CSC
matrix. A query looks up the ``g`` of each entry of its terms, multiplies
it by the term's ``idf`` and adds the products up per text: time in
proportion to how many texts hold its terms, not to the size of the
corpus, and bit for bit the float64 shares a precomputed matrix would hold.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Sequence

import numpy as np
from scipy import sparse

from .checks import check_int
from .text import tokenize

__all__ = ["BM25Index", "Tokenizer", "bm25_idf", "check_ids"]


def _pair_keys(cols: np.ndarray, lengths: np.ndarray, n_docs: int) -> np.ndarray:
    """``col * n_docs + row`` of every token, sorted (so by term, then text)."""
    keys = cols.astype(np.int64)
    keys *= n_docs
    keys += np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    keys.sort()
    return keys


def _distinct(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, return_inverse=True)`` for non-negative ints. When
    the largest code is small (it is for kinds: counts and lengths are
    small), a table of which codes occur does it without sorting a copy."""
    top = int(codes.max()) + 1 if len(codes) else 0
    if top > 4 * len(codes) + 1024:
        return np.unique(codes, return_inverse=True)
    present = np.zeros(top, dtype=bool)
    present[codes] = True
    rank = np.cumsum(present, dtype=np.int64)
    rank -= 1
    return np.flatnonzero(present), rank[codes]


def _runs(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of sorted ``keys`` and how often each occurs (what
    ``np.unique(keys, return_counts=True)`` gives, without its copies)."""
    if len(keys) == 0:
        return keys, np.zeros(0, dtype=np.int64)
    new = np.empty(len(keys), dtype=bool)
    new[0] = True
    np.not_equal(keys[1:], keys[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    del new
    counts = np.diff(starts, append=len(keys))
    return keys[starts], counts

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


# top_k first looks at every _STEP-th score only (see there)
_STEP = 32


def top_k(scores: np.ndarray, ids: Sequence[str], k: int) -> list[tuple[str, float]]:
    """Best ``k`` positive scores, high to low; ties keep corpus order.

    Gives what a stable sort of all ``-scores`` cut to ``k`` would give,
    without sorting (or even partitioning) the whole corpus: the k-th best
    of every 32nd score is a floor for the k-th best of all (a subset's
    k-th best can only be lower), so the top k is among the texts that
    reach it, about 32 k of them, and only those are sorted.
    """
    check_int(k, "k")
    sample = scores[::_STEP]
    if len(sample) > k:
        floor = np.partition(sample, len(sample) - k)[len(sample) - k]
        # a floor <= 0: fewer than k sampled texts score > 0, and only
        # texts that score > 0 are returned
        cand = np.flatnonzero(scores >= floor if floor > 0 else scores > 0)
    else:
        cand = np.flatnonzero(scores > 0)
    # cand is in corpus order, so a stable sort on -score breaks ties by it
    order = cand[np.argsort(-scores[cand], kind="stable")][:k]
    return [(ids[i], float(scores[i])) for i in order]


class RowNames(Sequence):
    """The default ids ``"0"``, ``"1"``, ... ``str(n - 1)``, made when read.

    Behaves as the list of those strings (indexing, slicing, ``len``,
    ``in``, ``==``) without keeping ``n`` string objects alive: for a big
    corpus they would take more memory than the index itself.
    """

    def __init__(self, n: int) -> None:
        self._n = n

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [str(j) for j in range(self._n)[i]]
        return str(range(self._n)[i])

    def __contains__(self, name: object) -> bool:
        return (type(name) is str and name.isdigit() and name.isascii()
                and str(int(name)) == name and int(name) < self._n)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (RowNames, list, tuple)):
            return len(other) == self._n and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __repr__(self) -> str:
        return f"RowNames({self._n})"


class BM25Index:
    """BM25 over ``texts``; ``ids`` name the texts (default ``"0"``, ``"1"``...).

    Each text (and later each query) is either a str, split into tokens by
    ``tokenizer`` (default :func:`ragkit.text.tokenize`), or a list of
    tokens, taken as it is. With ``tokenizer=None`` every text and query
    must be a list of tokens.

    Attributes: ``vocab`` (term -> column, terms sorted), ``doc_len``,
    ``avgdl``, ``df`` and ``idf_values`` (one entry per column), and
    ``gain_table`` (the saturated count of each distinct (count, length)
    pair, see the module docstring). ``tf`` (term counts) and ``weights``
    (each term's share of each text's score) are sparse matrices, texts x
    vocab, rebuilt from the entries whenever they are read.
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
        # the default names are the row numbers, written out only when asked
        self.ids = RowNames(len(texts)) if ids is None else check_ids(ids, len(texts))
        self.k1, self.b = float(k1), float(b)
        lengths, cols = self._read_texts(texts)
        self.n_docs = len(texts)
        # one key per (term, text) pair; sorted keys put the entries term by
        # term, texts in corpus order, and counting equal keys gives f
        pairs, counts = _runs(_pair_keys(cols, lengths, self.n_docs))
        del cols
        n_terms = len(self.vocab)
        pair_cols, pair_rows = np.divmod(pairs, self.n_docs)
        del pairs
        self.doc_len = lengths.astype(np.float64)
        self.avgdl = float(self.doc_len.mean())
        self.df = np.bincount(pair_cols, minlength=n_terms)
        del pair_cols
        self.idf_values = self._idf_from_df(self.df)
        # the kinds, (count, length) pairs, and the kind of every entry
        width = int(lengths.max()) + 1
        codes = counts * width
        codes += lengths[pair_rows]
        del counts
        kinds, kind_of = _distinct(codes)
        del codes
        kind_counts, kind_lengths = np.divmod(kinds, width)
        f = self._kind_counts = kind_counts.astype(np.float64)
        # an all-empty corpus has avgdl 0; its texts have no terms to score anyway
        avgdl = self.avgdl or 1.0
        length_norm = 1 - self.b + self.b * kind_lengths.astype(np.float64) / avgdl
        # only kinds of stored entries (f >= 1) exist, so k1 = 0 gives no 0/0
        self.gain_table = f * (self.k1 + 1) / (f + self.k1 * length_norm)
        self._col_ptr = np.zeros(n_terms + 1, dtype=np.int64)
        np.cumsum(self.df, out=self._col_ptr[1:])
        # the two integers of every entry, in the narrowest type that fits
        self._rows = pair_rows.astype(np.min_scalar_type(max(self.n_docs - 1, 0)))
        self._kinds = kind_of.astype(np.min_scalar_type(max(len(kinds) - 1, 0)))

    @property
    def tf(self) -> sparse.csr_matrix:
        """Term counts, texts x vocab (a new CSR matrix on every read)."""
        return self._matrix(self._kind_counts[self._kinds]).tocsr()

    @property
    def weights(self) -> sparse.csc_matrix:
        """Each term's share of each text's score (a new CSC matrix on every read)."""
        idf = np.repeat(self.idf_values, self.df)
        return self._matrix(idf * self.gain_table[self._kinds])

    def _matrix(self, values: np.ndarray) -> sparse.csc_matrix:
        shape = (self.n_docs, len(self.vocab))
        return sparse.csc_matrix((values, self._rows, self._col_ptr), shape=shape)

    def _read_texts(self, texts: list) -> tuple[np.ndarray, np.ndarray]:
        """Tokenise one text at a time, keeping only each token's column:
        sets ``vocab`` (terms sorted, so the same corpus always gives the
        same columns) and returns every text's length and the column of
        every token, text after text. No list of all the tokens is ever
        held, which keeps the peak memory of a build low."""
        first_seen: dict[str, int] = {}  # term -> number in order of first sight
        numbers = array("i")
        lengths = np.empty(len(texts), dtype=np.int64)
        for i, text in enumerate(texts):
            tokens = self._tokens(text, f"texts[{i}]")
            lengths[i] = len(tokens)
            numbers.extend([first_seen.setdefault(tok, len(first_seen)) for tok in tokens])
        terms = sorted(first_seen)
        self.vocab = {term: j for j, term in enumerate(terms)}
        column_of = np.empty(len(terms), dtype=np.int32)
        column_of[np.fromiter(map(first_seen.__getitem__, terms), dtype=np.int64,
                              count=len(terms))] = np.arange(len(terms), dtype=np.int32)
        return lengths, column_of[np.frombuffer(numbers, dtype=np.int32)]

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
        ptr = self._col_ptr
        spans = [slice(ptr[j], ptr[j + 1]) for j in cols]
        # cast to intp while joining: bincount and indexing would copy anyway
        rows = np.concatenate([self._rows[s] for s in spans], dtype=np.intp)
        kinds = np.concatenate([self._kinds[s] for s in spans], dtype=np.intp)
        shares = self.gain_table[kinds]
        # the entries come term by term: scale each term's run by its idf
        end = 0
        for j in cols:
            start, end = end, end + self.df[j]
            shares[start:end] *= self.idf_values[j]
        # shares of one text are added in column order, so equal texts tie
        return np.bincount(rows, weights=shares, minlength=self.n_docs)

    def search(self, query: str | Sequence[str], k: int = 5) -> list[tuple[str, float]]:
        """Top ``k`` ``(id, score)`` pairs with score > 0, best first."""
        check_int(k, "k")
        return top_k(self.scores(query), self.ids, k)

    def __len__(self) -> int:
        return self.n_docs
