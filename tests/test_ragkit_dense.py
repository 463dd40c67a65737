"""ragkit.dense: the hashed toy embedder, its plain-Python twin, and DenseIndex."""

import math
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.bm25 import BM25Index
from ragkit.dense import DenseIndex, HashedEmbedder, feature_bucket, trigrams
from ragkit.text import concept, tokenize


def reference_embed(text, idf, dim):
    """The embed recipe of the module docstring, written with lists only."""
    out = [0.0] * dim
    fallback = max(idf.values()) if idf else 1.0
    concepts = [concept(token) for token in tokenize(text)]
    for word in concepts:
        scale = idf[word] if word in idf else fallback
        marked = "<" + word + ">"
        pieces = [("w:" + word, 1.0)]
        for start in range(len(marked) - 2):
            pieces.append(("g:" + marked[start : start + 3], 0.3))
        for name, factor in pieces:
            h = zlib.crc32(name.encode("utf-8"))
            out[h % dim] += factor * scale * (1.0 if (h >> 24) & 1 else -1.0)
    length = math.sqrt(sum(x * x for x in out))
    return [x / length for x in out] if length else out


def test_feature_bucket_follows_the_documented_hash():
    """index = crc32 % dim, sign from bit 24."""
    h = zlib.crc32(b"w:saw")
    expected_sign = 1.0 if (h >> 24) & 1 else -1.0
    assert feature_bucket("w:saw", 256) == (h % 256, expected_sign)
    index, sign = feature_bucket("g:<sa", 7)
    assert 0 <= index < 7 and sign in (1.0, -1.0)
    with pytest.raises(ValueError, match="dim"):
        feature_bucket("w:saw", 0)


def test_trigrams_of_a_marked_word():
    """'fee' -> '<fee>' -> three slices of three letters."""
    assert trigrams("fee") == ["<fe", "fee", "ee>"]
    assert trigrams("a") == ["<a>"]


def test_fit_idf_by_hand():
    """N=2: 'saw' in both texts -> ln(1 + 2/2); 'blade' in one -> ln(1 + 2/1)."""
    emb = HashedEmbedder().fit(["saw blade", "saw saw"])
    assert emb.idf == pytest.approx({"saw": math.log(2), "blade": math.log(3)})


def test_embed_gives_the_same_unit_vector_every_time():
    """Two fresh embedders fitted on the same texts give identical unit vectors."""
    texts = ["the bandsaw blade is dull", "book the laser cutter"]
    a = HashedEmbedder(dim=64).fit(texts).embed("dull bandsaw blade")
    b = HashedEmbedder(dim=64).fit(texts).embed("dull bandsaw blade")
    assert a.dtype == np.float64 and a.shape == (64,)
    assert np.array_equal(a, b)
    assert np.linalg.norm(a) == pytest.approx(1.0)


def test_text_without_tokens_embeds_to_zeros():
    """Only stopwords: nothing to hash, so the zero vector (not NaN)."""
    v = HashedEmbedder().fit(["saw"]).embed("the of and")
    assert not v.any()


def test_look_alike_codes_are_close():
    """lc-0417 and lc-0418 share 5 of 7 trigrams: cosine near 5*0.09/1.63 = 0.28."""
    emb = HashedEmbedder()
    a, b = emb.embed("LC-0417"), emb.embed("LC-0418")
    # hash collisions could nudge it, so a band around the hand value
    assert 0.2 < float(a @ b) < 0.36


def test_synonyms_let_dense_match_a_paraphrase_that_bm25_misses():
    """No query token is in either text, but quit/cash/reimbursed map to
    cancel/money/refund, which the first text contains."""
    texts = [
        "If you cancel early, the refund of your fee reaches your card in ten days.",
        "The lathe needs a steward nearby.",
    ]
    query = "how soon is my cash reimbursed if I quit"
    assert BM25Index(texts).search(query) == []
    hits = DenseIndex(texts).search(query)
    assert hits[0][0] == "0"


def test_dense_index_search_rules():
    """Cosine scores, positive only, at most k, ties in corpus order."""
    index = DenseIndex(["jig saw", "jig saw", "spool"], ids=["a", "b", "c"])
    hits = index.search("jig saw", k=2)
    assert [i for i, _ in hits] == ["a", "b"]
    assert hits[0][1] == pytest.approx(1.0)
    assert all(s > 0 for _, s in index.search("jig saw", k=3))
    assert index.vectors.shape == (3, 256)
    with pytest.raises(ValueError, match="texts"):
        DenseIndex([])
    with pytest.raises(ValueError, match="k"):
        index.search("saw", k=0)


def test_embed_many_stacks_rows():
    """One row per text, same as embedding one by one; empty input is (0, dim)."""
    emb = HashedEmbedder(dim=32).fit(["saw", "drill"])
    rows = emb.embed_many(["saw", "drill press"])
    assert np.array_equal(rows[1], emb.embed("drill press"))
    assert emb.embed_many([]).shape == (0, 32)


WORDS = st.sampled_from(
    ["saw", "sawing", "blade", "quit", "cash", "LC-0417", "the", "lathe", "fees"]
)
SENTENCE = st.lists(WORDS, max_size=8).map(" ".join)


@settings(max_examples=100, deadline=None, derandomize=True, database=None)
@given(corpus=st.lists(SENTENCE, max_size=5), text=SENTENCE, dim=st.integers(1, 64))
def test_embed_matches_the_plain_python_reference(corpus, text, dim):
    """Same numbers as the list-based recipe, including unseen concepts."""
    emb = HashedEmbedder(dim=dim).fit(corpus)
    expected = reference_embed(text, emb.idf, dim)
    assert emb.embed(text).tolist() == pytest.approx(expected, abs=1e-12)
