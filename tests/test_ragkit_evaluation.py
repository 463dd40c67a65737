"""ragkit.evaluation: bootstrap intervals (and the whole-evaluation helpers)."""

import numpy as np
import pytest

from ragkit.evaluation import bootstrap_interval


def test_interval_brackets_the_mean_and_is_reproducible():
    values = [1.0] * 30 + [0.0] * 13
    low, high = bootstrap_interval(values, seed=3)
    assert low < np.mean(values) < high
    assert (low, high) == bootstrap_interval(values, seed=3)


def test_constant_values_have_no_spread():
    assert bootstrap_interval([0.5] * 20) == (0.5, 0.5)


def test_quadrupling_the_questions_roughly_halves_the_width():
    rng = np.random.default_rng(0)
    small = rng.integers(0, 2, 50).astype(float)
    large = np.tile(small, 4)
    w_small = np.subtract(*bootstrap_interval(small)[::-1])
    w_large = np.subtract(*bootstrap_interval(large)[::-1])
    assert 0.4 < w_large / w_small < 0.6, (w_small, w_large)


def test_interval_matches_a_plain_loop_over_the_same_draws():
    values = np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.5])
    rng = np.random.default_rng(7)
    picks = rng.integers(0, len(values), size=(500, len(values)))
    means = sorted(sum(values[i] for i in row) / len(row) for row in picks)
    want = np.quantile(means, [0.05, 0.95])
    got = bootstrap_interval(values, level=0.9, n_boot=500, seed=7)
    assert np.allclose(got, want, atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, name",
    [({"values": []}, "values"), ({"values": [[1.0]]}, "values"),
     ({"values": [1.0, float("nan")]}, "values"),
     ({"values": [1.0], "level": 1.0}, "level"),
     ({"values": [1.0], "n_boot": 0}, "n_boot")],
)
def test_bad_arguments_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        bootstrap_interval(**kwargs)
