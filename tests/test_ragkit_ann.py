"""ragkit.ann: exact search, the IVF index, neighbour recall (small sizes)."""

import numpy as np
import pytest

from ragkit.ann import IVFIndex, exact_search, neighbour_recall


def unit_rows(n, dim, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def blobs(n, dim, n_blobs, seed):
    """Unit vectors in tight groups around ``n_blobs`` directions."""
    rng = np.random.default_rng(seed)
    centres = unit_rows(n_blobs, dim, seed + 1)
    x = centres[rng.integers(0, n_blobs, n)] + 0.05 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def brute_force(vectors, queries, k):
    """Every score, fully sorted: best first, equal scores by index."""
    sims = queries.astype(np.float64) @ vectors.T.astype(np.float64)
    order = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return order, np.take_along_axis(sims, order, axis=1)


def test_exact_search_equals_a_full_sort():
    """Indices equal a stable sort of all scores; scores match to float32."""
    x, q = unit_rows(500, 16, 0), unit_rows(30, 16, 1)
    idx, scores = exact_search(x, q, k=7)
    want_idx, want_scores = brute_force(x, q, 7)
    assert idx.shape == scores.shape == (30, 7)
    assert np.array_equal(idx, want_idx)
    assert np.allclose(scores, want_scores, atol=1e-5)


def test_exact_search_pads_when_k_exceeds_the_vectors():
    """Four vectors, k = 6: two slots of index -1 and score -inf."""
    x = unit_rows(4, 8, 2)
    idx, scores = exact_search(x, x[:1], k=6)
    assert idx[0, 0] == 0  # a vector is its own best match
    assert sorted(idx[0, :4].tolist()) == [0, 1, 2, 3]
    assert idx[0, 4:].tolist() == [-1, -1]
    assert np.isneginf(scores[0, 4:]).all()


def test_equal_scores_come_in_index_order():
    """Three copies of one vector tie; the lowest index comes first."""
    x = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0]], dtype=np.float32)
    idx, _ = exact_search(x, np.array([[1.0, 0.0]]), k=3)
    assert idx.tolist() == [[1, 2, 3]]


def test_a_tie_across_the_kth_place_keeps_the_smallest_indices():
    """Five equal scores compete for two places: indices 0 and 1 win."""
    x = np.ones((5, 3), dtype=np.float32)
    idx, _ = exact_search(x, x[:1], k=2)
    assert idx.tolist() == [[0, 1]]
    # many copies, so argpartition would be free to pick any of them
    many = np.vstack([np.zeros((1, 3)), np.ones((300, 3))]).astype(np.float32)
    idx, _ = exact_search(many, many[1:2], k=4)
    assert idx.tolist() == [[1, 2, 3, 4]]


def test_ivf_orders_equal_scores_by_index_across_lists():
    """Equal scores found in two probed lists come out smallest index first."""
    x = np.array([[1, 0], [0, 1], [1, 0], [0, 1], [1, 0], [0, 1]],
                 dtype=np.float32)
    index = IVFIndex(x, n_lists=2, seed=0)
    idx, scores = index.search(np.array([[1.0, 1.0]]), k=5, nprobe=2)
    assert idx.tolist() == [[0, 1, 2, 3, 4]]
    assert np.allclose(scores, 1.0)


def test_ivf_probing_every_list_is_exact():
    """nprobe = n_lists compares the query with every vector: recall 1.0."""
    x, q = unit_rows(600, 12, 3), unit_rows(40, 12, 4)
    index = IVFIndex(x, n_lists=8, seed=0)
    found, scores = index.search(q, k=10, nprobe=8)
    truth, true_scores = exact_search(x, q, k=10)
    assert neighbour_recall(found, truth) == 1.0
    assert np.allclose(scores, true_scores, atol=1e-6)
    assert len(index) == 600
    assert index.list_sizes.sum() == 600


def test_ivf_is_deterministic_for_a_seed():
    """Same data and seed give the same lists and the same answers."""
    x, q = blobs(400, 8, 5, 5), unit_rows(10, 8, 6)
    a = IVFIndex(x, n_lists=6, seed=3, train_size=200)
    b = IVFIndex(x, n_lists=6, seed=3, train_size=200)
    assert np.array_equal(a.centroids, b.centroids)
    assert np.array_equal(a.search(q, 5, 2)[0], b.search(q, 5, 2)[0])


def test_clustered_data_needs_few_lists_and_uniform_data_many():
    """With tight clusters one probed list already finds most neighbours.

    On uniform random vectors the same index size and nprobe = 1 finds far
    fewer: their neighbours are spread over many lists.
    """
    grouped = blobs(2000, 16, 10, 7)
    index = IVFIndex(grouped, n_lists=10, seed=0)
    q = grouped[::50]
    truth, _ = exact_search(grouped, q, 10)
    clustered_recall = neighbour_recall(index.search(q, 10, 1)[0], truth)
    flat = unit_rows(2000, 16, 8)
    flat_index = IVFIndex(flat, n_lists=10, seed=0)
    flat_truth, _ = exact_search(flat, flat[::50], 10)
    flat_recall = neighbour_recall(flat_index.search(flat[::50], 10, 1)[0], flat_truth)
    assert clustered_recall >= 0.95
    assert flat_recall < clustered_recall - 0.2


def test_a_probed_list_smaller_than_k_pads_the_row():
    """Two far-apart pairs, two lists, k = 3, nprobe = 1: one slot is -1."""
    x = np.array([[1, 0], [0.99, 0.14], [-1, 0], [-0.99, -0.14]], dtype=np.float32)
    index = IVFIndex(x, n_lists=2, seed=0)
    idx, scores = index.search(np.array([[1.0, 0.0]]), k=3, nprobe=1)
    assert idx[0].tolist() == [0, 1, -1]
    assert np.isneginf(scores[0, 2])


def test_neighbour_recall_counts_shared_ids_per_row():
    """Rows find 2 and 3 of 3 (mean 5/6); with k = 2, 1 of 2 each."""
    truth = np.array([[1, 2, 3], [4, 5, 6]])
    found = np.array([[3, 1, 9], [6, 5, 4]])
    assert neighbour_recall(found, truth) == pytest.approx(5 / 6)
    assert neighbour_recall(found, truth, k=2) == pytest.approx(0.5)


X = unit_rows(50, 4, 9)


@pytest.mark.parametrize(
    "call, error, name",
    [
        (lambda: IVFIndex(X, n_lists=0), ValueError, "n_lists"),
        (lambda: IVFIndex(X, n_lists=51), ValueError, "n_lists"),
        (lambda: IVFIndex(X, n_lists=2.5), TypeError, "n_lists"),
        (lambda: IVFIndex(X, n_lists=5, train_size=3), ValueError, "train_size"),
        (lambda: IVFIndex(X[:0], n_lists=1), ValueError, "vectors"),
        (lambda: IVFIndex(X[0], n_lists=1), ValueError, "vectors"),
        (lambda: IVFIndex(X, n_lists=2).search(X[:2], k=0), ValueError, "k"),
        (lambda: IVFIndex(X, n_lists=2).search(X[:2], nprobe=3), ValueError, "nprobe"),
        (lambda: IVFIndex(X, n_lists=2).search(X[:2, :3]), ValueError, "queries"),
        (lambda: exact_search(X, X[:2], k=True), TypeError, "k"),
        (lambda: exact_search(X, np.full((1, 4), np.nan)), ValueError, "queries"),
        (lambda: exact_search([["a"]], X[:1]), TypeError, "vectors"),
        (lambda: neighbour_recall(np.zeros((2, 3)), np.zeros((3, 3))), ValueError,
         "found and truth"),
    ],
)
def test_bad_arguments_name_themselves(call, error, name):
    """Each wrong argument raises an error whose message starts with its name."""
    with pytest.raises(error, match=f"^{name}"):
        call()


# ------------------------------------------------ the list-at-a-time search


def one_query_at_a_time(index, vectors, query, k, nprobe):
    """The plain algorithm: gather the probed lists' members, stable-sort them.

    Which lists a query probes and which list a vector is in are taken from
    the index, so that only the search over the lists is compared.
    """
    probed = index._nearest_lists(query[None, :], nprobe)[0]
    home = index._nearest_lists(vectors, 1)[:, 0]
    members = np.flatnonzero(np.isin(home, probed))
    sims = vectors[members].astype(np.float64) @ query.astype(np.float64)
    top = np.argsort(-sims, kind="stable")[:k]
    ids = np.full(k, -1)
    ids[: len(top)] = members[top]
    return ids


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
def test_ivf_equals_the_plain_algorithm_on_tied_grids():
    """Grid vectors (exact scores, many ties): ids equal a per-query stable sort."""
    rng = np.random.default_rng(21)
    for trial in range(40):
        n, dim = int(rng.integers(5, 200)), int(rng.integers(1, 6))
        x = (np.round(2 * rng.standard_normal((n, dim))) / 2).astype(np.float32)
        q = (np.round(2 * rng.standard_normal((9, dim))) / 2).astype(np.float32)
        n_lists = int(rng.integers(1, min(n, 9) + 1))
        nprobe, k = int(rng.integers(1, n_lists + 1)), int(rng.integers(1, 30))
        index = IVFIndex(x, n_lists, seed=trial)
        found, scores = index.search(q, k, nprobe)
        for row, query in enumerate(q):
            want = one_query_at_a_time(index, x, query, k, nprobe)
            assert found[row].tolist() == want.tolist(), (trial, row)
            real = want >= 0
            assert np.array_equal(scores[row][real], x[want[real]] @ query)
            assert np.isneginf(scores[row][~real]).all()


def test_a_batch_of_queries_gives_each_query_its_own_answer():
    """Searching queries together or one by one: the same ids and scores, to the bit."""
    x, q = blobs(3000, 24, 12, 30), unit_rows(60, 24, 31)
    index = IVFIndex(x, n_lists=20, seed=0)
    together = index.search(q, 15, 3)
    for row in range(len(q)):
        alone = index.search(q[row : row + 1], 15, 3)
        assert np.array_equal(alone[0][0], together[0][row])
        assert np.array_equal(alone[1][0], together[1][row])


@pytest.mark.filterwarnings("ignore:Number of distinct clusters")
def test_small_blocks_and_empty_lists_change_nothing(monkeypatch):
    """A tiny memory budget splits the work; a list with no vectors is skipped."""
    import ragkit.ann as ann

    # two distinct points for three lists: k-means repeats a centroid, and
    # the repeat's list stays empty
    x = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 0]], dtype=np.float32)
    index = IVFIndex(x, n_lists=3, seed=0)
    assert 0 in index.list_sizes
    idx, _ = index.search(np.array([[1.0, 0.2]]), k=4, nprobe=3)
    assert idx.tolist() == [[0, 1, 4, 2]]
    y, q = blobs(800, 8, 6, 40), unit_rows(30, 8, 41)
    index = IVFIndex(y, n_lists=12, seed=0)
    want = index.search(q, 7, 4)
    monkeypatch.setattr(ann, "_BLOCK_CELLS", 64)
    got = index.search(q, 7, 4)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_a_tie_across_the_kth_place_inside_one_list():
    """Forty copies in one list compete for three places: the smallest ids win."""
    x = np.vstack([np.tile([[0.0, 1.0]], (40, 1)), [[1.0, 0.0]] * 5]).astype(np.float32)
    index = IVFIndex(x, n_lists=2, seed=0)
    idx, scores = index.search(np.array([[0.0, 1.0], [1.0, 1.0]]), k=3, nprobe=1)
    assert idx[0].tolist() == [0, 1, 2]
    assert idx[1].tolist() in ([0, 1, 2], [40, 41, 42])
    idx, _ = index.search(np.array([[1.0, 1.0]]), k=3, nprobe=2)
    assert idx.tolist() == [[0, 1, 2]]
