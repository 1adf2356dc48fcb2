"""Confidence intervals for means of values in [0, 1].

- Every value 0 or 1: the Wilson score interval (good coverage at small n and near 0 or 1).
- Otherwise: Student's t interval on the mean, clipped to [0, 1]; with one value, [0, 1].
Both are 95 % intervals and always bracket the mean.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Z95", "mean_ci", "wilson"]

Z95 = 1.959963984540054


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion."""
    if n <= 0:
        return (math.nan, math.nan)
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, min(p, center - half)), min(1.0, max(p, center + half)))


def mean_ci(values: np.ndarray) -> tuple[float | None, float, float]:
    """Mean and 95 % CI of counted values; `(None, nan, nan)` when there are none."""
    n = int(values.size)
    if n == 0:
        return (None, math.nan, math.nan)
    mean = float(values.mean())
    mean = min(1.0, max(0.0, mean))  # float summation can drift a hair past the bounds
    if bool(np.all((values == 0.0) | (values == 1.0))):
        lo, hi = wilson(float(values.sum()), n)
        return (mean, lo, hi)
    if n == 1:
        return (mean, 0.0, 1.0)
    from scipy import stats  # lazy: scipy is slow to import

    sd = float(values.std(ddof=1))
    half = float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)
    return (mean, max(0.0, mean - half), min(1.0, mean + half))
