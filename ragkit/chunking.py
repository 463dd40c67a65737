"""Chunkers: fixed windows, overlapping windows, sentence groups, context notes.

The functions that work on plain strings (:func:`chunk_fixed`,
:func:`chunk_sentences`, :func:`contextual_text`) are the twins of what
students write in notebook 03; their docstrings state the exact rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .checks import check_int, check_str
from .text import split_sentences

__all__ = [
    "Chunk",
    "STRATEGIES",
    "add_context",
    "chunk_documents",
    "chunk_fixed",
    "chunk_sentences",
    "contextual_text",
    "exact_index_bytes",
    "make_chunks",
    "overlap_storage",
]

Summarizer = Callable[[str, str], str]
STRATEGIES = ("sentence", "fixed", "overlap")


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document.

    ``text`` is what a reader is shown; ``context`` is an optional note put in
    front of it at index time (contextual retrieval). Retrievers index
    :attr:`indexed_text`, never ``text`` alone.
    """

    chunk_id: str
    doc_id: str
    text: str
    context: str = ""

    @property
    def indexed_text(self) -> str:
        """``context + " " + text`` with outer whitespace stripped."""
        return (self.context + " " + self.text).strip()


def _check_window(size: object, overlap: object) -> None:
    check_int(size, "size", least=None)
    check_int(overlap, "overlap", least=None)
    if size < 1:
        raise ValueError(f"size must be at least 1 (got size={size})")
    if not 0 <= overlap < size:
        raise ValueError(
            "overlap must be between 0 and size-1 "
            f"(got overlap={overlap}, size={size})"
        )


def chunk_fixed(text: str, size: int, overlap: int = 0) -> list[str]:
    """Cut ``text`` into windows of ``size`` words.

    Exact rule: ``words = text.split()``; window ``j`` holds
    ``words[j*step : j*step + size]`` with ``step = size - overlap``; windows
    are made for ``j = 0, 1, ...`` and the first window that reaches the last
    word is the last one (so it may be shorter than ``size``). Each window is
    its words joined by single spaces. Text with no words gives ``[]``.

    Raises ``TypeError`` when ``text`` is not a str or ``size``/``overlap`` is
    not an int (``bool`` is refused), and ``ValueError`` when ``size < 1`` or
    ``overlap`` is outside ``0 .. size-1``.
    """
    check_str(text, "text")
    _check_window(size, overlap)
    words = text.split()
    step = size - overlap
    windows: list[str] = []
    start = 0
    while start < len(words):
        windows.append(" ".join(words[start : start + size]))
        if start + size >= len(words):
            break
        start += step
    return windows


def chunk_sentences(text: str, max_words: int) -> list[str]:
    """Group consecutive sentences into chunks under a word budget, uncut.

    Exact rule: walk through ``split_sentences(text)`` in order, counting each
    sentence's words with ``len(sentence.split())``. A sentence joins the
    current chunk unless the chunk is non-empty and the sentence would push it
    past ``max_words``; then the current chunk is closed first. So a sentence
    is never cut, and a sentence longer than ``max_words`` sits alone. The
    sentences of a chunk are joined with one space (each sentence is kept as
    ``split_sentences`` returns it). Text with no sentences gives ``[]``.

    Raises ``TypeError`` for a non-str ``text`` or a non-int ``max_words``, and
    ``ValueError`` when ``max_words < 1``.
    """
    check_str(text, "text")
    check_int(max_words, "max_words")
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence in split_sentences(text):
        n = len(sentence.split())
        if current and count + n > max_words:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def _context_note(text: str, title: str, summarize: Summarizer | None) -> str:
    check_str(text, "text")
    check_str(title, "title")
    if summarize is None:
        return f"[{title}]"
    note = summarize(text, title)
    check_str(note, "the value returned by summarize")
    return note


def contextual_text(text: str, title: str, summarize: Summarizer | None = None) -> str:
    """Return ``note + " " + text``: the text a contextual index stores.

    The default note is the title in square brackets, ``f"[{title}]"``, so
    ``contextual_text("It jams.", "Printer")`` is ``"[Printer] It jams."``.
    With ``summarize``, the note is ``summarize(text, title)`` instead: the
    hook where a real system would ask an LLM for a sentence of context.
    """
    return _context_note(text, title, summarize) + " " + text


def make_chunks(doc_id: str, pieces: Iterable[str]) -> list[Chunk]:
    """Wrap the strings of one document as chunks ``doc_id#0``, ``doc_id#1``, ..."""
    check_str(doc_id, "doc_id")
    return [Chunk(f"{doc_id}#{i}", doc_id, piece) for i, piece in enumerate(pieces)]


def add_context(
    chunks: Iterable[Chunk],
    titles: Mapping[str, str],
    summarize: Summarizer | None = None,
) -> list[Chunk]:
    """Return copies of ``chunks`` whose ``context`` is their document's note.

    The note follows :func:`contextual_text`, so ``chunk.indexed_text`` equals
    ``contextual_text(chunk.text, titles[chunk.doc_id], summarize)``. The
    chunk's ``text`` (what a reader sees and what gold labels match) is kept.
    """
    out = []
    for chunk in chunks:
        if chunk.doc_id not in titles:
            raise ValueError(f"titles has no entry for doc_id {chunk.doc_id!r}")
        note = _context_note(chunk.text, titles[chunk.doc_id], summarize)
        out.append(replace(chunk, context=note))
    return out


def chunk_documents(
    docs: Sequence,
    strategy: str = "sentence",
    size: int = 25,
    overlap: int = 5,
    contextual: bool = False,
) -> list[Chunk]:
    """Chunk every document (objects with ``doc_id``, ``title``, ``text``).

    ``strategy="sentence"`` packs sentences up to ``size`` words,
    ``"fixed"`` cuts windows of ``size`` words with no overlap, and
    ``"overlap"`` cuts windows of ``size`` words sharing ``overlap`` words.
    With ``contextual=True`` every chunk gets its title note (see
    :func:`add_context`).
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES} (got {strategy!r})")
    chunks: list[Chunk] = []
    for doc in docs:
        if strategy == "sentence":
            pieces = chunk_sentences(doc.text, size)
        elif strategy == "fixed":
            pieces = chunk_fixed(doc.text, size, 0)
        else:
            pieces = chunk_fixed(doc.text, size, overlap)
        chunks.extend(make_chunks(doc.doc_id, pieces))
    if contextual:
        chunks = add_context(chunks, {doc.doc_id: doc.title for doc in docs})
    return chunks


def overlap_storage(n_words: int, size: int, overlap: int) -> dict:
    """Count what :func:`chunk_fixed` stores for a text of ``n_words`` words.

    Returns a dict with

    - ``chunks``: number of windows (equals ``len(chunk_fixed(...))``);
    - ``chunks_no_overlap``: the same count with ``overlap=0``;
    - ``words_stored``: exact words kept, summed over windows (the last
      window may be short);
    - ``word_slots``: ``chunks * size``, the storage if every window is full;
    - ``extra_fraction``: ``words_stored / n_words - 1``;
    - ``slot_fraction``: ``word_slots / n_words - 1``.

    For ``n_words=0`` every count is 0 and both fractions are 0.0.
    Example: 10,000 words, size 200, overlap 40 give 63 chunks (50 without
    overlap), 12,480 words stored (24.8% extra) and 12,600 slots (26% extra).
    """
    check_int(n_words, "n_words", least=0)
    _check_window(size, overlap)
    step = size - overlap
    if n_words == 0:
        chunks = 0
    else:
        # one window for the start, then one per step until the end is covered
        chunks = 1 + max(0, math.ceil((n_words - size) / step))
    # every window is full except the last, which runs from its start to the end
    words_stored = 0 if chunks == 0 else (chunks - 1) * size + (
        n_words - (chunks - 1) * step
    )
    word_slots = chunks * size
    return {
        "chunks": chunks,
        "chunks_no_overlap": math.ceil(n_words / size),
        "words_stored": words_stored,
        "word_slots": word_slots,
        "extra_fraction": words_stored / n_words - 1 if n_words else 0.0,
        "slot_fraction": word_slots / n_words - 1 if n_words else 0.0,
    }


def exact_index_bytes(n_vectors: int, dim: int, bytes_per_value: int = 4) -> int:
    """Memory for a flat (exact-search) vector index: ``n * dim * bytes``.

    One million 768-dimensional float32 vectors need 3,072,000,000 bytes.
    """
    for name, value in (
        ("n_vectors", n_vectors),
        ("dim", dim),
        ("bytes_per_value", bytes_per_value),
    ):
        check_int(value, name, least=0)
    return n_vectors * dim * bytes_per_value
