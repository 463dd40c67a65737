"""BM25, dense and hybrid search over chunks, and their evaluation."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .bm25 import BM25Index
from .chunking import Chunk
from .dense import DenseIndex
from .fusion import rrf
from .metrics import hit_at_k, mrr, ndcg_at_k, recall_at_k, relevant_chunk_ids
from .rerank import LateInteractionReranker

__all__ = ["MODES", "Retriever", "evaluate"]

MODES = ("bm25", "dense", "hybrid", "hybrid+rerank")


def _ids(pairs: Iterable[tuple[str, float]]) -> list[str]:
    return [chunk_id for chunk_id, _ in pairs]


class Retriever:
    """Both indexes over ``chunk.indexed_text`` (so context notes are searched)."""

    def __init__(
        self, chunks: Sequence[Chunk], dim: int = 256, embedder: object | None = None
    ) -> None:
        self.chunks = list(chunks)
        if not self.chunks:
            raise ValueError("chunks must hold at least one chunk (got an empty list)")
        self.by_id = {c.chunk_id: c for c in self.chunks}
        ids = [c.chunk_id for c in self.chunks]
        texts = [c.indexed_text for c in self.chunks]
        self.bm25 = BM25Index(texts, ids)
        # embedder=None keeps the toy HashedEmbedder; any object with its
        # interface (ragkit.encoder.MiniLMEncoder) may take its place
        self.dense = DenseIndex(texts, ids, dim=dim, embedder=embedder)
        self._reranker: LateInteractionReranker | None = None

    @property
    def reranker(self) -> LateInteractionReranker:
        """MaxSim reranker over the chunks (token vectors built on first use)."""
        if self._reranker is None:
            texts = [c.indexed_text for c in self.chunks]
            ids = [c.chunk_id for c in self.chunks]
            self._reranker = LateInteractionReranker(texts, ids)
        return self._reranker

    def search(
        self, query: str, k: int = 10, mode: str = "hybrid", depth: int = 10
    ) -> list[str]:
        """Ids of the best ``k`` chunks for ``query``.

        ``mode="hybrid"`` fuses the top ``depth`` ids of BM25 and of the dense
        index with :func:`ragkit.fusion.rrf` (k=60) and keeps the first ``k``.
        ``mode="hybrid+rerank"`` keeps the first ``depth`` fused ids instead,
        reorders them by MaxSim (:class:`ragkit.rerank.LateInteractionReranker`,
        64-dimensional token vectors of ``indexed_text``) and returns the
        first ``k`` of that order.
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES} (got {mode!r})")
        if mode in ("bm25", "dense"):
            index = self.bm25 if mode == "bm25" else self.dense
            return _ids(index.search(query, k))
        # rrf sees only ranks, so BM25 scores and cosines need no common scale
        lexical = _ids(self.bm25.search(query, depth))
        semantic = _ids(self.dense.search(query, depth))
        if mode == "hybrid":
            return _ids(rrf([lexical, semantic], top=k))
        # the reranker sees the whole fused short list, not only the first k
        shortlist = _ids(rrf([lexical, semantic], top=depth))
        return _ids(self.reranker.rerank(query, shortlist))[:k]


def question_scores(
    retriever: Retriever, questions: Iterable, mode: str, k: int = 3
) -> list[dict]:
    """Retrieval metrics of ``mode`` for each question, in question order.

    Each question needs ``.question`` and ``.answer``; its relevant chunks are
    those whose text holds the answer (:func:`relevant_chunk_ids`), so an
    answer cut in two by a chunker counts as a miss. Each row holds ``hit``,
    ``recall`` and ``ndcg`` at ``k`` and ``mrr`` over the top 10.
    """
    rows = []
    for q in questions:
        relevant = relevant_chunk_ids(retriever.chunks, q.answer)
        ranked = retriever.search(q.question, k=10, mode=mode)
        rows.append({
            "hit": hit_at_k(ranked, relevant, k),
            "recall": recall_at_k(ranked, relevant, k),
            "mrr": mrr(ranked, relevant, 10),
            "ndcg": ndcg_at_k(ranked, relevant, k),
        })
    return rows


def evaluate(retriever: Retriever, questions: Iterable, mode: str, k: int = 3) -> dict:
    """Mean of :func:`question_scores` over ``questions``.

    Returns a dict with ``hit``, ``recall`` and ``ndcg`` at ``k``, ``mrr``
    over the top 10, and ``n`` (the number of questions).
    """
    rows = question_scores(retriever, questions, mode, k)
    if not rows:
        raise ValueError("questions must hold at least one question")
    n = len(rows)
    means = {name: sum(row[name] for row in rows) / n
             for name in ("hit", "recall", "mrr", "ndcg")}
    return {**means, "n": n}
