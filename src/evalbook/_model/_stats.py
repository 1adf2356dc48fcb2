"""Confidence intervals for means of values in [0, 1] (docs/statistics.md).

One rule, for a whole run and for every slice alike (`grouped_ci`; `mean_ci` is its one-group
form). With n counted values in C clusters (without `cluster=`, each value is its own
cluster, C = n):

- no cluster given and every value 0 or 1: the Wilson score interval (good coverage at
  small n and near 0 or 1);
- no cluster given, other values in [0, 1]: the Wilson interval of n / φ trials, φ the
  share of the variance mean · (1 − mean) the values show, estimated with a 0 and a 1 of
  weight 1/4 added (`_spread_trials`): it holds 95 % for skewed values (pass@k near 1) from
  n = 20, where the t interval does not;
- clusters given: mean ± t975(C − 1) · SE, SE the cluster-robust standard error
  (`cluster_se`), its part within [0, 1] (the range of the mean, so its coverage stays
  95 %);
- degenerate samples, where the data show no spread to estimate (one cluster, every value
  equal, an SE below `NO_SPREAD`, or a t interval too narrow to move its bounds in floating
  point): the Wilson interval of the mean as a proportion of C trials,
  `wilson(mean · C, C)`. A value in [0, 1] has at most the variance mean · (1 − mean) of a
  0/1 value with that mean, so this is the interval of the widest spread the mean allows,
  and it narrows as C grows: one value 0.3 gives about [0.02, 0.90], 33 values 0.3 give
  about [0.17, 0.47] (never a zero-width interval, never a different rule for n = 1).

Every interval is a 95 % interval and brackets the mean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = [
    "NO_SPREAD",
    "Z95",
    "GroupedCI",
    "cluster_se",
    "grouped_ci",
    "mean_ci",
    "t975",
    "wilson",
    "wilson_arrays",
]

Z95 = 1.959963984540054
# An SE below this is the rounding of the values (or of their differences), not a spread:
# values in [0, 1] (deltas in [-1, 1]) round at ~1e-16, and no real sample has an SE of 1e-12.
NO_SPREAD = 1e-12
# the weight of the 0 and the 1 the spread-scaled Wilson interval adds to the values' spread
# (`_spread_trials`): the least of 1, 1/2, 1/4 that kept 95 % in every design of
# benchmarks/sim_bounded_coverage.py
_ADDED = 0.25
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

    Example:
        >>> [round(b, 4) for b in wilson(3, 4)]
        [0.3006, 0.9544]
    """
    if n <= 0:
        return (math.nan, math.nan)
    low, high = wilson_arrays(np.array([float(successes)]), np.array([float(n)]), z)
    return (float(low[0]), float(high[0]))


def wilson_arrays(s: np.ndarray, n: np.ndarray, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """`wilson` for arrays of successes and trials (every n > 0).

    Each bound is written in the form without cancellation (the lower bound's numerator
    times its conjugate): `s² / (n (s + z²/2 + z R))`, `R = sqrt(s (n - s) / n + z²/4)`, and
    the upper bound is `1 -` the same with `n - s` failures. A non-negative quotient, and 1
    minus one, cannot leave [0, 1] in floating point, so nothing is clamped. `s` may be a
    fraction (the degenerate rule passes mean · C).
    """
    f = n - s
    root = z * np.sqrt(s * f / n + z * z / 4)
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
    """Mean and 95 % CI of counted values; `(None, nan, nan)` when there are none.

    The rule of this module's docstring, each value its own cluster.

    Example:
        >>> mean, low, high = mean_ci(np.array([0.2, 0.4, 0.9]))
        >>> round(mean, 4), round(low, 4), round(high, 4)
        (0.5, 0.0, 1.0)
    """
    got = grouped_ci(np.asarray(values, dtype=np.float64), np.zeros(np.size(values), np.int64), 1)
    if got.n[0] == 0:
        return (None, math.nan, math.nan)
    return (float(got.mean[0]), float(got.low[0]), float(got.high[0]))


@dataclass(frozen=True)
class GroupedCI:
    """Per group: counted values `n`, `mean`, 95 % CI `low`/`high`, `n_clusters`, `se`."""

    n: np.ndarray
    mean: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_clusters: np.ndarray
    se: np.ndarray


def _cluster_parts(
    values: np.ndarray, groups: np.ndarray, n_groups: int, clusters: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group: n, mean, the cluster-robust SE and the number of clusters.

    SE² = C/(C−1) · Σ_c (Σ_{i∈c} (x_i − x̄))² / n² (Miller 2024, App. A) within each group;
    `clusters=None`: each value its own cluster (then SE² = s²/n). NaN SE below 2 clusters.
    """
    n = np.bincount(groups, minlength=n_groups).astype(np.int64)
    total = np.bincount(groups, weights=values, minlength=n_groups)
    mean = np.divide(total, n, out=np.full(n_groups, math.nan), where=n > 0)
    dev = values - mean[groups] if values.size else values
    if clusters is None:
        per_cluster, cluster_group, c = dev, groups, n
    else:
        # one integer per (group, cluster) present: its deviations add up within it
        width = int(clusters.max()) + 1 if clusters.size else 1
        pairs, inverse = np.unique(groups.astype(np.int64) * width + clusters, return_inverse=True)
        per_cluster = np.bincount(inverse.reshape(-1), weights=dev, minlength=pairs.size)
        cluster_group = pairs // width
        c = np.bincount(cluster_group, minlength=n_groups).astype(np.int64)
    ss = np.bincount(cluster_group, weights=per_cluster * per_cluster, minlength=n_groups)
    se2 = np.divide(
        c * ss, (c - 1) * n.astype(np.float64) ** 2, out=np.full(n_groups, math.nan), where=c > 1
    )
    return n, mean, np.sqrt(se2), c


def grouped_ci(
    values: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    clusters: np.ndarray | None = None,
) -> GroupedCI:
    """Mean and 95 % CI of each group's values, by the rule of this module's docstring.

    `groups` holds each value's group (0 .. n_groups − 1), `clusters` each value's cluster
    as an integer code (None: each value its own cluster, and 0/1 values get Wilson). One
    pass of numpy over the values for every group at once; only the t quantile is looked up
    per distinct degrees of freedom.

    Example:
        >>> got = grouped_ci(np.array([1.0, 0.0, 0.5, 0.5]), np.array([0, 0, 1, 1]), 2)
        >>> got.mean.tolist(), got.n_clusters.tolist()
        ([0.5, 0.5], [2, 2])
    """
    groups = np.asarray(groups, dtype=np.int64)
    n, mean, se, c = _cluster_parts(values, groups, n_groups, clusters)
    nonbinary = (values != 0.0) & (values != 1.0)
    binary = np.bincount(groups, weights=nonbinary, minlength=n_groups) == 0
    reference = np.zeros(n_groups)
    reference[groups] = values  # some value of each group: "every value equal" is one test
    differ = np.bincount(groups, weights=values != reference[groups], minlength=n_groups)
    low, high = np.full(n_groups, math.nan), np.full(n_groups, math.nan)
    has = n > 0
    wilson_n = binary & has if clusters is None else np.zeros(n_groups, dtype=bool)
    degenerate = has & ~wilson_n & ((c < 2) | (differ == 0) | ~(se >= NO_SPREAD))
    spread = has & ~wilson_n & ~degenerate
    # values in [0, 1] without clusters: the Wilson interval scaled by their spread; with
    # clusters, the cluster-robust t
    scaled = spread & (clusters is None)
    t_rows = spread & ~scaled
    if wilson_n.any():  # the successes are the sum of the 0/1 values: mean · n
        low[wilson_n], high[wilson_n] = wilson_arrays(
            mean[wilson_n] * n[wilson_n], n[wilson_n] * 1.0
        )
    if scaled.any():
        trials = _spread_trials(n[scaled] * 1.0, mean[scaled], se[scaled])
        low[scaled], high[scaled] = wilson_arrays(mean[scaled] * trials, trials)
    if t_rows.any():
        dfs, back = np.unique(c[t_rows] - 1, return_inverse=True)
        t = np.array([t975(int(d)) for d in dfs])[back.reshape(-1)]
        half = t * se[t_rows]
        # the t interval itself can pass 0 or 1 (e.g. [0, 0.5]: ±3.2); its part within
        # [0, 1], where every mean of such values lies, keeps its 95 % coverage
        low[t_rows] = np.maximum(0.0, mean[t_rows] - half)
        high[t_rows] = np.minimum(1.0, mean[t_rows] + half)
        # a half-width lost in the rounding of the mean shows no spread either
        degenerate |= t_rows & ~(high > low)
    if degenerate.any():
        cd = c[degenerate] * 1.0
        low[degenerate], high[degenerate] = wilson_arrays(mean[degenerate] * cd, cd)
    return GroupedCI(n, mean, low, high, c, se)


def _spread_trials(n: np.ndarray, mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """The trials of the spread-scaled Wilson interval: n / φ, φ = s̃² / (m̃ (1 − m̃)).

    A value in [0, 1] has at most the variance m (1 − m) of a 0/1 value; φ is how much of it
    the values show, so 0/1 values would keep their Wilson interval (φ = 1) and values with
    less spread get the narrower one of n / φ trials. s̃² and m̃ are the variance and mean of
    the values with a 0 and a 1 added, each of weight `_ADDED`: a skewed sample (pass@k near
    1, a few 0s or none) shows less spread than it has, and the t interval under-covers
    there (71–86 % at n = 20–50); the added weight keeps φ from trusting it. It costs width
    on values of little spread (1.1–1.5× the t interval at n = 20–50, less as n grows):
    the table in docs/statistics.md.
    """
    ss = se * se * n * (n - 1.0)  # Σ (x − x̄)², from SE² = s² / n
    w = _ADDED
    m = (mean * n + w) / (n + 2.0 * w)
    ss_added = ss + n * (mean - m) ** 2 + w * (m * m + (1.0 - m) ** 2)
    phi = np.minimum(1.0, ss_added / (n + 2.0 * w - 1.0) / (m * (1.0 - m)))
    trials: np.ndarray = n / phi
    return trials


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
    values = np.asarray(values, dtype=np.float64)
    codes = np.asarray(clusters, dtype=np.int64)
    _, _, se, c = _cluster_parts(values, np.zeros(values.size, np.int64), 1, codes)
    return (float(se[0]), int(c[0]))
