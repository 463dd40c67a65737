"""Measuring a retrieval set-up: confidence intervals and whole evaluations.

Notebook 07 builds these pieces by hand; notebooks 08 and 09 and the project
import them from here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["bootstrap_interval"]


def bootstrap_interval(
    values: Sequence[float],
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """A percentile bootstrap interval for the mean of ``values``.

    ``values`` holds one number per question (a hit is 1.0 or 0.0). Resampling
    questions with replacement ``n_boot`` times shows how much the mean would
    move with another draw of questions of the same size; the interval is the
    central ``level`` share of those means. Seeded, so it is reproducible.
    """
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError(
            f"values must be a non-empty 1-D sequence (got shape {data.shape})")
    if not np.isfinite(data).all():
        raise ValueError("values must be finite numbers")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1 (got level={level})")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ValueError(f"n_boot must be a positive int (got n_boot={n_boot!r})")
    rng = np.random.default_rng(seed)
    # one row of indices per resample: questions drawn with replacement
    picks = rng.integers(0, data.size, size=(n_boot, data.size))
    means = data[picks].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)
