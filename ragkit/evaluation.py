"""Measuring a retrieval set-up: confidence intervals and whole evaluations.

Notebook 07 builds these pieces by hand; notebooks 08 and 09 and the project
import them from here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from .checks import check_int
from .answer import grounded_answer
from .chunking import Chunk, chunk_documents
from .corpus import load_documents, load_questions, load_unanswerable
from .metrics import first_relevant_rank, relevant_chunk_ids
from .retrieval import MODES, Retriever, evaluate, question_scores

__all__ = [
    "CHUNKERS",
    "bootstrap_interval",
    "chunk_size_study",
    "cluster_bootstrap_interval",
    "evaluate_files",
    "evaluate_modes",
    "first_gold_ranks",
    "overlap_for",
    "paired_difference",
    "study_chunks",
]


def _finite_values(values) -> np.ndarray:
    """`values` as a 1-D float array, refused by name when empty or not finite."""
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(
            f"values must be a non-empty 1-D sequence (got shape {data.shape})")
    if not np.isfinite(data).all():
        raise ValueError("values must be finite numbers")
    return data


def bootstrap_interval(
    values: Sequence[float],
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values``.

    ``values`` holds one number per question (a hit is 1.0 or 0.0). Resampling
    questions with replacement ``n_boot`` times shows how much the mean would
    move with another draw of questions of the same size; the interval is the
    central ``level`` share of those means. Seeded, so it is reproducible.
    """
    data = _finite_values(values)
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (got level={level})")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive int (got n_boot={n_boot!r})")
    rng = np.random.default_rng(seed)
    # one row of indices per resample: questions drawn with replacement
    picks = rng.integers(0, data.size, size=(n_boot, data.size))
    means = data[picks].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def cluster_bootstrap_interval(
    values: Sequence[float],
    clusters: Sequence,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values``, drawing
    whole clusters instead of single values.

    ``clusters[i]`` names the group value ``i`` belongs to, such as the
    paragraph a SQuAD question was written from. Questions from one
    paragraph tend to succeed or fail together, so they are not independent
    draws; resampling paragraphs with replacement (and every question of a
    drawn paragraph with it) shows how much the mean would move with another
    draw of paragraphs. Each resample's mean is over all the values it
    holds, so large clusters weigh by their size. Clusters are numbered in
    order of first appearance; with every value in a cluster of its own,
    the result equals :func:`bootstrap_interval` with the same ``seed``.
    For a paired comparison, pass the per-question differences.
    """
    data = _finite_values(values)
    if isinstance(clusters, (str, bytes)) or not isinstance(clusters, Sequence):
        raise TypeError(
            f"clusters must be a list of labels (got {type(clusters).__name__})")
    if len(clusters) != data.size:
        raise ValueError(
            f"clusters must have one label per value (got {len(clusters)} "
            f"for {data.size})")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (got level={level})")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive int (got n_boot={n_boot!r})")
    code: dict = {}
    labels = np.array([code.setdefault(c, len(code)) for c in clusters])
    sums = np.bincount(labels, weights=data)
    sizes = np.bincount(labels).astype(float)
    rng = np.random.default_rng(seed)
    # one row of cluster numbers per resample, drawn with replacement
    picks = rng.integers(0, len(code), size=(n_boot, len(code)))
    means = sums[picks].sum(axis=1) / sizes[picks].sum(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


# ------------------------------------------------------- whole evaluations

def _check_modes(modes: object) -> list[str]:
    if isinstance(modes, str):
        raise TypeError(f"modes must be a list of mode names (got {modes!r})")
    modes = list(modes)
    if not modes:
        raise ValueError("modes must name at least one mode")
    for mode in modes:
        if mode not in MODES:
            raise ValueError(f"modes: {mode!r} is not one of {MODES}")
    return modes


def evaluate_modes(
    retriever: Retriever,
    questions: Sequence,
    modes: Sequence[str] = MODES,
    k: int = 3,
) -> pd.DataFrame:
    """One row of mean metrics per retrieval mode, via ``retrieval.evaluate``.

    Columns, in order: ``mode``, ``hit``, ``recall``, ``mrr``, ``ndcg``, ``n``.
    ``hit``, ``recall`` and ``ndcg`` are measured at ``k``; ``mrr`` looks at
    the top 10, as :func:`ragkit.retrieval.evaluate` does; ``n`` is the
    number of questions. Rows follow ``modes``; the index is 0 .. n-1.
    """
    check_int(k, "k")
    modes = _check_modes(modes)
    questions = list(questions)
    if not questions:
        raise ValueError("questions must hold at least one question")
    rows = [{"mode": mode, **evaluate(retriever, questions, mode, k)}
            for mode in modes]
    return pd.DataFrame(rows, columns=["mode", "hit", "recall", "mrr", "ndcg", "n"])


def first_gold_ranks(
    retriever: Retriever,
    questions: Sequence,
    modes: Sequence[str] = MODES,
    depth: int = 10,
) -> pd.DataFrame:
    """Rank (from 1) of the first gold chunk of each question, per mode.

    The index holds the question ids (``qid``, in the order given), the
    columns are the modes; a cell is NaN when no gold chunk is among the
    first ``depth`` ids (or the answer was cut by the chunker, so no chunk is
    gold at all). Ranks are floats because of the NaN.
    """
    check_int(depth, "depth")
    modes = _check_modes(modes)
    table = {}
    for mode in modes:
        column = []
        for q in questions:
            gold = relevant_chunk_ids(retriever.chunks, q.answer)
            ranked = retriever.search(q.question, k=depth, mode=mode)
            rank = first_relevant_rank(ranked, gold)
            column.append(np.nan if rank is None else float(rank))
        table[mode] = column
    index = pd.Index([q.qid for q in questions], name="qid")
    return pd.DataFrame(table, index=index, columns=modes)


CHUNKERS = ("fixed", "overlap", "sentence")
STUDY_COLUMNS = ["chunker", "size", "chunks", "words_stored", "hit", "recall",
                 "mrr", "hits"]


def overlap_for(size: int) -> int:
    """The overlap the study gives the ``overlap`` chunker: ``size // 4``."""
    return size // 4


def study_chunks(documents: Sequence, chunker: str, size: int) -> list[Chunk]:
    """The chunks of one cell of the study (no context note).

    ``fixed``: :func:`~ragkit.chunking.chunk_fixed` windows of ``size``
    words; ``overlap``: the same with ``overlap_for(size)`` shared words;
    ``sentence``: :func:`~ragkit.chunking.chunk_sentences` with a budget of
    ``size`` words.
    """
    if chunker not in CHUNKERS:
        raise ValueError(f"chunker must be one of {CHUNKERS} (got {chunker!r})")
    if chunker == "sentence":
        return chunk_documents(documents, "sentence", size=size)
    overlap = overlap_for(size) if chunker == "overlap" else 0
    return chunk_documents(documents, "overlap", size=size, overlap=overlap)


def chunk_size_study(
    documents: Sequence,
    questions: Sequence,
    sizes: Sequence[int],
    chunkers: Sequence[str] = CHUNKERS,
    k: int = 3,
    mode: str = "hybrid",
    embedder: object | None = None,
) -> pd.DataFrame:
    """Retrieval quality and storage for every (chunker, size) pair.

    For each chunker (in the order given) and each size (in the order given)
    the documents are chunked (:func:`study_chunks`), one
    :class:`~ragkit.retrieval.Retriever` is built, and every question is
    searched once with ``mode`` for its top 10 ids. Gold chunks are those
    whose text holds the answer (:func:`relevant_chunk_ids`).

    Returns a tidy table with index 0 .. n-1 and columns, in order:
    ``chunker``, ``size``, ``chunks`` (how many), ``words_stored`` (words
    summed over chunk texts), ``hit`` (mean hit@k), ``recall`` (mean
    recall@k), ``mrr`` (mean reciprocal rank within the top 10) and ``hits``
    (a tuple of the per-question hit@k values, 1.0 or 0.0, in question
    order: what a bootstrap interval over questions resamples).

    ``embedder`` goes to every :class:`~ragkit.retrieval.Retriever` the
    study builds: ``None`` keeps the toy model, an encoder such as
    :class:`ragkit.encoder.MiniLMEncoder` puts a real one behind the dense
    and hybrid modes.
    """
    check_int(k, "k")
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES} (got {mode!r})")
    if isinstance(chunkers, str):
        raise TypeError(f"chunkers must be a list of names (got {chunkers!r})")
    questions = list(questions)
    if not questions:
        raise ValueError("questions must hold at least one question")
    sizes = list(sizes)
    for size in sizes:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"sizes must hold positive ints (got {size!r})")
    rows = []
    for chunker in chunkers:
        for size in sizes:
            chunks = study_chunks(documents, chunker, size)
            retriever = Retriever(chunks, embedder=embedder)
            scores = question_scores(retriever, questions, mode, k)
            n = len(questions)
            rows.append({
                "chunker": chunker, "size": size, "chunks": len(chunks),
                "words_stored": sum(len(c.text.split()) for c in chunks),
                **{name: sum(row[name] for row in scores) / n
                   for name in ("hit", "recall", "mrr")},
                "hits": tuple(row["hit"] for row in scores),
            })
    return pd.DataFrame(rows, columns=STUDY_COLUMNS)


def paired_difference(
    hits_a: Sequence[float],
    hits_b: Sequence[float],
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    clusters: Sequence | None = None,
) -> tuple[float, float, float]:
    """Mean of ``a - b`` per question and its paired bootstrap interval.

    Both lists score the same questions in the same order, so the bootstrap
    resamples questions and keeps each question's pair together (it is
    :func:`bootstrap_interval` of the differences). Where questions share a
    source, as the help centre's 43 share 15 pages, pass ``clusters`` (the
    page of each question): the differences are then resampled page by
    page (:func:`cluster_bootstrap_interval`), since questions on one page
    tend to gain or lose together. Returns ``(mean, low, high)``.
    """
    a = np.asarray(hits_a, dtype=float)
    b = np.asarray(hits_b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(
            f"hits_a and hits_b must have the same length (got {a.shape} "
            f"and {b.shape})")
    diff = a - b
    if clusters is None:
        low, high = bootstrap_interval(diff, level=level, n_boot=n_boot, seed=seed)
    else:
        low, high = cluster_bootstrap_interval(diff, clusters, level=level,
                                               n_boot=n_boot, seed=seed)
    return float(diff.mean()), low, high


def _corpus_files(source: object) -> dict[str, Path | None]:
    """Paths of documents, questions and (optional) unanswerable files."""
    if isinstance(source, Mapping):
        unknown = set(source) - {"documents", "questions", "unanswerable"}
        if unknown:
            raise ValueError(f"folder_or_paths has unknown keys {sorted(unknown)}")
        for key in ("documents", "questions"):
            if key not in source:
                raise ValueError(f"folder_or_paths must name a {key!r} file")
        files = {key: Path(value) for key, value in source.items()}
        files.setdefault("unanswerable", None)
        return files
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(
            "folder_or_paths must be a folder path or a dict of file paths "
            f"(got {type(source).__name__})")
    folder = Path(source)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: folder not found")
    optional = folder / "unanswerable.json"
    return {"documents": folder / "documents.json",
            "questions": folder / "questions.json",
            "unanswerable": optional if optional.exists() else None}


def evaluate_files(
    folder_or_paths: str | os.PathLike | Mapping,
    modes: Sequence[str] = MODES,
    k: int = 3,
    strategy: str = "sentence",
    size: int = 25,
    contextual: bool = False,
    embedder: object | None = None,
) -> pd.DataFrame:
    """Evaluate every mode on a corpus of your own, in the lab's file format.

    ``folder_or_paths`` is a folder holding ``documents.json``,
    ``questions.json`` and optionally ``unanswerable.json`` (the format of
    ``data/README.md``), or a dict with the keys ``documents``,
    ``questions`` and optionally ``unanswerable`` mapping to file paths. The
    files are read with :mod:`ragkit.corpus`, so a malformed file raises
    ``ValueError`` naming the file and the field. The documents are chunked
    with :func:`~ragkit.chunking.chunk_documents` (``strategy``, ``size``,
    ``contextual``) and indexed once.

    Returns :func:`evaluate_modes`'s table plus a column ``declined``: the
    share of unanswerable questions for which
    :func:`~ragkit.answer.grounded_answer`, given the top ``k`` chunks of
    that mode, declines (NaN when there is no unanswerable file). The
    counts are kept in ``table.attrs`` (``documents``, ``chunks``,
    ``questions``, ``unanswerable``). ``embedder`` is handed to the
    :class:`~ragkit.retrieval.Retriever` (``None``: the toy model).
    """
    files = _corpus_files(folder_or_paths)
    documents = load_documents(files["documents"])
    questions = load_questions(files["questions"], documents)
    if not questions:
        raise ValueError(f"{files['questions']}: holds no questions")
    unanswerable = (load_unanswerable(files["unanswerable"])
                    if files["unanswerable"] is not None else [])
    chunks = chunk_documents(documents, strategy, size=size,
                             contextual=contextual)
    retriever = Retriever(chunks, embedder=embedder)
    table = evaluate_modes(retriever, questions, modes, k)
    declined = []
    for mode in table["mode"]:
        if not unanswerable:
            declined.append(np.nan)
            continue
        said_no = 0
        for q in unanswerable:
            top = [retriever.by_id[i]
                   for i in retriever.search(q.question, k=k, mode=mode)]
            said_no += grounded_answer(q.question, top).abstained
        declined.append(said_no / len(unanswerable))
    table["declined"] = declined
    table.attrs.update(documents=len(documents), chunks=len(chunks),
                       questions=len(questions),
                       unanswerable=len(unanswerable))
    return table
