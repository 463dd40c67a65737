"""A toy "dense" retriever: hashed features of concept words.

This is a STAND-IN, not a neural embedding model. It has no training and no
weights: each token is mapped to a concept (``ragkit.text.concept``), and the
concept and its letter trigrams are hashed into a fixed-size vector. The
synonym table plays the part of what a real model learns from data, and the
trigrams make near-identical strings look alike (``lc-0417`` and ``lc-0411``
share 5 of their 7 trigrams), which is how a dense model blurs rare literal
codes.

Exact recipe of :meth:`HashedEmbedder.embed` (students re-write it):

1. ``v = [0.0] * dim``;
2. for every token ``tok`` of ``tokenize(text)`` (repeats included):
   ``c = concept(tok)``; ``w = idf.get(c, default)`` where ``default`` is
   ``max(idf.values())`` or 1.0 when ``idf`` is empty;
3. add ``WORD_WEIGHT * w * sign`` at ``index`` for the feature
   ``"w:" + c``, where ``index, sign = feature_bucket(feature, dim)``;
4. for every letter trigram ``g`` of ``"<" + c + ">"`` (the ``len(c)``
   slices of 3 characters, left to right, repeats included) add
   ``TRIGRAM_WEIGHT * w * sign`` for the feature ``"g:" + g``;
5. divide ``v`` by its L2 norm (leave it all zeros when the norm is 0).

:func:`feature_bucket` uses ``h = zlib.crc32(feature.encode("utf-8"))``,
``index = h % dim`` and ``sign = +1.0`` when bit 24 of ``h`` is set
(``(h >> 24) & 1 == 1``), else ``-1.0``.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence

import numpy as np

from .checks import check_int
from .bm25 import check_ids, top_k
from .text import concept, tokenize

__all__ = [
    "DenseIndex",
    "HashedEmbedder",
    "SIGN_BIT",
    "TRIGRAM_WEIGHT",
    "WORD_WEIGHT",
    "feature_bucket",
    "trigrams",
]

WORD_WEIGHT = 1.0
TRIGRAM_WEIGHT = 0.3
SIGN_BIT = 24


def feature_bucket(feature: str, dim: int) -> tuple[int, float]:
    """Hash a feature name to ``(index, sign)`` with CRC-32 (see module doc)."""
    if not isinstance(feature, str):
        raise TypeError(f"feature must be a str (got {type(feature).__name__})")
    check_int(dim, "dim")
    h = zlib.crc32(feature.encode("utf-8"))
    # a random-looking sign makes unrelated features that share a bucket
    # cancel out on average instead of always adding up
    sign = 1.0 if (h >> SIGN_BIT) & 1 else -1.0
    return h % dim, sign


def trigrams(word: str) -> list[str]:
    """Letter trigrams of ``"<" + word + ">"``: ``"fee"`` -> ``<fe, fee, ee>``."""
    marked = f"<{word}>"
    return [marked[i : i + 3] for i in range(len(marked) - 2)]


class HashedEmbedder:
    """Embeds text as a unit vector of hashed concept and trigram features."""

    def __init__(self, dim: int = 256) -> None:
        check_int(dim, "dim")
        self.dim = dim
        self.idf: dict[str, float] = {}

    def fit(self, texts: Sequence[str]) -> "HashedEmbedder":
        """Learn ``idf[c] = ln(1 + N / df(c))`` over the concepts of ``texts``.

        ``df(c)`` counts the texts whose tokens map to concept ``c`` at least
        once. Returns ``self`` so calls can be chained.
        """
        texts = list(texts)
        df: dict[str, int] = {}
        for text in texts:
            for c in {concept(t) for t in tokenize(text)}:
                df[c] = df.get(c, 0) + 1
        n = len(texts)
        self.idf = {c: math.log(1 + n / count) for c, count in df.items()}
        return self

    def embed(self, text: str) -> np.ndarray:
        """Unit-length float64 vector of ``text`` (all zeros with no tokens)."""
        vec = np.zeros(self.dim)
        # an unseen concept is treated as the rarest seen one: it is specific
        unseen = max(self.idf.values(), default=1.0)
        for word in map(concept, tokenize(text)):
            weight = self.idf.get(word, unseen)
            self._add(vec, "w:" + word, WORD_WEIGHT * weight)
            for gram in trigrams(word):
                self._add(vec, "g:" + gram, TRIGRAM_WEIGHT * weight)
        norm = np.linalg.norm(vec)
        return vec / norm if norm > 0 else vec

    def _add(self, vec: np.ndarray, feature: str, amount: float) -> None:
        slot, sign = feature_bucket(feature, self.dim)
        vec[slot] += sign * amount

    def embed_many(self, texts: Sequence[str]) -> np.ndarray:
        """Stack :meth:`embed` of each text into an ``(n, dim)`` array."""
        rows = [self.embed(t) for t in texts]
        return np.vstack(rows) if rows else np.zeros((0, self.dim))


class DenseIndex:
    """Cosine search over :class:`HashedEmbedder` vectors of ``texts``.

    ``embedder`` replaces the toy model by any object with ``fit(texts)``
    (returning the embedder), ``embed(text)`` and ``embed_many(texts)``
    giving unit vectors, e.g. :class:`ragkit.encoder.MiniLMEncoder`; it is
    fitted on ``texts`` and ``dim`` is then ignored.
    """

    def __init__(
        self,
        texts: Sequence[str],
        ids: Sequence[str] | None = None,
        dim: int = 256,
        embedder: object | None = None,
    ) -> None:
        texts = list(texts)
        if not texts:
            raise ValueError("texts must hold at least one text (got an empty list)")
        self.ids = check_ids(ids, len(texts))
        if embedder is None:
            embedder = HashedEmbedder(dim)
        self.embedder = embedder.fit(texts)
        self.vectors = self.embedder.embed_many(texts)

    def scores(self, query: str) -> np.ndarray:
        """Cosine similarity of the query with every text (unit vectors: a dot)."""
        return self.vectors @ self.embedder.embed(query)

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        """Top ``k`` ``(id, cosine)`` pairs with cosine > 0, ties in corpus order."""
        return top_k(self.scores(query), self.ids, k)

    def __len__(self) -> int:
        return len(self.ids)
