"""ragkit.chunking: fixed, overlapping and sentence chunkers, context notes, storage.

Expected values are worked out by hand from the docstrings; comments show how.
"""

import dataclasses
import random

import pytest

from ragkit.chunking import (
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
from ragkit.corpus import Document
from ragkit.text import split_sentences

WORDS = [f"t{i}" for i in range(50)]
TEXT = " ".join(WORDS)


def test_fixed_chunks_cover_every_word_once():
    """size 20, no overlap: windows of 20, 20 and the last 10 words."""
    chunks = chunk_fixed(TEXT, 20)
    assert [len(c.split()) for c in chunks] == [20, 20, 10]
    flat = [w for c in chunks for w in c.split()]
    assert flat == WORDS  # each word once, in order


def test_overlap_repeats_exactly_overlap_words():
    """size 20, overlap 5: step 15, windows start at 0, 15, 30; 30 + 20 reaches 50."""
    chunks = [c.split() for c in chunk_fixed(TEXT, 20, overlap=5)]
    assert len(chunks) == 3
    for left, right in zip(chunks, chunks[1:]):
        assert left[-5:] == right[:5]
        assert left[-6] not in right  # exactly 5 shared, not 6
    assert chunks[-1][-1] == "t49"


def test_fixed_edge_cases():
    """Short text, blank text, odd whitespace, and the largest overlap."""
    assert chunk_fixed("a b c", 10) == ["a b c"]
    assert chunk_fixed(" \n\t ", 3) == []
    assert chunk_fixed("a\n b\t c", 2) == ["a b", "c"]
    # overlap = size - 1: step 1, stop at the window that reaches "d"
    assert chunk_fixed("a b c d", 2, 1) == ["a b", "b c", "c d"]


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"size": 0}, ValueError, r"size must be at least 1 \(got size=0\)"),
        (
            {"size": 10, "overlap": 10},
            ValueError,
            r"overlap must be between 0 and size-1 \(got overlap=10, size=10\)",
        ),
        ({"size": 10, "overlap": -1}, ValueError, r"overlap=-1"),
        ({"size": True}, TypeError, r"size must be an int \(got bool\)"),
        ({"size": 2.5}, TypeError, r"size must be an int"),
        ({"size": 3, "overlap": "1"}, TypeError, r"overlap must be an int"),
    ],
)
def test_fixed_bad_arguments(kwargs, error, pattern):
    """Wrong type -> TypeError, wrong value -> ValueError; the message names it."""
    with pytest.raises(error, match=pattern):
        chunk_fixed(TEXT, **kwargs)


def test_fixed_rejects_non_str_text():
    """A list of words is not text."""
    with pytest.raises(TypeError, match=r"text must be a str \(got list\)"):
        chunk_fixed(WORDS, 5)


def test_sentence_chunks_pack_greedily():
    """3 words fit; 3 + 4 > 6 closes the chunk; 4 + 2 = 6 still fits."""
    text = "Oil the chuck. Check the belt tension. Then start."
    assert chunk_sentences(text, 6) == [
        "Oil the chuck.",
        "Check the belt tension. Then start.",
    ]


def test_long_sentence_stays_whole_and_alone():
    """A 7-word sentence with max_words=3 is kept uncut, on its own."""
    text = "Stop. This sentence is much longer than three. Go."
    assert chunk_sentences(text, 3) == [
        "Stop.",
        "This sentence is much longer than three.",
        "Go.",
    ]


def test_no_sentence_is_ever_split_between_chunks():
    """On random sentences every sentence sits whole inside exactly one chunk."""
    rng = random.Random(7)
    for _ in range(50):
        sentences = [
            " ".join(f"w{rng.randrange(100)}" for _ in range(rng.randint(1, 9))) + "."
            for _ in range(rng.randint(1, 8))
        ]
        text = " ".join(sentences)
        max_words = rng.randint(1, 12)
        chunks = chunk_sentences(text, max_words)
        assert " ".join(chunks) == text
        pieces = [s for c in chunks for s in split_sentences(c)]
        assert pieces == sentences
        for c in chunks:
            # over the limit only when the chunk is one long sentence
            assert len(c.split()) <= max_words or len(split_sentences(c)) == 1


def test_sentence_bad_arguments():
    """max_words must be an int of at least 1."""
    message = r"max_words must be at least 1 \(got max_words=0\)"
    with pytest.raises(ValueError, match=message):
        chunk_sentences("A. B.", 0)
    with pytest.raises(TypeError, match=r"max_words must be an int"):
        chunk_sentences("A. B.", "3")
    assert chunk_sentences("", 5) == []


def test_contextual_text_default_and_hook():
    """Default note is "[title]"; a summarizer replaces it."""
    assert contextual_text("It jams.", "Printer") == "[Printer] It jams."
    note = contextual_text("It jams.", "Printer", lambda text, title: f"From {title}:")
    assert note == "From Printer: It jams."
    with pytest.raises(TypeError, match="summarize"):
        contextual_text("It jams.", "Printer", lambda text, title: 42)


def test_context_prefix_changes_indexed_text_but_not_text():
    """add_context sets context only; indexed_text = note + space + text."""
    plain = Chunk("lockers#2", "lockers", "Each one costs twelve pounds.")
    assert plain.indexed_text == "Each one costs twelve pounds."
    [ctx] = add_context([plain], {"lockers": "Member Lockers"})
    assert ctx.text == plain.text
    assert ctx.context == "[Member Lockers]"
    assert ctx.indexed_text == "[Member Lockers] Each one costs twelve pounds."
    assert ctx.indexed_text == contextual_text(plain.text, "Member Lockers")


def test_add_context_needs_every_title():
    """A chunk whose document has no title is refused, naming titles."""
    with pytest.raises(ValueError, match="titles"):
        add_context([Chunk("x#0", "x", "text")], {})


def test_chunk_is_frozen_and_make_chunks_numbers_ids():
    """Ids are doc_id#0, doc_id#1, ...; chunks cannot be changed in place."""
    chunks = make_chunks("hours", ["Open at ten.", "Shut at six."])
    assert [c.chunk_id for c in chunks] == ["hours#0", "hours#1"]
    assert {c.doc_id for c in chunks} == {"hours"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        chunks[0].text = "changed"


def test_chunk_documents_strategies():
    """Eight words: sentence(5) -> 2 chunks; fixed(5) -> 2; overlap(5, 2) -> 2."""
    docs = [Document("d", "Doc", "One two three. Four five six seven eight.")]
    sentence = chunk_documents(docs, "sentence", size=5)
    assert [c.text for c in sentence] == [
        "One two three.",
        "Four five six seven eight.",
    ]
    fixed = chunk_documents(docs, "fixed", size=5)
    assert [c.text for c in fixed] == ["One two three. Four five", "six seven eight."]
    # overlap 2: step 3, windows start at 0 and 3; 3 + 5 reaches the 8th word
    overlap = chunk_documents(docs, "overlap", size=5, overlap=2)
    assert [c.text for c in overlap] == [
        "One two three. Four five",
        "Four five six seven eight.",
    ]
    ctx = chunk_documents(docs, contextual=True)
    assert {c.context for c in ctx} == {"[Doc]"}
    with pytest.raises(ValueError, match="strategy"):
        chunk_documents(docs, "semantic")


def test_overlap_storage_worked_example():
    """10,000 words, size 200, overlap 40 (numbers from the lecture notes).

    Step 160; windows start at 0, 160, ..., 9920 -> 63 windows (50 without
    overlap). The last holds 80 words: 62 * 200 + 80 = 12,480 words stored
    (24.8% extra) against 63 * 200 = 12,600 slots (26% extra).
    """
    out = overlap_storage(10_000, 200, 40)
    assert out["chunks"] == 63
    assert out["chunks_no_overlap"] == 50
    assert out["words_stored"] == 12_480
    assert out["word_slots"] == 12_600
    assert out["extra_fraction"] == pytest.approx(0.248)
    assert out["slot_fraction"] == pytest.approx(0.26)


def test_overlap_storage_agrees_with_chunk_fixed():
    """The closed-form counts equal what chunk_fixed really produces."""
    text = " ".join(f"x{i}" for i in range(10_000))
    assert len(chunk_fixed(text, 200, 40)) == 63
    rng = random.Random(3)
    for _ in range(200):
        n, size = rng.randint(0, 120), rng.randint(1, 30)
        overlap = rng.randint(0, size - 1)
        words = " ".join(f"x{i}" for i in range(n))
        chunks = chunk_fixed(words, size, overlap)
        out = overlap_storage(n, size, overlap)
        assert out["chunks"] == len(chunks)
        assert out["chunks_no_overlap"] == len(chunk_fixed(words, size))
        assert out["words_stored"] == sum(len(c.split()) for c in chunks)


def test_overlap_storage_errors_and_empty_text():
    """Zero words store nothing; negative counts and bad windows are refused."""
    assert overlap_storage(0, 10, 2)["chunks"] == 0
    assert overlap_storage(0, 10, 2)["extra_fraction"] == 0.0
    with pytest.raises(ValueError, match="n_words"):
        overlap_storage(-1, 10, 2)
    with pytest.raises(ValueError, match="overlap"):
        overlap_storage(100, 10, 10)


def test_exact_index_bytes():
    """1,000,000 x 768 float32 values x 4 bytes = 3,072,000,000 bytes (3.07 GB)."""
    assert exact_index_bytes(1_000_000, 768) == 3_072_000_000
    assert exact_index_bytes(10, 3, bytes_per_value=2) == 60
    with pytest.raises(ValueError, match="dim"):
        exact_index_bytes(10, -1)
