"""ragkit.text: tokens, stems, stopwords, sentences and the synonym table.

Every expected value below was worked out by hand from the documented rules.
"""

import pytest

from ragkit.text import (
    STOPWORDS,
    SYNONYMS,
    concept,
    split_sentences,
    stem,
    tokenize,
)


@pytest.mark.parametrize(
    "word, expected",
    [
        ("booking", "book"),  # "ing" goes, "book" keeps 4 letters
        ("weekly", "week"),
        ("opened", "open"),
        ("passes", "pass"),  # "es" after "ss"
        ("benches", "bench"),  # "es" after "ch"
        ("codes", "code"),  # "es" not after a hissing end, so only "s" goes
        ("sizes", "size"),
        ("fees", "fee"),  # "es" would leave 1 letter; "s" leaves 3
        ("glass", "glass"),  # "s" never strips a word ending in "ss"
        ("is", "is"),  # too short for any suffix
        ("bus", "bus"),  # "s" would leave only 2 letters
        ("sing", "sing"),  # "ing" would leave 1 letter
        ("lc-0417", "lc-0417"),
    ],
)
def test_stem_examples(word, expected):
    """Each suffix rule of the docstring, one example per rule."""
    assert stem(word) == expected


def test_tokenize_keeps_hyphenated_codes_whole():
    """Lower-case, hyphen-joined runs stay one token, stopwords go, stems apply."""
    # the, lc-0417, code, re-booked, twice -> drop "the"; "re-booked" loses "ed"
    assert tokenize("The LC-0417 code, re-booked twice!") == [
        "lc-0417",
        "code",
        "re-book",
        "twice",
    ]


def test_tokenize_hyphen_edges_and_apostrophes():
    """Only single hyphens between runs join; an apostrophe splits a word."""
    assert tokenize("saw--blade -edge- 3D") == ["saw", "blade", "edge", "3d"]
    # "member's" -> "member" + "s", and "s" is a stopword
    assert tokenize("member's locker") == ["member", "locker"]


def test_stopwords_are_dropped_before_stemming():
    """'does' is a stopword; stemmed first it would become 'doe' and survive."""
    assert stem("does") == "doe"
    assert tokenize("does") == []
    assert tokenize("does", drop_stopwords=False) == ["doe"]


def test_stopword_list_shape():
    """A frozen set of lower-case single words, of a sensible size."""
    assert isinstance(STOPWORDS, frozenset)
    assert 60 <= len(STOPWORDS) <= 120
    assert all(w == w.lower() and w.isalpha() for w in STOPWORDS)
    assert {"the", "and", "of", "what"} <= STOPWORDS


def test_split_sentences():
    """Split after . ! ? followed by whitespace; strip; drop empty pieces."""
    text = "  Open at ten. Closed Mondays!  Why?\nBecause.  "
    expected = ["Open at ten.", "Closed Mondays!", "Why?", "Because."]
    assert split_sentences(text) == expected
    # no whitespace after the dot, so a version number is not a break
    assert split_sentences("Firmware v1.5 is out. Update it") == [
        "Firmware v1.5 is out.",
        "Update it",
    ]
    assert split_sentences("   ") == []


@pytest.mark.parametrize("func", [tokenize, split_sentences])
def test_non_str_text_is_a_type_error(func):
    """The message names the argument and the type received."""
    with pytest.raises(TypeError, match=r"text must be a str \(got int\)"):
        func(5)


def test_concept_uses_stemmed_keys():
    """Table keys are stemmed at import, so tokens find them."""
    assert concept(stem("quit")) == "cancel"
    assert [concept(t) for t in tokenize("cash reimbursed")] == ["money", "refund"]
    assert concept("lathe") == "lathe"  # not in the table: unchanged


def test_every_synonym_key_reaches_its_concept_through_tokenize():
    """No key is lost to a stopword or to stemming."""
    for word, target in SYNONYMS.items():
        tokens = tokenize(word)
        assert len(tokens) == 1, word
        assert concept(tokens[0]) == target, word
