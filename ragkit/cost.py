"""How many prompt tokens one question costs: stuff the corpus, or retrieve.

Notebook 01 compares two ways to put knowledge in front of a model. Stuffing
sends the whole corpus with every question; retrieval sends only the ``k``
chunks a search returned. Both are estimated from word counts:

- ``stuffed = tokens_per_word * (corpus_words + question_words)``;
- ``retrieved = tokens_per_word * (min(k * chunk_words, corpus_words)
  + question_words)``: a search cannot hand over more text than the corpus
  holds.

Token counts stay floats (an estimate need not be a whole number), so the
notebook's plain-Python twin and these numpy versions agree to rounding
error. The defaults are the notebook's stated assumptions, not measurements:
about 1.3 tokens per English word, chunks of 200 words, the top 5 chunks, a
20-word question. :data:`CONTEXT_RULE_TOKENS` is the size rule of the
contextual-retrieval article: a knowledge base under about 200,000 tokens
may go whole into the prompt, with prompt caching to keep it cheap.
"""

from __future__ import annotations

import numpy as np

from .checks import check_number

__all__ = [
    "CHUNK_WORDS",
    "CONTEXT_RULE_TOKENS",
    "QUESTION_WORDS",
    "TOKENS_PER_WORD",
    "TOP_K",
    "WORDS_PER_PAGE",
    "cost_table",
    "prompt_tokens",
    "stuffing_limit",
]

CONTEXT_RULE_TOKENS = 200_000
TOKENS_PER_WORD = 1.3
CHUNK_WORDS = 200
TOP_K = 5
QUESTION_WORDS = 20
# a printed page of plain prose; only used to turn words into "pages"
WORDS_PER_PAGE = 300


def _check_reader(tokens_per_word: float, question_words: float) -> None:
    """The two assumptions every prompt shares: token rate and question length."""
    if not tokens_per_word > 0:
        raise ValueError(
            f"tokens_per_word must be above 0 (got tokens_per_word={tokens_per_word})"
        )
    if question_words < 0:
        raise ValueError(
            f"question_words must be at least 0 (got question_words={question_words})"
        )


def _check_assumptions(
    k: object, chunk_words: object, tokens_per_word: object, question_words: object
) -> None:
    for name, value in (
        ("k", k),
        ("chunk_words", chunk_words),
        ("tokens_per_word", tokens_per_word),
        ("question_words", question_words),
    ):
        check_number(value, name)
    if k < 1:
        raise ValueError(f"k must be at least 1 (got k={k})")
    if chunk_words < 1:
        raise ValueError(f"chunk_words must be at least 1 (got chunk_words={chunk_words})")
    _check_reader(tokens_per_word, question_words)


def _as_words(corpus_words: object) -> np.ndarray:
    if isinstance(corpus_words, (bool, str, bytes)):
        raise TypeError(
            f"corpus_words must be a number or an array of numbers "
            f"(got {type(corpus_words).__name__})"
        )
    try:
        words = np.asarray(corpus_words, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            "corpus_words must be a number or an array of numbers "
            f"(got {type(corpus_words).__name__})"
        ) from None
    if np.isnan(words).any() or (words < 0).any():
        raise ValueError("corpus_words must be at least 0 (got a negative or NaN value)")
    return words


def prompt_tokens(
    corpus_words,
    k: int = TOP_K,
    chunk_words: float = CHUNK_WORDS,
    tokens_per_word: float = TOKENS_PER_WORD,
    question_words: float = QUESTION_WORDS,
):
    """``(stuffed, retrieved)`` prompt tokens per question (module docstring).

    ``corpus_words`` may be one number (two floats come back) or an array of
    corpus sizes (two float arrays of the same shape come back).

    >>> prompt_tokens(10_000)
    (13026.0, 1326.0)

    Raises ``TypeError`` for a non-numeric argument and ``ValueError`` when
    ``corpus_words < 0``, ``k < 1``, ``chunk_words < 1``,
    ``tokens_per_word <= 0`` or ``question_words < 0``.
    """
    words = _as_words(corpus_words)
    _check_assumptions(k, chunk_words, tokens_per_word, question_words)
    stuffed = tokens_per_word * (words + question_words)
    retrieved = tokens_per_word * (np.minimum(k * chunk_words, words) + question_words)
    if words.ndim == 0:
        return float(stuffed), float(retrieved)
    return stuffed, retrieved


def cost_table(
    corpus_sizes,
    budget: float = CONTEXT_RULE_TOKENS,
    k: int = TOP_K,
    chunk_words: float = CHUNK_WORDS,
    tokens_per_word: float = TOKENS_PER_WORD,
    question_words: float = QUESTION_WORDS,
) -> dict[str, np.ndarray]:
    """Both prompt sizes over a list of corpus sizes, as columns.

    Returns a dict of equal-length arrays, in the order of ``corpus_sizes``:
    ``corpus_words``, ``stuff_tokens``, ``retrieve_tokens`` and
    ``stuff_fits`` (``stuff_tokens <= budget``). ``pandas.DataFrame`` of it
    is the table notebook 01 builds by hand. ``ValueError`` when
    ``budget <= 0``.
    """
    check_number(budget, "budget")
    if not budget > 0:
        raise ValueError(f"budget must be above 0 (got budget={budget})")
    words = np.atleast_1d(_as_words(corpus_sizes))
    if words.ndim != 1:
        raise ValueError("corpus_sizes must be one number or a flat list of numbers")
    stuffed, retrieved = prompt_tokens(
        words, k, chunk_words, tokens_per_word, question_words
    )
    return {
        "corpus_words": words,
        "stuff_tokens": stuffed,
        "retrieve_tokens": retrieved,
        "stuff_fits": stuffed <= budget,
    }


def stuffing_limit(
    budget: float = CONTEXT_RULE_TOKENS,
    tokens_per_word: float = TOKENS_PER_WORD,
    question_words: float = QUESTION_WORDS,
) -> float:
    """The largest corpus, in words, whose stuffed prompt fits in ``budget``.

    Solves ``tokens_per_word * (words + question_words) <= budget`` for
    ``words``: ``budget / tokens_per_word - question_words``. With the
    defaults that is about 153,826 words, some 513 pages of 300 words.
    ``ValueError`` when ``budget <= 0`` or ``tokens_per_word <= 0``, or when
    the question alone does not fit (the result would be negative).
    """
    for name, value in (
        ("budget", budget),
        ("tokens_per_word", tokens_per_word),
        ("question_words", question_words),
    ):
        check_number(value, name)
    if not budget > 0:
        raise ValueError(f"budget must be above 0 (got budget={budget})")
    _check_reader(tokens_per_word, question_words)
    words = budget / tokens_per_word - question_words
    if words < 0:
        raise ValueError(
            f"budget is too small for the question alone (got budget={budget}, "
            f"question_words={question_words}, tokens_per_word={tokens_per_word})"
        )
    return float(words)
