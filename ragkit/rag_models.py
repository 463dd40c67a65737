"""RAG-Sequence and RAG-Token: two ways to sum over the retrieved passages.

Lewis et al. split a RAG model into a retriever, which gives each of the top
``K`` passages ``z`` a probability ``p(z | x)`` for the question ``x``, and a
generator, which gives the answer's ``i``-th token a probability
``p(y_i | x, z, y_1 .. y_(i-1))`` when it reads passage ``z``. The passage is
never observed, so it is summed out (marginalised), in one of two places:

- **RAG-Sequence** lets a single passage produce every token of the answer:
  ``p(y | x) = sum_k p(z_k | x) * prod_i p(y_i | x, z_k, y_<i)``;
- **RAG-Token** may switch passage at every token:
  ``p(y | x) = prod_i sum_k p(z_k | x) * p(y_i | x, z_k, y_<i)``.

Here a candidate answer of ``N`` tokens is described by a table
``token_probs`` of shape ``(K, N)``: row ``k``, column ``i`` holds
``p(y_i | x, z_k, y_<i)``. ``doc_probs`` (shape ``(K,)``) holds
``p(z_k | x)``. Both scores are computed in log space, so answers with many
tokens do not underflow to zero; notebook 02's plain products must agree
with them to rounding error. With one passage, or with a one-token answer,
the two models give the same number (the sum and the product commute).

The last three functions measure the retriever-reader pair of this course
(a :class:`~ragkit.retrieval.Retriever` feeding
:func:`~ragkit.answer.grounded_answer`) on questions with gold answers. An
answer is **correct** when the reader did not abstain and its text contains
the gold answer, case ignored. Since the reader only quotes sentences of the
chunks it was handed, a correct answer needs a relevant chunk among them:
answer accuracy can never exceed hit@k of the retrieval that fed it (notebooks
01 and 02 measure this on the help centre).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy.special import logsumexp

from .answer import grounded_answer
from .metrics import hit_at_k, recall_at_k, relevant_chunk_ids
from .retrieval import Retriever

__all__ = [
    "MODELS",
    "answer_is_correct",
    "best_answer",
    "ceiling_curve",
    "check_tables",
    "compare_answers",
    "grade_answers",
    "log_rag_sequence",
    "log_rag_token",
    "rag_sequence",
    "rag_token",
    "retriever_probs",
]

MODELS = ("sequence", "token")
# how far doc_probs may sum from 1 (tables typed by hand are rounded)
SUM_TOLERANCE = 1e-6


def _as_array(value: object, name: str, ndim: int) -> np.ndarray:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must hold numbers (got {type(value).__name__})")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a {ndim}-D table of numbers "
            f"(got {type(value).__name__})"
        ) from None
    if array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D (got {array.ndim}-D)")
    return array


def retriever_probs(scores) -> np.ndarray:
    """Softmax of retrieval scores: ``exp(s_k) / sum_j exp(s_j)``.

    This turns the top ``K`` inner products of a dense retriever into the
    distribution ``p(z | x)`` over those ``K`` passages. Shifting every
    score by the same amount leaves the result unchanged.
    """
    s = _as_array(scores, "scores", 1)
    if s.size == 0:
        raise ValueError("scores must hold at least one score")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite numbers")
    return np.exp(s - logsumexp(s))


def check_tables(doc_probs, token_probs) -> tuple[np.ndarray, np.ndarray]:
    """Check one question's tables and return them as float arrays.

    ``doc_probs`` must be a non-empty 1-D list of probabilities (each in
    ``[0, 1]``) that sums to 1 within ``1e-6``. ``token_probs`` must be 2-D
    with one row per passage and at least one column, every value in
    ``[0, 1]``. Raises ``ValueError`` naming the table at fault (``TypeError``
    when it does not hold numbers); ``doc_probs`` is checked first.
    """
    p = _as_array(doc_probs, "doc_probs", 1)
    if p.size == 0:
        raise ValueError("doc_probs must hold at least one passage")
    if not ((p >= 0) & (p <= 1)).all():
        raise ValueError("doc_probs must hold probabilities between 0 and 1")
    if abs(p.sum() - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"doc_probs must sum to 1 (got {p.sum():.6g})")
    t = _as_array(token_probs, "token_probs", 2)
    if t.shape[0] != p.size:
        raise ValueError(
            f"token_probs must have one row per passage "
            f"(got {t.shape[0]} rows for {p.size} passages)"
        )
    if t.shape[1] == 0:
        raise ValueError("token_probs must have at least one column (token)")
    if not ((t >= 0) & (t <= 1)).all():
        raise ValueError("token_probs must hold probabilities between 0 and 1")
    return p, t


def log_rag_sequence(doc_probs, token_probs) -> float:
    """``log p(y | x)`` under RAG-Sequence (``-inf`` when it is 0)."""
    p, t = check_tables(doc_probs, token_probs)
    with np.errstate(divide="ignore"):  # log(0) = -inf is meant here
        per_passage = np.log(p) + np.log(t).sum(axis=1)
    return float(logsumexp(per_passage))


def log_rag_token(doc_probs, token_probs) -> float:
    """``log p(y | x)`` under RAG-Token (``-inf`` when it is 0)."""
    p, t = check_tables(doc_probs, token_probs)
    with np.errstate(divide="ignore"):
        return float(np.log(p @ t).sum())


def rag_sequence(doc_probs, token_probs) -> float:
    """RAG-Sequence probability of one answer (see the module docstring)."""
    return float(np.exp(log_rag_sequence(doc_probs, token_probs)))


def rag_token(doc_probs, token_probs) -> float:
    """RAG-Token probability of one answer (see the module docstring)."""
    return float(np.exp(log_rag_token(doc_probs, token_probs)))


def compare_answers(
    doc_probs, candidates: Mapping[str, object]
) -> dict[str, tuple[float, float]]:
    """``{answer: (rag_sequence, rag_token)}`` for every candidate answer.

    ``candidates`` maps an answer's text to its ``token_probs`` table; the
    dict comes back in the order of ``candidates``.
    """
    if not isinstance(candidates, Mapping) or not candidates:
        raise ValueError("candidates must be a non-empty dict of answer -> table")
    return {
        answer: (rag_sequence(doc_probs, table), rag_token(doc_probs, table))
        for answer, table in candidates.items()
    }


def best_answer(doc_probs, candidates: Mapping[str, object], model: str) -> str:
    """The candidate with the highest probability under ``model``.

    ``model`` is ``"sequence"`` or ``"token"``. Log probabilities are
    compared, so long answers are ranked correctly too; equal scores go to
    the answer that sorts first.
    """
    if model not in MODELS:
        raise ValueError(f"model must be one of {MODELS} (got {model!r})")
    if not isinstance(candidates, Mapping) or not candidates:
        raise ValueError("candidates must be a non-empty dict of answer -> table")
    score = log_rag_sequence if model == "sequence" else log_rag_token
    scored = [(-score(doc_probs, table), answer) for answer, table in candidates.items()]
    return min(scored)[1]


# --------------------------------------------- the retriever-reader pair


def answer_is_correct(answer, gold: str) -> bool:
    """True when ``answer`` did not abstain and its text contains ``gold``.

    Case is ignored on both sides. ``answer`` needs ``.text`` and
    ``.abstained`` (an :class:`ragkit.answer.Answer`).
    """
    if not isinstance(gold, str):
        raise TypeError(f"gold must be a str (got {type(gold).__name__})")
    if not gold.strip():
        raise ValueError("gold must not be empty (every text would contain it)")
    return (not answer.abstained) and gold.lower() in answer.text.lower()


def grade_answers(
    questions: Sequence, fetch: Callable[[str], Sequence], min_overlap: int = 2
) -> dict[str, list]:
    """Answer every question from the chunks ``fetch`` returns, and grade it.

    For each question (``.qid``, ``.question``, ``.answer``), in order:
    ``chunks = fetch(question.question)`` and ``grounded_answer(question.
    question, chunks, min_overlap)``. Returns equal-length lists: ``qid``,
    ``answered`` (did not abstain), ``correct`` (:func:`answer_is_correct`)
    and ``context_words`` (words of the chunks' texts handed over).
    ``ValueError`` when ``questions`` is empty.
    """
    questions = list(questions)
    if not questions:
        raise ValueError("questions must hold at least one question")
    table: dict[str, list] = {
        "qid": [], "answered": [], "correct": [], "context_words": []
    }
    for q in questions:
        chunks = list(fetch(q.question))
        answer = grounded_answer(q.question, chunks, min_overlap)
        table["qid"].append(q.qid)
        table["answered"].append(not answer.abstained)
        table["correct"].append(answer_is_correct(answer, q.answer))
        table["context_words"].append(sum(len(c.text.split()) for c in chunks))
    return table


def ceiling_curve(
    questions: Sequence, chunks: Sequence, ks: Sequence[int], mode: str = "bm25"
) -> dict[str, np.ndarray]:
    """Recall@k, hit@k and answer accuracy of retrieval + reader, per ``k``.

    One :class:`Retriever` is built over ``chunks``. For each ``k`` (in the
    order of ``ks``) and each question, the top ``k`` ids of
    ``search(question, k, mode)`` are scored with :func:`recall_at_k` and
    :func:`hit_at_k` against :func:`relevant_chunk_ids` of the gold answer,
    and their chunks, in rank order, go to :func:`grounded_answer`. Returns
    arrays ``k``, ``recall``, ``hit`` and ``accuracy`` (means over the
    questions). ``accuracy <= hit`` always holds; ``hit`` equals ``recall``
    when every question has exactly one relevant chunk.
    """
    questions = list(questions)
    if not questions:
        raise ValueError("questions must hold at least one question")
    ks = list(ks)
    if not ks:
        raise ValueError("ks must hold at least one k")
    retriever = Retriever(chunks)
    relevant = [relevant_chunk_ids(retriever.chunks, q.answer) for q in questions]
    rows = []
    for k in ks:
        recall = hit = correct = 0.0
        for q, rel in zip(questions, relevant):
            ids = retriever.search(q.question, k=k, mode=mode)
            recall += recall_at_k(ids, rel, k)
            hit += hit_at_k(ids, rel, k)
            answer = grounded_answer(q.question, [retriever.by_id[i] for i in ids])
            correct += answer_is_correct(answer, q.answer)
        n = len(questions)
        rows.append((k, recall / n, hit / n, correct / n))
    k_col, recall_col, hit_col, acc_col = (np.array(col) for col in zip(*rows))
    return {"k": k_col, "recall": recall_col, "hit": hit_col, "accuracy": acc_col}
