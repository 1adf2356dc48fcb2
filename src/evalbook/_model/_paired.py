"""Paired statistics for comparing two runs case by case.

Every function is vectorised: a row of a 2-D array is one comparison (one score, or one
simulated experiment), so the statistical simulations of the test suite run in milliseconds.

- 0/1 scores: the exact McNemar test (a two-sided binomial test on the discordant pairs) and
  Newcombe's hybrid score interval for the difference of paired proportions (method 10 of
  Newcombe 1998, with its correlation correction): deterministic, never degenerate.
- Continuous scores: a paired sign-flip permutation test of the mean delta (exact up to
  `EXACT_MAX` non-zero deltas and on grids, a saddle-point approximation beyond: no Monte
  Carlo floor, `_permutation.py`) and Student's t interval of the mean delta.
- Clustered data (`clusters=`): the paired t test on the cluster-robust SE of the deltas
  (`cluster_se`, C/(C-1) correction) with t on C-1 degrees of freedom, for 0/1 and other
  scores alike; its p-value is Student's t tail, from the regularized incomplete beta.
- Deltas without a spread to estimate (every delta equal, or an SE below `NO_SPREAD`, the
  rounding of the differences) get the summary's degenerate rule on the delta's scale,
  `spread_free_ci`: never a zero-width interval, narrowing as n (or C) grows.
- Holm's step-down adjustment across the rows (scores, or (slice, score)) of one comparison.
- Every comparison also reports `rho` (Pearson correlation of the paired values) and `mde`
  (`design_mde`: the power of the test it ran, `_power.mde_of`: exact McNemar at the observed
  share of discordant pairs for 0/1 values, else t on its degrees of freedom with sd the sd of
  the paired deltas, clustered the clustered SE times sqrt(n)).

No scipy: importing `scipy.stats` takes over a second, which a first `eb.compare` would pay.
The binomial tail is summed exactly in integers for up to `_EXACT_BINOM_MAX` discordant
pairs and from Loader's saddle-point binomial probability beyond; the normal tail is
`math.erfc`. Both agree with scipy within 1e-12 relative (tests/model/test_paired.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from . import _permutation
from ._permutation import EXACT_MAX
from ._power import mde_of
from ._stats import NO_SPREAD, Z95, cluster_se, t975, wilson_arrays

__all__ = [
    "CLUSTERED_T",
    "EXACT_MAX",
    "MCNEMAR",
    "SIGN_FLIP",
    "PairedResult",
    "clustered_t",
    "design_mde",
    "holm",
    "is_binary",
    "mcnemar_p",
    "newcombe_ci",
    "paired",
    "pearson",
    "spread_free_ci",
    "t_ci",
    "t_two_sided_p",
]

Floats = NDArray[np.float64]


MCNEMAR = "exact McNemar"
SIGN_FLIP = "sign-flip permutation"
CLUSTERED_T = "clustered t"


def is_binary(*arrays: NDArray[np.float64]) -> bool:
    """True when every value of every array is exactly 0 or 1."""
    return all(bool(np.all((x == 0.0) | (x == 1.0))) for x in arrays)


def mcnemar_p(improved: NDArray[np.int64], regressed: NDArray[np.int64]) -> Floats:
    """Exact McNemar p-values: two-sided binomial test of `improved` among the discordant pairs.

    Equal to `scipy.stats.binomtest(improved, improved + regressed, 0.5).pvalue` (within
    1e-12 relative, or 1e-15 absolute for smaller p); 1.0 when there are no discordant pairs.
    """
    k = np.asarray(improved, dtype=np.int64)
    m = k + np.asarray(regressed, dtype=np.int64)
    cache: dict[tuple[int, int], float] = {}
    out = np.empty(k.size, dtype=np.float64)
    for i, (ki, mi) in enumerate(zip(k.ravel().tolist(), m.ravel().tolist(), strict=True)):
        key = (min(ki, mi - ki), mi)
        if key not in cache:
            cache[key] = _binomtest_half(*key)
        out[i] = cache[key]
    return out.reshape(k.shape)


_EXACT_BINOM_MAX = 1_000  # discordant pairs up to this: the tail summed exactly in integers

# stirlerr(n) = log(n!) - log(sqrt(2 pi n) (n / e)**n) for n = 0..15, to double precision
# (computed with 50-digit decimal arithmetic); beyond, its asymptotic series.
_STIRLERR = (
    0.0,
    0.08106146679532726,
    0.0413406959554093,
    0.02767792568499834,
    0.020790672103765093,
    0.016644691189821193,
    0.013876128823070748,
    0.01189670994589177,
    0.010411265261972096,
    0.009255462182712733,
    0.00833056343336287,
    0.007573675487951841,
    0.00694284010720953,
    0.006408994188004207,
    0.0059513701127588475,
    0.005554733551962801,
)


def _stirlerr(n: int) -> float:
    """The error of Stirling's formula for log(n!), accurate to ~1e-16 absolute."""
    if n < len(_STIRLERR):
        return _STIRLERR[n]
    nn = float(n) * n
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _bd0(x: float, mu: float) -> float:
    """`x * log(x / mu) + mu - x` without cancellation when x is near mu (Loader 2000)."""
    d = x - mu
    if abs(d) < 0.1 * (x + mu):
        v = d / (x + mu)
        s = d * v
        ej = 2.0 * x * v
        v2 = v * v
        for odd in range(3, 2001, 2):
            ej *= v2
            s1 = s + ej / odd
            if s1 == s:
                break
            s = s1
        return s
    return x * math.log(x / mu) + mu - x


def _binom_half_pmf(x: int, n: int) -> float:
    """P[X = x] for X ~ Binomial(n, 1/2), 0 <= x <= n, to ~1e-13 relative (Loader 2000)."""
    y = n - x
    if x == 0 or y == 0:
        return math.ldexp(1.0, -n)
    mu = n / 2.0
    lc = _stirlerr(n) - _stirlerr(x) - _stirlerr(y) - _bd0(x, mu) - _bd0(y, mu)
    return math.exp(lc - 0.5 * math.log(2.0 * math.pi * x * (y / n)))


def _binomtest_half(j: int, m: int) -> float:
    """min(1, 2 P[X <= j]) for X ~ Binomial(m, 1/2) and 0 <= j <= m / 2."""
    if 2 * j >= m - 1:  # P[X <= j] >= 1/2: no discordant pairs, a tie, or one short of it
        return 1.0
    if m <= _EXACT_BINOM_MAX:  # sum of C(m, i) for i <= j over 2**(m - 1), correctly rounded
        term = total = 1
        for i in range(j):
            term = term * (m - i) // (i + 1)
            total += term
        return total / (1 << (m - 1))
    # P[X = j] times 1 + sum over t of prod_{s < t} P[X = j - s - 1] / P[X = j - s]; the
    # ratios shrink away from the mode, so the rounding of the running product stays ~1e-14.
    # Ratio s is below exp(-4 s / m), so term t is below exp(-2 t (t - 1) / m): past
    # t = 10 sqrt(m) + 10 they add less than 1e-80 of the sum and are left out.
    s = np.arange(min(j, 10 * math.isqrt(m) + 10), dtype=np.float64)
    ratios = (j - s) / (m - j + 1 + s)
    tail = _binom_half_pmf(j, m) * (1.0 + float(np.cumprod(ratios).sum()))
    return min(1.0, 2.0 * tail)


def newcombe_ci(
    both: NDArray[np.int64],
    improved: NDArray[np.int64],
    regressed: NDArray[np.int64],
    neither: NDArray[np.int64],
    z: float = Z95,
) -> tuple[Floats, Floats]:
    """95 % interval of `mean_b - mean_a` for paired 0/1 values (Newcombe 1998, method 10).

    Args:
        both: pairs with a = b = 1.
        improved: pairs with a = 0, b = 1.
        regressed: pairs with a = 1, b = 0.
        neither: pairs with a = b = 0.
        z: the normal quantile (1.96 for 95 %).

    Returns:
        `(low, high)`; NaN where there are no pairs.
    """
    n11, n01, n10, n00 = (
        np.asarray(x, dtype=np.float64) for x in (both, improved, regressed, neither)
    )
    n = n11 + n01 + n10 + n00
    with np.errstate(divide="ignore", invalid="ignore"):
        pb, pa = (n11 + n01) / n, (n11 + n10) / n
        lb, ub = wilson_arrays(n11 + n01, n, z)
        la, ua = wilson_arrays(n11 + n10, n, z)
        # Correlation of the two proportions, with Newcombe's correction towards 0.
        marginals = (n11 + n01) * (n00 + n10) * (n11 + n10) * (n00 + n01)
        cross = n11 * n00 - n01 * n10
        corrected = np.where(cross > n / 2, cross - n / 2, np.where(cross < 0, cross, 0.0))
        phi = np.where(marginals > 0, corrected / np.sqrt(marginals), 0.0)
        delta = pb - pa
        down = np.sqrt(
            np.maximum(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
        )
        up = np.sqrt(
            np.maximum(0.0, (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
        )
    low = np.where(n > 0, np.maximum(-1.0, delta - down), np.nan)
    high = np.where(n > 0, np.minimum(1.0, delta + up), np.nan)
    return low.astype(np.float64), high.astype(np.float64)


def spread_free_ci(mean: Floats, units: Floats) -> tuple[Floats, Floats]:
    """The 95 % interval of mean deltas over `units` cases (or clusters) without a spread.

    The summary's degenerate rule (`_stats.py`) on the delta's scale: a delta in [-1, 1] is
    2u - 1 with u in [0, 1], whose variance is at most ū(1 - ū), so the interval is
    `2 · wilson(ū · C, C) - 1` with ū = (mean + 1) / 2: the widest spread the mean allows.
    Two deltas of -0.01 give about [-0.81, +0.81], 100 of them about [-0.20, +0.18]; never
    zero width, narrowing as C grows.

    Example:
        >>> low, high = spread_free_ci(np.array([-0.01]), np.array([2.0]))
        >>> round(float(low[0]), 2), round(float(high[0]), 2)
        (-0.81, 0.81)
    """
    c = np.asarray(units, dtype=np.float64)
    u = (np.asarray(mean, dtype=np.float64) + 1.0) / 2.0
    low, high = wilson_arrays(u * c, c)
    return 2.0 * low - 1.0, 2.0 * high - 1.0


def t_ci(deltas: Floats, z: float | None = None) -> tuple[Floats, Floats]:
    """95 % Student t interval of the mean of each row of `deltas`, clipped to [-1, 1].

    One value gives [-1, 1]; no values give NaN. A row without a spread (SE below
    `NO_SPREAD`, or a half-width lost in the rounding of the mean) gets `spread_free_ci`.
    """
    d = np.atleast_2d(np.asarray(deltas, dtype=np.float64))
    n = d.shape[1]
    if n == 0:
        nan = np.full(d.shape[0], np.nan)
        return nan, nan.copy()
    mean = d.mean(axis=1)
    if n == 1:
        return np.full_like(mean, -1.0), np.full_like(mean, 1.0)
    q = t975(n - 1) if z is None else z
    se = d.std(axis=1, ddof=1) / math.sqrt(n)
    low = np.maximum(-1.0, mean - q * se)
    high = np.minimum(1.0, mean + q * se)
    flat = ~(se >= NO_SPREAD) | ~(high > low)
    if flat.any():
        low[flat], high[flat] = spread_free_ci(mean[flat], np.full(int(flat.sum()), float(n)))
    return low, high


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    # converges in O(sqrt(max(a, b))) steps; t's df / 2 is a: 10**5 covers 10**10 clusters
    for m in range(1, 100_000):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float, y: float) -> float:
    """The regularized incomplete beta function I_x(a, b), given x and y = 1 - x (0 < x < 1).

    y is passed, not computed, so that a y far below the rounding of 1 - x stays exact.
    """
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    )
    if x < (a + 1.0) / (a + b + 2.0):  # the fraction converges fast on this side
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def t_two_sided_p(t: float, df: int) -> float:
    """P[|T| >= |t|] for Student's T with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2).

    Agrees with `2 * scipy.stats.t.sf(abs(t), df)` within 1e-12 relative up to 1,000 df and
    1e-10 beyond, where log-gamma's rounding grows (tests/compare/test_compare_cluster.py).
    t = 0 gives 1, an infinite |t| gives 0.

    Example:
        >>> round(t_two_sided_p(2.228138851986274, 10), 6)
        0.05
    """
    if df < 1:
        raise ValueError(f"degrees of freedom must be at least 1, not {df}")
    t2 = t * t
    if t2 == 0.0:
        return 1.0
    if math.isinf(t2):
        return 0.0
    # x = df / (df + t²) and 1 - x = t² / (df + t²), each without cancellation
    x, y = (1.0 / (1.0 + t2 / df), 1.0 / (1.0 + df / t2))
    return _betainc(df / 2.0, 0.5, x, y)


def clustered_t(
    deltas: Floats, clusters: NDArray[np.int64]
) -> tuple[float, float, float, float, int]:
    """The clustered paired t test of `mean(deltas) == 0`: `(low, high, p, se, n_clusters)`.

    SE is `cluster_se(deltas, clusters)` (C/(C-1) correction), the interval
    `mean ± t975(C-1) · SE` (its part within [-1, 1], where every mean delta lies) and p the
    two-sided t tail of `mean / SE` on C-1 degrees of freedom. Fewer than 2 clusters show no
    spread, so the interval is the whole range [-1, 1] and p = 1 (no evidence either way), as
    `t_ci` does for one value. Clusters without a spread between them (SE below `NO_SPREAD`:
    every cluster moved by the same amount) leave the t test nothing to divide by: the interval
    is `spread_free_ci` over the C clusters and p the exact sign-flip test of the cluster sums
    (2 clusters moving alike: p = 0.5, never 0; p = 1 when every delta is 0).

    Example:
        >>> d = np.array([0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
        >>> low, high, p, se, c = clustered_t(d, np.array([0, 0, 1, 1, 2, 2, 3, 3]))
        >>> c, round(se, 4), round(p, 4), high
        (4, 0.2041, 0.0917, 1.0)
    """
    d = np.asarray(deltas, dtype=np.float64)
    se, c = cluster_se(d, clusters)
    if c < 2:
        return (-1.0, 1.0, 1.0, se, c)
    mean = float(d.mean())
    half = t975(c - 1) * se
    low, high = max(-1.0, mean - half), min(1.0, mean + half)
    if se >= NO_SPREAD and high > low:
        return (low, high, t_two_sided_p(mean / se, c - 1), se, c)
    lo, hi = spread_free_ci(np.array([mean]), np.array([float(c)]))
    _, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    sums = np.bincount(inverse.reshape(-1), weights=d).astype(np.float64)
    p = float(_permutation.sign_flip_p(sums[None, :])[0])
    return (float(lo[0]), float(hi[0]), p, se, c)


def pearson(a: Floats, b: Floats) -> float:
    """The Pearson correlation of paired values; NaN with fewer than 2 pairs or no spread."""
    if a.size < 2:
        return math.nan
    da, db = a - a.mean(), b - b.mean()
    # sums of products, not np.dot: BLAS threads make a dot of 1e5 values take ~10 ms on a
    # busy machine
    saa, sbb = float((da * da).sum()), float((db * db).sum())
    if saa == 0.0 or sbb == 0.0:
        return math.nan
    return float((da * db).sum()) / math.sqrt(saa * sbb)


def holm(p_values: Floats) -> Floats:
    """Holm's step-down adjustment; NaN p-values stay NaN and do not count as tests."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(~np.isnan(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    factors = np.arange(ok.size, 0, -1, dtype=np.float64)
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * factors))
    out[order] = adjusted
    return out


@dataclass(frozen=True)
class PairedResult:
    """The paired comparison of one score over the cases counted in both runs."""

    n_paired: int
    mean_a: float
    mean_b: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    improved: int
    regressed: int
    same: int
    test: str | None
    rho: float
    sd_delta: float  # what `mde` uses: the sd of the deltas, or the clustered SE times sqrt(n)
    mde: float
    n_clusters: int  # without clusters, n_paired: each case its own cluster


def design_mde(
    n: int,
    sd: float,
    test: str | None,
    discordant: int,
    n_clusters: int,
    *,
    power: float = 0.8,
    alpha: float = 0.05,
) -> float:
    """The mde of the test `test` on `n` paired cases (docs/statistics.md): exact McNemar at
    the observed share of discordant pairs, else t on the comparison's degrees of freedom
    (clustered: C − 1, with `sd` the clustered SE · √n; else n − 1)."""
    if test == MCNEMAR:
        return mde_of(n, sd, power=power, alpha=alpha, discordant=discordant / n if n else 0.0)
    per_cluster = n / n_clusters if test == CLUSTERED_T and n_clusters else 1.0
    return mde_of(n, sd, power=power, alpha=alpha, per_cluster=per_cluster)


def paired(a: Floats, b: Floats, clusters: NDArray[np.int64] | None = None) -> PairedResult:
    """Compare paired values `a[i]`, `b[i]` (no NaN): means, delta = mean_b - mean_a, CI, p.

    With `clusters` (an integer code per pair) the test is the clustered t (`clustered_t`)
    whatever the values; without, exact McNemar for 0/1 values, else the sign-flip test.

    Example:
        >>> import numpy as np
        >>> r = paired(np.array([0.0, 0.0, 1.0, 1.0]), np.array([1.0, 1.0, 1.0, 1.0]))
        >>> (r.delta, r.improved, r.test)
        (0.5, 2, 'exact McNemar')
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    n = int(a.size)
    if n == 0:
        nan = math.nan
        return PairedResult(0, nan, nan, nan, nan, nan, nan, 0, 0, 0, None, nan, nan, nan, 0)
    d = b - a
    improved, regressed = int(np.sum(d > 0)), int(np.sum(d < 0))
    same = n - improved - regressed
    mean_a, mean_b = float(a.mean()), float(b.mean())
    n_clusters = n
    if clusters is not None:
        low, high, p_value, se, n_clusters = clustered_t(d, np.asarray(clusters))
        lo, hi, p = np.array([low]), np.array([high]), np.array([p_value])
        sd = se * math.sqrt(n)
        test = CLUSTERED_T
    elif is_binary(a, b):
        both = int(np.sum((a == 1.0) & (b == 1.0)))
        n11, n01, n10, n00 = (np.array([x]) for x in (both, improved, regressed, same - both))
        lo, hi = newcombe_ci(n11, n01, n10, n00)
        p = mcnemar_p(np.array([improved]), np.array([regressed]))
        test = MCNEMAR
    else:
        lo, hi = t_ci(d[None, :])
        p = _permutation.sign_flip_p(d[None, :])
        test = SIGN_FLIP
    if clusters is None:
        sd = float(d.std(ddof=1)) if n >= 2 else math.nan
    delta = mean_b - mean_a
    mde = design_mde(n, sd, test, improved + regressed, n_clusters)
    # The interval always brackets the estimate (float rounding aside).
    low, high = min(float(lo[0]), delta), max(float(hi[0]), delta)
    return PairedResult(
        n,
        mean_a,
        mean_b,
        delta,
        low,
        high,
        float(p[0]),
        improved,
        regressed,
        same,
        test,
        pearson(a, b),
        sd,
        mde,
        n_clusters,
    )
