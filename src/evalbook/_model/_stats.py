"""Confidence intervals for means of values in [0, 1].

- Every value 0 or 1: the Wilson score interval (good coverage at small n and near 0 or 1).
- Otherwise: Student's t interval on the mean, its part within [0, 1] (the range of the mean,
  so its coverage stays 95 %); with one value, [0, 1].
Both are 95 % intervals and always bracket the mean.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["Z95", "cluster_se", "mean_ci", "t975", "wilson"]

Z95 = 1.959963984540054
# Student t 0.975 quantiles for 1..60 degrees of freedom (scipy.stats.t.ppf(0.975, df));
# beyond, the Cornish-Fisher series below is within 1e-9 of them.
_T975 = (
    12.706204736174694,
    4.302652729749462,
    3.1824463052837078,
    2.7764451051977934,
    2.5705818356363146,
    2.4469118511449786,
    2.364624251592784,
    2.306004135204166,
    2.262157162798205,
    2.228138851986274,
    2.200985160091639,
    2.1788128296672284,
    2.1603686564627913,
    2.144786687917804,
    2.131449545559776,
    2.1199052992212546,
    2.1098155778333156,
    2.1009220402410382,
    2.0930240544083087,
    2.085963447265864,
    2.0796138447276795,
    2.0738730679040254,
    2.0686576104190486,
    2.0638985616280245,
    2.0595385527532972,
    2.0555294386428735,
    2.0518305164802846,
    2.0484071417952454,
    2.045229642132703,
    2.0422724563012378,
    2.039513446396408,
    2.0369333434601016,
    2.0345152974493383,
    2.0322445093177186,
    2.030107928250343,
    2.0280940009804502,
    2.0261924630291093,
    2.0243941639119694,
    2.022690920036761,
    2.021075390306273,
    2.019540970441376,
    2.0180817028184443,
    2.016692199227824,
    2.0153675744437636,
    2.014103388880846,
    2.012895598919429,
    2.0117405137297655,
    2.010634757624232,
    2.0095752371292392,
    2.008559112100761,
    2.007583770315836,
    2.006646805061688,
    2.0057459953178687,
    2.0048792881880564,
    2.0040447832891455,
    2.003240718847872,
    2.002465459291007,
    2.0017174841452356,
    2.000995378088267,
    2.0002978220142604,
)


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval for a proportion; within [0, 1] and around `successes / n`.

    Each bound is written in the form without cancellation (the lower bound's numerator
    times its conjugate): `s² / (n (s + z²/2 + z R))`, `R = sqrt(s (n - s) / n + z²/4)`, and
    the upper bound is `1 -` the same with `n - s` failures. A non-negative quotient, and 1
    minus one, cannot leave [0, 1] in floating point, so nothing is clamped.
    """
    if n <= 0:
        return (math.nan, math.nan)
    s, f = float(successes), float(n - successes)
    root = z * math.sqrt(s * f / n + z * z / 4)
    low = s * s / (n * (s + z * z / 2 + root))
    high = 1.0 - f * f / (n * (f + z * z / 2 + root))
    return (low, high)


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (no scipy import).

    A table up to 60, then the Cornish-Fisher expansion (Abramowitz & Stegun 26.7.5),
    within 1e-9 of `scipy.stats.t.ppf(0.975, df)` everywhere.

    Example:
        >>> round(t975(10), 6)
        2.228139
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = Z95
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    g4 = (79 * z**9 + 776 * z**7 + 1482 * z**5 - 1920 * z**3 - 945 * z) / 92160
    v = float(df)
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def mean_ci(values: np.ndarray) -> tuple[float | None, float, float]:
    """Mean and 95 % CI of counted values; `(None, nan, nan)` when there are none."""
    n = int(values.size)
    if n == 0:
        return (None, math.nan, math.nan)
    # not clamped: rounding is monotonic, so a float sum of n values each in [0, 1] is at
    # most n (representable), and that sum over n at most 1 (tests/faults/test_stats_bounds.py)
    mean = float(values.mean())
    if bool(np.all((values == 0.0) | (values == 1.0))):
        lo, hi = wilson(float(values.sum()), n)
        return (mean, lo, hi)
    if n == 1:
        return (mean, 0.0, 1.0)
    sd = float(values.std(ddof=1))
    half = t975(n - 1) * sd / math.sqrt(n)  # not scipy: importing scipy.stats takes ~1.5 s
    # the t interval itself can pass 0 or 1 (e.g. [0, 0.5]: ±3.2); its part within [0, 1],
    # where every mean of such values lies, keeps its 95 % coverage: the interval shown
    return (mean, max(0.0, mean - half), min(1.0, mean + half))


def cluster_se(values: np.ndarray, clusters: np.ndarray) -> tuple[float, int]:
    """The cluster-robust standard error of the mean of `values`, and the number of clusters.

    SE² = C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))² / n² (Miller 2024, App. A), where `clusters`
    holds each value's cluster as an integer code (>= 0). With every value its own cluster
    this is s²/n, the usual standard error. NaN with fewer than 2 clusters (no spread to
    see). A CI from it uses `t975(C - 1)`.

    Example:
        >>> x = np.array([1.0, 0.0, 1.0, 1.0])
        >>> se, c = cluster_se(x, np.arange(4))
        >>> round(se, 6) == round(float(x.std(ddof=1) / 2), 6), c
        (True, 4)
    """
    n = int(values.size)
    codes, sums_of = np.unique(clusters, return_inverse=True)
    c = int(codes.size)
    if n == 0 or c < 2:
        return (math.nan, c)
    dev = values - values.mean()
    per_cluster = np.bincount(sums_of, weights=dev, minlength=c)
    se2 = c / (c - 1) * float(np.dot(per_cluster, per_cluster)) / (n * n)
    return (math.sqrt(se2), c)
