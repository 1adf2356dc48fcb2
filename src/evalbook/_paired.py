"""Paired statistics for comparing two runs case by case.

Every function is vectorised: a row of a 2-D array is one comparison (one score, or one
simulated experiment), so the statistical simulations of the test suite run in milliseconds.

- 0/1 scores: the exact McNemar test (a two-sided binomial test on the discordant pairs) and
  Newcombe's hybrid score interval for the difference of paired proportions (method 10 of
  Newcombe 1998, with its correlation correction): deterministic, never degenerate.
- Continuous scores: a paired sign-flip permutation test of the mean delta (exact enumeration
  for up to `EXACT_MAX` non-zero deltas, `N_FLIPS` seeded random flips up to `MC_MAX`, the
  normal limit of the same permutation distribution beyond) and Student's t interval of the
  mean delta.
- Holm's step-down adjustment across the scores of one comparison.

scipy is imported lazily, inside the functions that need it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ._stats import Z95, t975

__all__ = [
    "EXACT_MAX",
    "MCNEMAR",
    "MC_MAX",
    "N_FLIPS",
    "SEED",
    "SIGN_FLIP",
    "PairedResult",
    "holm",
    "is_binary",
    "mcnemar_p",
    "newcombe_ci",
    "paired",
    "sign_flip_p",
    "t_ci",
]

Floats = NDArray[np.float64]

SEED = 20_240_601  # fixed: the same two runs always give the same p-value
EXACT_MAX = 16  # enumerate all 2**m sign flips up to this many non-zero deltas
MC_MAX = 1_000  # seeded random flips up to this many; the normal limit beyond
N_FLIPS = 9_999
_BATCH = 1_000  # random flips generated at a time (bounds memory)

MCNEMAR = "exact McNemar"
SIGN_FLIP = "sign-flip permutation"


def is_binary(*arrays: NDArray[np.float64]) -> bool:
    """True when every value of every array is exactly 0 or 1."""
    return all(bool(np.all((x == 0.0) | (x == 1.0))) for x in arrays)


def mcnemar_p(improved: NDArray[np.int64], regressed: NDArray[np.int64]) -> Floats:
    """Exact McNemar p-values: two-sided binomial test of `improved` among the discordant pairs.

    Equal to `scipy.stats.binomtest(improved, improved + regressed, 0.5).pvalue`; 1.0 when
    there are no discordant pairs.
    """
    from scipy import stats

    k = np.asarray(improved, dtype=np.int64)
    m = k + np.asarray(regressed, dtype=np.int64)
    tail = stats.binom.cdf(np.minimum(k, m - k), m, 0.5)
    return np.asarray(np.where(m > 0, np.minimum(1.0, 2.0 * tail), 1.0), dtype=np.float64)


def _wilson(successes: Floats, n: Floats, z: float) -> tuple[Floats, Floats]:
    p = successes / n
    denom = 1.0 + z * z / n
    center = (p + z * z / (2 * n)) / denom
    half = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return center - half, center + half


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
        lb, ub = _wilson(n11 + n01, n, z)
        la, ua = _wilson(n11 + n10, n, z)
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


def t_ci(deltas: Floats, z: float | None = None) -> tuple[Floats, Floats]:
    """95 % Student t interval of the mean of each row of `deltas`, clipped to [-1, 1].

    One value gives [-1, 1]; no values give NaN.
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
    half = q * d.std(axis=1, ddof=1) / math.sqrt(n)
    return np.maximum(-1.0, mean - half), np.minimum(1.0, mean + half)


def _compact(d: Floats) -> Floats:
    """Drop columns that are zero in every row after moving each row's non-zeros left.

    Zero deltas change neither the statistic nor its sign-flip distribution.
    """
    order = np.argsort(d == 0.0, axis=1, kind="stable")
    moved = np.take_along_axis(d, order, axis=1)
    width = int((d != 0.0).sum(axis=1).max(initial=0))
    return moved[:, :width]


def sign_flip_p(deltas: Floats, seed: int = SEED) -> Floats:
    """Two-sided p-values of the paired sign-flip permutation test of `mean(delta) == 0`.

    Each row of `deltas` is one comparison; rows may be zero-padded (a zero delta changes
    nothing). Under the null the deltas are symmetric about 0, so every assignment of signs is
    equally likely; the p-value is the share of assignments whose |sum| is at least the
    observed one. With m non-zero deltas (the largest m over rows): all 2**m assignments when
    m <= EXACT_MAX; else N_FLIPS seeded random ones, p = (1 + hits) / (1 + N_FLIPS), when
    m <= MC_MAX; else the normal limit of that distribution (mean 0, variance sum(d**2)).
    Rows whose deltas are all 0 get p = 1.
    """
    d = _compact(np.atleast_2d(np.asarray(deltas, dtype=np.float64)))
    rows, m = d.shape
    if m == 0:
        return np.ones(rows)
    observed = np.abs(d.sum(axis=1))
    tol = 1e-9 * np.maximum(1.0, np.abs(d).sum(axis=1))
    if m <= EXACT_MAX:
        bits = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1
        signs = 1.0 - 2.0 * bits
        sums = np.abs(signs @ d.T)  # (2**m, rows)
        return np.asarray((sums >= observed - tol).mean(axis=0), dtype=np.float64)
    if m <= MC_MAX:
        rng = np.random.default_rng(seed)
        hits = np.zeros(rows)
        done = 0
        while done < N_FLIPS:
            k = min(_BATCH, N_FLIPS - done)
            flips = rng.integers(0, 2, size=(k, m), dtype=np.int8)
            signs = 1.0 - 2.0 * flips.astype(np.float64)
            hits += (np.abs(signs @ d.T) >= observed - tol).sum(axis=0)
            done += k
        return np.asarray((1.0 + hits) / (1.0 + N_FLIPS), dtype=np.float64)
    from scipy import stats

    scale = np.sqrt((d * d).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2.0 * stats.norm.sf(observed / scale)
    return np.asarray(np.where(scale > 0, np.minimum(1.0, p), 1.0), dtype=np.float64)


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


def paired(a: Floats, b: Floats, seed: int = SEED) -> PairedResult:
    """Compare paired values `a[i]`, `b[i]` (no NaN): means, delta = mean_b - mean_a, CI, p.

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
        return PairedResult(0, nan, nan, nan, nan, nan, nan, 0, 0, 0, None)
    d = b - a
    improved, regressed = int(np.sum(d > 0)), int(np.sum(d < 0))
    same = n - improved - regressed
    mean_a, mean_b = float(a.mean()), float(b.mean())
    if is_binary(a, b):
        both = int(np.sum((a == 1.0) & (b == 1.0)))
        n11, n01, n10, n00 = (np.array([x]) for x in (both, improved, regressed, same - both))
        lo, hi = newcombe_ci(n11, n01, n10, n00)
        p = mcnemar_p(np.array([improved]), np.array([regressed]))
        test = MCNEMAR
    else:
        lo, hi = t_ci(d[None, :])
        p = sign_flip_p(d[None, :], seed)
        test = SIGN_FLIP
    delta = mean_b - mean_a
    # The interval always brackets the estimate (float rounding aside).
    low, high = min(float(lo[0]), delta), max(float(hi[0]), delta)
    return PairedResult(
        n, mean_a, mean_b, delta, low, high, float(p[0]), improved, regressed, same, test
    )
