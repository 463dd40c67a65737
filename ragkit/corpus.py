"""Load the lab corpus: documents, answerable and unanswerable questions.

The files live in :data:`DATA_DIR` (``<repo>/data/helpcentre``) unless the
environment variable ``RAGKIT_DATA`` names another folder. Every loader takes
an optional ``path``: a JSON file, or a folder holding the usual file name.
A malformed file raises ``ValueError`` with the file and the field at fault.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path

from .text import split_sentences

__all__ = [
    "DATA_DIR",
    "Document",
    "KINDS",
    "Question",
    "Unanswerable",
    "data_dir",
    "load_documents",
    "load_questions",
    "load_unanswerable",
]

KINDS = ("literal", "paraphrase", "plain")


@dataclass(frozen=True)
class Document:
    """One help-centre page."""

    doc_id: str
    title: str
    text: str


@dataclass(frozen=True)
class Question:
    """A question, its short gold answer, the page that holds it, its kind."""

    qid: str
    question: str
    answer: str
    doc_id: str
    kind: str


@dataclass(frozen=True)
class Unanswerable:
    """A question the corpus cannot answer, with the reason why."""

    qid: str
    question: str
    why: str


def data_dir() -> Path:
    """``$RAGKIT_DATA`` when set, else ``data/helpcentre`` beside the package."""
    override = os.environ.get("RAGKIT_DATA")
    if override:
        return Path(override)
    return Path(__file__).resolve().parent.parent / "data" / "helpcentre"


DATA_DIR = data_dir()


def _resolve(path: str | os.PathLike | None, name: str) -> Path:
    if path is None:
        return data_dir() / name
    path = Path(path)
    return path / name if path.is_dir() else path


def _read_records(path: Path, cls: type, key: str) -> list:
    """Read a JSON list of objects into ``cls`` items, checking every field."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: file not found") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON ({err})") from None
    if not isinstance(raw, list):
        raise ValueError(f"{path}: expected a JSON list of objects")
    names = [f.name for f in fields(cls)]
    items, seen = [], set()
    for n, record in enumerate(raw):
        if not isinstance(record, dict):
            raise ValueError(f"{path}: item {n} is not a JSON object")
        for name in names:
            if name not in record:
                raise ValueError(f"{path}: item {n} is missing field {name!r}")
            value = record[name]
            if not isinstance(value, str) or not value.strip():
                raise ValueError(
                    f"{path}: item {n} field {name!r} must be a non-empty string"
                )
        if record[key] in seen:
            raise ValueError(f"{path}: duplicate {key} {record[key]!r} (item {n})")
        seen.add(record[key])
        items.append(cls(**{name: record[name] for name in names}))
    return items


def load_documents(path: str | os.PathLike | None = None) -> list[Document]:
    """Load ``documents.json``: a list of ``{doc_id, title, text}`` objects."""
    return _read_records(_resolve(path, "documents.json"), Document, "doc_id")


def load_questions(
    path: str | os.PathLike | None = None,
    documents: list[Document] | None = None,
) -> list[Question]:
    """Load ``questions.json`` and check every answer against its document.

    Each answer must appear, ignoring case, inside a single sentence of the
    text of its ``doc_id``. ``documents`` defaults to the ``documents.json``
    that sits in the same folder as the questions file.
    """
    file = _resolve(path, "questions.json")
    questions = _read_records(file, Question, "qid")
    if documents is None:
        documents = load_documents(file.parent / "documents.json")
    by_id = {doc.doc_id: doc for doc in documents}
    for q in questions:
        if q.kind not in KINDS:
            raise ValueError(
                f"{file}: {q.qid} field 'kind' must be one of {KINDS} (got {q.kind!r})"
            )
        if q.doc_id not in by_id:
            raise ValueError(
                f"{file}: {q.qid} field 'doc_id' names unknown {q.doc_id!r}"
            )
        needle = q.answer.lower()
        # within one sentence, so a sentence chunker can never split the answer
        if not any(needle in s.lower() for s in split_sentences(by_id[q.doc_id].text)):
            raise ValueError(
                f"{file}: {q.qid} field 'answer' ({q.answer!r}) is not found "
                f"verbatim in one sentence of document {q.doc_id!r}"
            )
    return questions


def load_unanswerable(path: str | os.PathLike | None = None) -> list[Unanswerable]:
    """Load ``unanswerable.json``: a list of ``{qid, question, why}`` objects."""
    return _read_records(_resolve(path, "unanswerable.json"), Unanswerable, "qid")
