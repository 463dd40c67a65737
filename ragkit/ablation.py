"""The ablation table of a RAG project: one row per step, measured alike.

A project report starts from the dullest set-up that could work (no
retrieval at all) and adds one piece per row: BM25, dense search, the two
fused, a reranker, and finally a context note in front of every chunk. Each
row is scored on the same questions, with retrieval and answers kept apart:

* retrieval: recall at ``k`` and the reciprocal rank of the first relevant
  chunk within the first :data:`MRR_DEPTH` ids, over answerable questions;
* answers: the outcome of :func:`ragkit.answer.grounded_answer` on the first
  ``k`` chunks, which is ``"correct"`` (not declined, and the answer holds the
  gold text, ignoring case), ``"wrong"`` (answered without it) or
  ``"abstained"``; for an unanswerable question, declining is the right move.

:func:`question_runs` keeps one row per (step, question), so a notebook can
draw bootstrap intervals from it; :func:`summarise` turns those rows into the
table, and :func:`ablation_table` does both.

How cost is counted (per question, in the real system each row stands for):

* ``searches`` is the number of index lookups: BM25 and the vector index
  count one each, so a hybrid search costs two;
* ``model_calls`` counts every call to a learned model at question time:
  the generator (one per question in every row), the query encoder of a
  dense index (dense and hybrid rows) and the reranker. The context notes of
  the last row cost one model call per chunk at index time, paid once and
  not per question; our notes are page titles, so here they are free.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from .checks import check_int
from .answer import grounded_answer
from .chunking import chunk_documents
from .failures import is_correct
from .metrics import mrr, recall_at_k, relevant_chunk_ids
from .retrieval import Retriever

__all__ = [
    "COLUMNS",
    "COST",
    "MRR_DEPTH",
    "OUTCOMES",
    "RUN_COLUMNS",
    "STEPS",
    "ablation_table",
    "outcome",
    "question_runs",
    "score_questions",
    "summarise",
]

# step name: (retriever mode or None, whether chunks carry a context note)
_PLAN = {
    "no retrieval": (None, False),
    "bm25": ("bm25", False),
    "dense": ("dense", False),
    "hybrid": ("hybrid", False),
    "hybrid+rerank": ("hybrid+rerank", False),
    "hybrid+rerank+context": ("hybrid+rerank", True),
}
STEPS = tuple(_PLAN)

# step name: (index lookups, model calls) per question; see the docstring
COST = {
    "no retrieval": (0, 1),
    "bm25": (1, 1),
    "dense": (1, 2),
    "hybrid": (2, 2),
    "hybrid+rerank": (2, 3),
    "hybrid+rerank+context": (2, 3),
}

MRR_DEPTH = 10
OUTCOMES = ("correct", "wrong", "abstained")
RUN_COLUMNS = ("step", "qid", "answerable", "recall", "rr", "outcome")
COLUMNS = ("step", "recall", "mrr", "correct", "wrong", "abstained",
           "refused", "searches", "model_calls")


def outcome(answer, gold: str | None) -> str:
    """``"abstained"``, ``"correct"`` or ``"wrong"`` for one answer.

    ``gold`` is the gold answer text, or ``None`` for an unanswerable
    question (then any answer that is not a refusal is ``"wrong"``).
    """
    if answer.abstained:
        return "abstained"
    return "correct" if is_correct(answer, gold) else "wrong"


def score_questions(
    retriever: Retriever | None,
    mode: str | None,
    questions: Sequence,
    unanswerable: Sequence = (),
    k: int = 3,
    min_overlap: int = 2,
) -> pd.DataFrame:
    """One row per question: what one step retrieved and answered.

    Columns ``qid, answerable, recall, rr, outcome`` (see :data:`RUN_COLUMNS`
    without ``step``); rows are the answerable questions in the given order,
    then the unanswerable ones; the index is ``0 .. n-1``. ``retriever=None``
    is the no-retrieval row: nothing is searched and the answerer gets no
    chunk. ``recall`` and ``rr`` are NaN for unanswerable questions, which
    have no relevant chunk. Relevant chunks are those whose text holds the
    gold answer (:func:`ragkit.metrics.relevant_chunk_ids`).
    """
    check_int(k, "k")
    rows = []
    for q in list(questions) + list(unanswerable):
        gold = getattr(q, "answer", None)
        if retriever is None:
            ranked: list[str] = []
        else:
            ranked = retriever.search(q.question, k=max(k, MRR_DEPTH),
                                      mode=mode)
        shown = [] if retriever is None else [
            retriever.by_id[i] for i in ranked[:k]]
        said = grounded_answer(q.question, shown, min_overlap=min_overlap)
        if gold is None:
            recall = rr = float("nan")
        else:
            # with no retriever, the labels come from nowhere: nothing found
            pool = [] if retriever is None else retriever.chunks
            relevant = relevant_chunk_ids(pool, gold)
            recall = recall_at_k(ranked, relevant, k)
            rr = mrr(ranked, relevant, MRR_DEPTH)
        rows.append({"qid": q.qid, "answerable": gold is not None,
                     "recall": recall, "rr": rr,
                     "outcome": outcome(said, gold)})
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS[1:]))


def _check_steps(steps: Sequence[str]) -> list[str]:
    if isinstance(steps, str):
        raise TypeError("steps must be a sequence of step names, not a str")
    steps = list(steps)
    if not steps:
        raise ValueError("steps must name at least one step")
    for step in steps:
        if step not in _PLAN:
            raise ValueError(f"steps holds unknown step {step!r}; "
                             f"known: {STEPS}")
    if len(set(steps)) != len(steps):
        raise ValueError("steps must not repeat a step")
    return steps


def question_runs(
    documents: Sequence,
    questions: Sequence,
    unanswerable: Sequence = (),
    steps: Sequence[str] = STEPS,
    k: int = 3,
    size: int = 25,
    min_overlap: int = 2,
) -> pd.DataFrame:
    """Every step of ``steps`` on every question: the long table.

    Documents are cut into sentence chunks of at most ``size`` words; the
    ``+context`` step indexes them with their page title as a note
    (:func:`ragkit.chunking.add_context`), all other steps without. Columns
    :data:`RUN_COLUMNS`; steps in the given order, and within a step the
    rows of :func:`score_questions`; index ``0 .. n-1``.
    """
    steps = _check_steps(steps)
    check_int(k, "k")
    if not list(questions):
        raise ValueError("questions must hold at least one question")
    retrievers: dict[bool, Retriever] = {}
    parts = []
    for step in steps:
        mode, contextual = _PLAN[step]
        retriever = None
        if mode is not None:
            if contextual not in retrievers:
                chunks = chunk_documents(documents, "sentence", size=size,
                                         contextual=contextual)
                retrievers[contextual] = Retriever(chunks)
            retriever = retrievers[contextual]
        part = score_questions(retriever, mode, questions, unanswerable,
                               k=k, min_overlap=min_overlap)
        part.insert(0, "step", step)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def summarise(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per step of ``runs``, in order of first appearance.

    Columns :data:`COLUMNS`: the means of ``recall`` and ``rr`` (as ``mrr``)
    and the shares of each outcome over answerable questions, ``refused``
    the share of unanswerable questions declined (NaN with none), then the
    per-question cost from :data:`COST`. Index ``0 .. n-1``.
    """
    missing = [c for c in RUN_COLUMNS if c not in runs.columns]
    if missing:
        raise ValueError(f"runs lacks the columns {missing}")
    rows = []
    for step in dict.fromkeys(runs["step"]):
        part = runs[runs["step"] == step]
        sure = part[part["answerable"]]
        unsure = part[~part["answerable"]]
        row = {"step": step, "recall": sure["recall"].mean(),
               "mrr": sure["rr"].mean()}
        for name in OUTCOMES:
            row[name] = (sure["outcome"] == name).mean()
        row["refused"] = ((unsure["outcome"] == "abstained").mean()
                          if len(unsure) else float("nan"))
        row["searches"], row["model_calls"] = COST[step]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COLUMNS))


def ablation_table(
    documents: Sequence,
    questions: Sequence,
    unanswerable: Sequence = (),
    steps: Sequence[str] = STEPS,
    k: int = 3,
    size: int = 25,
    min_overlap: int = 2,
) -> pd.DataFrame:
    """The ablation table: :func:`summarise` of :func:`question_runs`."""
    return summarise(question_runs(documents, questions, unanswerable,
                                   steps=steps, k=k, size=size,
                                   min_overlap=min_overlap))
