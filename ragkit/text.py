"""Text basics shared by every retriever: tokens, stems, stopwords, sentences.

The rules here are deliberately tiny so that a student can re-write each one
in a few lines of plain Python and get exactly the same output.

Rules, in the order they are applied by :func:`tokenize`:

1. lower-case the text;
2. find tokens with ``TOKEN_PATTERN``: runs of ``[a-z0-9]`` joined by single
   hyphens, so ``"LC-0417"`` gives one token ``"lc-0417"`` and ``"3D"`` gives
   ``"3d"`` (every other character, apostrophes included, separates tokens);
3. drop a token when it is in :data:`STOPWORDS` (checked *before* stemming);
4. :func:`stem` what is left.
"""

from __future__ import annotations

import re

__all__ = [
    "STOPWORDS",
    "SYNONYMS",
    "TOKEN_PATTERN",
    "concept",
    "split_sentences",
    "stem",
    "tokenize",
]

TOKEN_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

# function words that carry no topic of their own, all lower-case; "s" and "t"
# are what is left of "member's" and "don't" once the apostrophe splits them
STOPWORDS: frozenset[str] = frozenset(
    """
    a about after again all also am an and any are as at be because been before
    being but by can could did do does for from had has have he her here his how
    i if in into is it its just me more my no not of on or our out she should so
    some such than that the their them then there these they this those to too
    up us very was we were what when where which while who why will with would
    you your s t
    """.split()
)

# suffixes tried in this order; only the first one that applies is removed
_SUFFIXES = ("ing", "ly", "ed", "es", "s")
_MIN_STEM = 3
# "es" is a plural ending after these sounds (passes, boxes, benches, brushes);
# in "codes", "sizes" or "machines" the "e" belongs to the word: only "s" goes
_HISSING_ENDS = ("ss", "x", "ch", "sh")


def _check_text(text: object, name: str = "text") -> None:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a str (got {type(text).__name__})")


def stem(word: str) -> str:
    """Strip one common English suffix from ``word`` (already lower-case).

    Exact rule: try the suffixes ``"ing"``, ``"ly"``, ``"ed"``, ``"es"``,
    ``"s"`` in that order and remove the first one that fits, where a suffix
    fits when ``word`` ends with it and at least 3 characters are left.
    Two extra conditions: ``"es"`` fits only when the part left ends in
    ``ss``, ``x``, ``ch`` or ``sh``; ``"s"`` never fits a word ending in
    ``"ss"``. Examples: booking -> book, passes -> pass, codes -> code,
    sizes -> size, glass -> glass, fees -> fee, is -> is, opened -> open.
    """
    _check_text(word, "word")
    for suffix in _SUFFIXES:
        if not word.endswith(suffix):
            continue
        rest = word[: -len(suffix)]
        if len(rest) < _MIN_STEM:
            continue
        if suffix == "es" and not rest.endswith(_HISSING_ENDS):
            continue
        if suffix == "s" and word.endswith("ss"):
            continue
        return rest
    return word


def tokenize(text: str, drop_stopwords: bool = True) -> list[str]:
    """Turn ``text`` into stemmed tokens (see the module docstring for the rules).

    >>> tokenize("The laser shows LC-0417 after cutting!")
    ['laser', 'show', 'lc-0417', 'cutt']
    """
    _check_text(text)
    words = TOKEN_PATTERN.findall(text.lower())
    if drop_stopwords:
        words = [w for w in words if w not in STOPWORDS]
    return [stem(w) for w in words]


_SENTENCE_BREAK = re.compile(r"(?<=[.!?])\s+")


def split_sentences(text: str) -> list[str]:
    """Split after every ``.``, ``!`` or ``?`` that is followed by whitespace.

    Each piece is stripped and empty pieces are dropped; the end mark stays
    with its sentence. ``"Hi. Ok!  Go"`` -> ``["Hi.", "Ok!", "Go"]``.
    """
    _check_text(text)
    pieces = (p.strip() for p in _SENTENCE_BREAK.split(text))
    return [p for p in pieces if p]


# A hand-made stand-in for what a trained embedding model learns from data:
# words that mean the same thing in this corpus share one concept word. It is
# fitted to data/helpcentre only (its paraphrased questions and the wording of
# its pages), so it is no general thesaurus.
SYNONYMS: dict[str, str] = {
    # what a fault code stands for (laser)
    "signal": "mean",
    "indicate": "mean",
    # leaving, and getting money back (billing)
    "quit": "cancel",
    "resign": "cancel",
    "reimbursed": "refund",
    "repaid": "refund",
    "cash": "money",
    "fee": "money",
    # asking for a price (lockers, guest passes)
    "much": "cost",
    "price": "cost",
    # booking slots (booking)
    "reserve": "book",
    "reserved": "book",
    "skip": "miss",
    "session": "slot",
    # people brought along (guests)
    "friend": "guest",
    "visitor": "guest",
    # opening times (hours)
    "weekend": "saturday",
    "sunday": "saturday",
    "shut": "close",
    "closing": "close",
}

# tokens are stemmed, so the keys must be stemmed the same way to be found
_CONCEPTS: dict[str, str] = {stem(k): v for k, v in SYNONYMS.items()}


def concept(token: str) -> str:
    """Map a token to its shared concept word, or return it unchanged.

    ``token`` is a token as :func:`tokenize` makes it (already stemmed); the
    table keys are stemmed at import time, so ``concept(stem("quit"))`` is
    ``"cancel"``.
    """
    return _CONCEPTS.get(token, token)
