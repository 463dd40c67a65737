"""ragkit: the tested, vectorised versions of the course pack's RAG pieces.

Each notebook builds one piece in plain Python; later notebooks import the
same piece from here, so an unfinished notebook never breaks the next one.
Every submodule is imported here (``ragkit.rerank`` is the module; its
function of the same name is ``ragkit.rerank.rerank``), so ``ragkit.reference.fresh()`` (a private
copy for hidden tests) has all of them as attributes too.
"""

from . import (  # noqa: F401 (submodules, for attribute access)
    ablation,
    agent,
    ann,
    answer,
    bm25,
    chunking,
    corpus,
    cost,
    dense,
    encoder,
    evaluation,
    failures,
    fusion,
    metrics,
    rag_models,
    reference,
    rerank,
    retrieval,
    squad,
    stored_vectors,
    text,
)
from .ablation import ablation_table, question_runs, summarise
from .agent import agent_answer, needs_retrieval, rewrite_query
from .answer import NO_ANSWER, Answer, check_citations, grounded_answer

from .bm25 import BM25Index, bm25_idf
from .cost import CONTEXT_RULE_TOKENS, cost_table, prompt_tokens, stuffing_limit
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
from .encoder import MiniLMEncoder
from .evaluation import (
    bootstrap_interval,
    chunk_size_study,
    evaluate_files,
    evaluate_modes,
    first_gold_ranks,
    paired_difference,
)
from .failures import COLUMN, STAGES, record_agent, record_question, triage
from .fusion import rrf
from .rag_models import rag_sequence, rag_token
from .rerank import (
    LateInteractionReranker,
    maxsim,
    maxsim_many,
    token_vectors,
)
from .metrics import (
    first_relevant_rank,
    hit_at_k,
    mrr,
    ndcg_at_k,
    recall_at_k,
    relevant_chunk_ids,
)
from .retrieval import Retriever, evaluate
from .squad import SquadQuestion, load_squad, squad_vectors
from .text import STOPWORDS, SYNONYMS, concept, split_sentences, stem, tokenize

__version__ = "0.1.0"

__all__ = [
    "NO_ANSWER",
    "ablation_table",
    "question_runs",
    "summarise",
    "Answer",
    "BM25Index",
    "CONTEXT_RULE_TOKENS",
    "LateInteractionReranker",
    "Chunk",
    "COLUMN",
    "MiniLMEncoder",
    "STAGES",
    "SquadQuestion",
    "load_squad",
    "squad_vectors",
    "record_agent",
    "record_question",
    "triage",
    "bootstrap_interval",
    "chunk_size_study",
    "evaluate_files",
    "evaluate_modes",
    "first_gold_ranks",
    "paired_difference",
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
    "agent_answer",
    "bm25_idf",
    "check_citations",
    "chunk_documents",
    "chunk_fixed",
    "chunk_sentences",
    "concept",
    "contextual_text",
    "cost_table",
    "evaluate",
    "exact_index_bytes",
    "feature_bucket",
    "first_relevant_rank",
    "grounded_answer",
    "hit_at_k",
    "load_documents",
    "load_questions",
    "load_unanswerable",
    "make_chunks",
    "maxsim",
    "maxsim_many",
    "mrr",
    "needs_retrieval",
    "ndcg_at_k",
    "overlap_storage",
    "prompt_tokens",
    "rag_sequence",
    "rag_token",
    "recall_at_k",
    "relevant_chunk_ids",
    "rewrite_query",
    "rrf",
    "split_sentences",
    "stem",
    "stuffing_limit",
    "token_vectors",
    "tokenize",
]
