"""A small real test set: 87 SQuAD 2.0 paragraphs and their 626 questions.

``data/squad-small/small.json`` is a subset of the SQuAD 2.0 development set
(two Wikipedia articles; CC BY-SA 4.0, see ``data/squad-small/README.md``),
in SQuAD's own nesting: articles, then paragraphs, then questions. Here every
paragraph becomes a :class:`ragkit.corpus.Document` whose ``doc_id`` is the
article slug and the paragraph's position (``normans-00``), and every
question a :class:`SquadQuestion` whose gold passage is the paragraph that
holds it. Questions marked ``is_impossible`` have no answer in the paragraph
(SQuAD 2.0 wrote them to look answerable): ``answers`` is empty for them.

``data/squad-small/minilm.npz`` ships every paragraph's and every question's
all-MiniLM-L6-v2 vector (float16, written by ``tools/squad_vectors.py``), so
a notebook can search with the real encoder without running it:
:func:`squad_vectors` reads them in :func:`load_squad`'s order.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .corpus import Document
from .stored_vectors import load_vectors, text_digest  # text_digest: re-export

__all__ = ["SQUAD_FILE", "SQUAD_VECTORS", "SquadQuestion", "load_squad",
           "squad_vectors", "text_digest"]

SQUAD_FILE = (Path(__file__).resolve().parent.parent
              / "data" / "squad-small" / "small.json")
SQUAD_VECTORS = SQUAD_FILE.with_name("minilm.npz")


@dataclass(frozen=True)
class SquadQuestion:
    """A SQuAD question, the paragraph it was written on, its answer texts."""

    qid: str
    question: str
    doc_id: str
    answers: tuple[str, ...]  # distinct gold spans, first-seen order
    is_impossible: bool

    @property
    def answer(self) -> str:
        """The first gold span ('' for an unanswerable question)."""
        return self.answers[0] if self.answers else ""


def _slug(title: str) -> str:
    return title.lower().replace("_", "-").replace(" ", "-")


def load_squad(
    path: str | os.PathLike | None = None,
) -> tuple[list[Document], list[SquadQuestion]]:
    """Paragraphs as documents and every question, both in file order.

    ``path`` defaults to :data:`SQUAD_FILE`. Raises ``ValueError`` naming the
    question when an answerable one has no answer or an answer that is not a
    span of its paragraph, or when an id repeats.
    """
    file = Path(path) if path is not None else SQUAD_FILE
    raw = json.loads(file.read_text(encoding="utf-8"))
    documents: list[Document] = []
    questions: list[SquadQuestion] = []
    seen: set[str] = set()
    for article in raw["data"]:
        slug = _slug(article["title"])
        for n, para in enumerate(article["paragraphs"]):
            doc = Document(f"{slug}-{n:02d}", article["title"], para["context"])
            documents.append(doc)
            for qa in para["qas"]:
                qid = qa["id"]
                if qid in seen:
                    raise ValueError(f"{file}: question id {qid!r} repeats")
                seen.add(qid)
                spans = tuple(dict.fromkeys(a["text"] for a in qa["answers"]))
                impossible = bool(qa.get("is_impossible", False))
                if not impossible and not spans:
                    raise ValueError(f"{file}: question {qid} has no answer")
                for a in qa["answers"]:
                    start = a["answer_start"]
                    if doc.text[start:start + len(a["text"])] != a["text"]:
                        raise ValueError(
                            f"{file}: question {qid}: answer {a['text']!r} is "
                            f"not at offset {start} of {doc.doc_id}")
                questions.append(SquadQuestion(
                    qid, qa["question"], doc.doc_id, spans, impossible))
    return documents, questions


def squad_vectors(
    path: str | os.PathLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The shipped MiniLM vectors: ``(paragraphs, questions)``, float32.

    Row ``i`` of the first array is the unit vector of ``load_squad()[0][i]``
    and row ``j`` of the second that of question ``j`` (all 626, answerable
    or not). ``path`` defaults to :data:`SQUAD_VECTORS`. The file records the
    checksum of the model that wrote it and a digest of the texts; a
    ``ValueError`` (from :func:`ragkit.stored_vectors.load_vectors`) says
    which one differs from the installed model or from the current subset,
    and that ``python -m tools.squad_vectors`` writes the file again.
    """
    file = Path(path) if path is not None else SQUAD_VECTORS
    docs, questions = load_squad()
    stored = load_vectors(
        file, {"paragraph": [d.text for d in docs],
               "question": [q.question for q in questions]},
        ["paragraphs", "questions"], "tools.squad_vectors")
    paragraphs = stored["paragraphs"].astype(np.float32)
    asked = stored["questions"].astype(np.float32)
    if paragraphs.shape[0] != len(docs) or asked.shape[0] != len(questions):
        raise ValueError(
            f"{file}: {paragraphs.shape[0]} paragraph and {asked.shape[0]} "
            f"question rows for {len(docs)} and {len(questions)} texts; "
            "write it again with `python -m tools.squad_vectors`")
    return paragraphs, asked
