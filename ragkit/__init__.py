"""ragkit: the tested, vectorised versions of the course pack's RAG pieces.

Each notebook builds one piece in plain Python; later notebooks import the
same piece from here, so an unfinished notebook never breaks the next one.
"""

from .bm25 import BM25Index
from .chunking import (
    Chunk,
    add_context,
    chunk_documents,
    chunk_fixed,
    chunk_sentences,
    contextual_text,
    exact_index_bytes,
    make_chunks,
    overlap_storage,
)
from .corpus import (
    DATA_DIR,
    Document,
    Question,
    Unanswerable,
    load_documents,
    load_questions,
    load_unanswerable,
)
from .dense import DenseIndex, HashedEmbedder, feature_bucket
from .fusion import rrf
from .metrics import (
    first_relevant_rank,
    hit_at_k,
    mrr,
    ndcg_at_k,
    recall_at_k,
    relevant_chunk_ids,
)
from .retrieval import Retriever, evaluate
from .text import STOPWORDS, SYNONYMS, concept, split_sentences, stem, tokenize

__version__ = "0.1.0"

__all__ = [
    "BM25Index",
    "Chunk",
    "DATA_DIR",
    "DenseIndex",
    "Document",
    "HashedEmbedder",
    "Question",
    "Retriever",
    "STOPWORDS",
    "SYNONYMS",
    "Unanswerable",
    "__version__",
    "add_context",
    "chunk_documents",
    "chunk_fixed",
    "chunk_sentences",
    "concept",
    "contextual_text",
    "evaluate",
    "exact_index_bytes",
    "feature_bucket",
    "first_relevant_rank",
    "hit_at_k",
    "load_documents",
    "load_questions",
    "load_unanswerable",
    "make_chunks",
    "mrr",
    "ndcg_at_k",
    "overlap_storage",
    "recall_at_k",
    "relevant_chunk_ids",
    "rrf",
    "split_sentences",
    "stem",
    "tokenize",
]
