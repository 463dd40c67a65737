"""ragkit.bm25: the three BM25 effects, edge cases, and a plain-Python reference."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragkit.bm25 import BM25Index
from ragkit.text import tokenize

SHOP = [
    "fault LC-0417 means the lid is open",
    "the bandsaw blade is dull",
    "the bandsaw and the lathe share one dust extractor every day",
]


def reference_scores(texts, query, k1=1.5, b=0.75):
    """Slow BM25 straight from the formula, one document at a time."""
    docs = [tokenize(t) for t in texts]
    n = len(docs)
    avgdl = sum(len(d) for d in docs) / n
    out = []
    for d in docs:
        total = 0.0
        for term in set(tokenize(query)):
            f = d.count(term)
            if f == 0:
                continue
            n_t = sum(1 for other in docs if term in other)
            idf = math.log(1 + (n - n_t + 0.5) / (n_t + 0.5))
            total += idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len(d) / avgdl))
        out.append(total)
    return out


def test_rare_literal_code_wins():
    """Only text 0 holds the code, so it is the one result."""
    assert BM25Index(SHOP).search("LC-0417")[0][0] == "0"
    hits = BM25Index(SHOP).search("what does LC-0417 mean")
    assert [i for i, _ in hits] == ["0"]


def test_no_shared_term_means_no_results():
    """Scores are all zero, and search keeps only positive scores."""
    index = BM25Index(SHOP)
    assert index.search("zebra") == []
    assert index.search("the and of") == []  # stopwords only
    assert not index.scores("zebra").any()


def test_rarer_term_has_higher_idf_and_idf_stays_positive():
    """N=3: idf(lc-0417, n=1) = ln(1+2.5/1.5); idf(bandsaw, n=2) = ln(1+1.5/2.5)."""
    index = BM25Index(SHOP)
    assert index.idf("lc-0417") == pytest.approx(math.log(1 + 2.5 / 1.5))
    assert index.idf("bandsaw") == pytest.approx(math.log(1 + 1.5 / 2.5))
    assert index.idf("lc-0417") > index.idf("bandsaw") > 0
    # a term in every text: ln(1 + 0.5/3.5) = ln(8/7) > 0 (plain log would be < 0)
    everywhere = BM25Index(["bench saw", "bench drill", "bench vice"])
    assert everywhere.idf("bench") == pytest.approx(math.log(8 / 7))
    assert everywhere.idf("bench") > 0
    # an unseen term has n_t = 0: ln(1 + 3.5/0.5) = ln 8
    assert everywhere.idf("lathe") == pytest.approx(math.log(8))


def test_repeats_saturate():
    """More copies of a term add less and less; 8 copies score under 3x one copy."""
    scores = []
    for count in (1, 2, 4, 8):
        text = " ".join(["resin"] * count + ["tray"] * 4)
        scores.append(BM25Index([text, "spool nozzle bed"]).scores("resin")[0])
    gains = [later - earlier for earlier, later in zip(scores, scores[1:])]
    assert all(g > 0 for g in gains)
    assert gains[0] > gains[1] > gains[2]
    assert scores[-1] < 3 * scores[0]


def test_shorter_text_scores_higher_for_the_same_count():
    """Same single 'drill'; the 31-token text is pushed down by length (b > 0)."""
    index = BM25Index(["drill bit", "drill " + "spare " * 30])
    s = index.scores("drill")
    assert s[0] > s[1] > 0
    # with b = 0 length is ignored and both score the same
    flat = BM25Index(["drill bit", "drill " + "spare " * 30], b=0).scores("drill")
    assert flat[0] == pytest.approx(flat[1])


def test_query_terms_count_once_and_ties_keep_corpus_order():
    """'saw saw' equals 'saw'; equal scores come back in corpus order."""
    index = BM25Index(["saw", "drill", "saw"], ids=["a", "b", "c"])
    assert np.array_equal(index.scores("saw saw"), index.scores("saw"))
    hits = index.search("saw")
    assert [i for i, _ in hits] == ["a", "c"]
    assert hits[0][1] == hits[1][1]


def test_search_respects_k_and_default_ids():
    """Default ids are "0", "1", ...; k caps the list."""
    index = BM25Index(SHOP)
    assert [i for i, _ in index.search("bandsaw", k=1)] == ["1"]
    assert len(index.search("bandsaw", k=5)) == 2


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"texts": []}, "texts"),
        ({"texts": SHOP, "k1": -0.1}, "k1"),
        ({"texts": SHOP, "b": 1.5}, r"\bb must"),
        ({"texts": SHOP, "ids": ["a"]}, "ids"),
        ({"texts": SHOP, "ids": ["a", "a", "b"]}, "ids"),
    ],
)
def test_bad_arguments_name_themselves(kwargs, pattern):
    """Every bad constructor argument raises a ValueError that names it."""
    with pytest.raises(ValueError, match=pattern):
        BM25Index(**kwargs)


def test_bad_k():
    """k must be at least 1."""
    with pytest.raises(ValueError, match=r"k must be at least 1 \(got k=0\)"):
        BM25Index(SHOP).search("bandsaw", k=0)


def test_k1_zero_gives_finite_scores():
    """k1 = 0 makes absent terms 0/0 in the raw formula; they must add nothing."""
    s = BM25Index(SHOP, k1=0).scores("bandsaw lathe")
    assert np.all(np.isfinite(s))
    assert s[0] == 0.0


def test_term_matrix_is_sparse_counts():
    """Row 2 of SHOP: bandsaw, lathe, share, one, dust, extractor, every, day."""
    index = BM25Index(SHOP)
    assert index.tf.shape == (3, len(index.vocab))
    assert index.tf[2].sum() == 8
    assert index.doc_len.tolist() == [5, 3, 8]


WORDS = st.sampled_from(["saw", "blade", "lathe", "dust", "the", "lc-0417", "jig"])
TEXTS = st.lists(st.lists(WORDS, max_size=12).map(" ".join), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(
    texts=TEXTS,
    query=st.lists(WORDS, min_size=1, max_size=4).map(" ".join),
    k1=st.floats(0.1, 3.0),
    b=st.floats(0.0, 1.0),
)
def test_scores_match_the_plain_python_reference(texts, query, k1, b):
    """Vectorised scores equal the one-document-at-a-time formula to 1e-9."""
    fast = BM25Index(texts, k1=k1, b=b).scores(query)
    slow = reference_scores(texts, query, k1=k1, b=b)
    assert fast.tolist() == pytest.approx(slow, abs=1e-9)


def test_bm25_idf_agrees_with_the_index_for_every_document_frequency():
    """The scalar IDF of Part A gives the index's value for n_t = 0 .. N."""
    from ragkit.bm25 import bm25_idf

    texts = [" ".join(["bench"] * (i + 1) + [f"w{j}" for j in range(i)]) for i in range(6)]
    index = BM25Index(texts)
    for term, col in index.vocab.items():
        assert bm25_idf(index.n_docs, int(index.df[col])) == pytest.approx(index.idf(term), abs=1e-12)
    assert bm25_idf(6, 0) == pytest.approx(index.idf("never-seen"), abs=1e-12)
    assert bm25_idf(10, 1) == pytest.approx(math.log(1 + 9.5 / 1.5))


@pytest.mark.parametrize("args, name, error", [
    ((0, 0), "n_docs", ValueError),
    ((5, 6), "doc_freq", ValueError),
    ((5, -1), "doc_freq", ValueError),
    ((5.0, 1), "n_docs", TypeError),
    ((5, True), "doc_freq", TypeError),
])
def test_bm25_idf_names_the_bad_argument(args, name, error):
    """A bad N or n_t raises an error that says which one is wrong."""
    from ragkit.bm25 import bm25_idf

    with pytest.raises(error, match=name):
        bm25_idf(*args)


# ------------------------------------------------- storage and fast top k


def test_top_k_equals_a_full_stable_sort():
    """Any length, k and ties: the stable sort of every score, cut to k > 0."""
    from ragkit.bm25 import top_k

    rng = np.random.default_rng(4)
    for trial in range(300):
        n = int(rng.choice([1, 5, 31, 32, 33, 320, 1000, 4097]))
        # few distinct values (many ties), some zero or negative
        scores = rng.integers(-2, 6, size=n) / rng.choice([1.0, 3.0])
        if trial % 3 == 0:
            scores = rng.random(n) * (rng.random(n) < 0.05)  # mostly zero
        k = int(rng.integers(1, 60))
        ids = [f"t{i}" for i in range(n)]
        order = np.argsort(-scores, kind="stable")
        want = [(ids[i], float(scores[i])) for i in order[:k] if scores[i] > 0]
        assert top_k(scores, ids, k) == want, (n, k)


def test_scores_add_the_stored_shares_in_column_order():
    """Scores equal, bit for bit, the float64 shares of weights added term by term."""
    rng = np.random.default_rng(8)
    words = [f"w{i}" for i in range(30)]
    texts = [list(rng.choice(words, size=rng.integers(0, 40))) for _ in range(60)]
    index = BM25Index(texts, tokenizer=None, k1=1.2, b=0.6)
    weights = index.weights.toarray()
    assert weights.dtype == np.float64
    assert np.array_equal(index.tf.toarray() > 0, weights > 0)
    for _ in range(20):
        query = list(rng.choice(words, size=4))
        total = np.zeros(len(texts))
        for col in index.query_columns(query):
            total += weights[:, col]
        assert np.array_equal(index.scores(query), total)


def test_index_keeps_small_integers_per_entry():
    """A (term, text) entry costs a row and a kind number, not a float."""
    index = BM25Index([f"saw blade {'dust ' * i}" for i in range(300)])
    entries = int(index.df.sum())
    assert index._rows.dtype == np.uint16  # 300 texts
    # lengths 2 .. 301 and counts 1 .. 299 make more than 256 kinds
    assert len(index.gain_table) > 256 and index._kinds.dtype == np.uint16
    per_entry = sum(a.nbytes for a in vars(index).values()
                    if isinstance(a, np.ndarray) and len(a) == entries)
    assert per_entry == 4 * entries
    assert index.tf[5].sum() == index.doc_len[5] == 7
    slow = reference_scores([f"saw blade {'dust ' * i}" for i in range(300)], "dust saw")
    assert index.scores("dust saw").tolist() == pytest.approx(slow, abs=1e-12)


def test_default_ids_behave_as_the_list_of_row_numbers():
    """ids=None: "0" .. "n-1", indexed, sliced, compared and searched like a list."""
    index = BM25Index(SHOP)
    names = ["0", "1", "2"]
    assert index.ids == names and list(index.ids) == names
    assert index.ids[-1] == "2" and index.ids[1:] == ["1", "2"]
    assert "2" in index.ids and "3" not in index.ids and "02" not in index.ids
    assert 2 not in index.ids and len(index.ids) == 3
    with pytest.raises(IndexError):
        index.ids[3]
    assert BM25Index(SHOP, ids=names).search("bandsaw") == index.search("bandsaw")


@pytest.mark.parametrize("top", [1, 50, 10**9])  # a table of codes, then a sort
def test_the_build_helpers_give_what_np_unique_gives(top):
    """The index counts (term, text) pairs and numbers the kinds with two
    helpers that avoid np.unique's copies; they must agree with it."""
    from ragkit.bm25 import _distinct, _runs

    rng = np.random.default_rng(top)
    for n in (0, 1, 7, 5000):
        codes = rng.integers(0, top, size=n)
        kinds, kind_of = _distinct(codes)
        want_kinds, want_of = np.unique(codes, return_inverse=True)
        assert np.array_equal(kinds, want_kinds) and np.array_equal(kind_of, want_of)
        keys = np.sort(codes)
        values, counts = _runs(keys)
        want_values, want_counts = np.unique(codes, return_counts=True)
        assert np.array_equal(values, want_values) and np.array_equal(counts, want_counts)
