"""Power of a paired comparison: the minimum detectable effect and the sample size.

The power is the one of the test `compare()` will run on the planned cases
(docs/statistics.md, "Power and sample size"), at two-sided level `alpha`:

- **0/1 values without clusters** (`discordant=` given: the share p_d of pairs whose values
  differ): the exact McNemar test. Of n pairs, M ~ Binomial(n, p_d) are discordant and, given
  M, the improvements K ~ Binomial(M, q) with q = (1 + δ/p_d)/2, δ = p₀₁ − p₁₀; the test
  rejects when min(K, M − K) ≤ k_M, the largest k with 2 P[Binomial(M, ½) ≤ k] ≤ alpha. The
  power is that double sum, exact (`_mcnemar_power`) while n · p_d ≤ `EXACT_DISCORDANT`, and
  beyond it the normal form with the variance under the null (p_d) and under the alternative
  (p_d − δ²), whose error there is far below a point of power. An effect larger than p_d
  needs that many discordant pairs: p₁₀ = 0, p₀₁ = δ.
- **otherwise**: Student's t on C − 1 degrees of freedom (C = n / `per_cluster` clusters;
  C = n without clusters) with noncentrality δ √n / sd, `sd` the sd of the paired deltas
  (clustered: SE · √n). Its power P[|T| > t_{1−α/2}] is the noncentral t's tail, integrated
  over the chi distribution of the estimated SE (`t_power`, Simpson's rule on a log scale).

The mde is the |δ| at which the power is `power`; the sample size the smallest n whose mde
is ≤ |δ|. No scipy: the normal tail is `math.erfc`, log-factorials are `math.lgamma`.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np

from ._stats import t975

__all__ = ["EXACT_DISCORDANT", "mcnemar_power", "mde_of", "n_for", "t_power"]

_NORMAL = NormalDist()
# Expected discordant pairs up to this: the McNemar power summed exactly (a few ms);
# beyond, the normal form, within half a point of the exact power there (tests/model/test_power.py).
EXACT_DISCORDANT = 5_000
# Simpson's rule over the chi distribution of the SE (odd counts). Few df put the critical
# value far out (63.7 at 1 df, alpha 0.01), where the integrand turns within 1/63 of s: those
# need the finer grid (4,001 nodes: within 1e-9 of the exact tail there; 801: 3e-4).
_NODES, _FEW_DF_NODES = 801, 4001
_erfc = np.frompyfunc(math.erfc, 1, 1)


def _check(alpha: float, power: float) -> None:
    if not (0.0 < alpha < 1.0) or not (0.0 < power < 1.0):
        raise ValueError(f"alpha and power must be in (0, 1), got alpha={alpha!r}, power={power!r}")


def _phi(x: np.ndarray) -> np.ndarray:
    """The standard normal CDF of each element (erfc: no cancellation in the lower tail)."""
    return np.asarray(0.5 * _erfc(-np.asarray(x, dtype=np.float64) / math.sqrt(2)), dtype=float)


def _density(x: np.ndarray) -> np.ndarray:
    return np.asarray(np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi), dtype=np.float64)


@lru_cache(maxsize=4096)
def _chi_nodes(df: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes s and weights of ∫ g(s) f(s) ds, f the density of s = SE-hat / SE = √(χ²_df/df).

    f(s) = 2 (df/2)^(df/2) / Γ(df/2) · s^(df−1) e^(−df s²/2). The nodes lie on a log scale
    (fine relative steps near 0, where small df put their mass and the critical value far out
    needs them) over ±14 of its sd (1/√(2 df)) around 1, so the mass left out is negligible.
    """
    width = 14.0 / math.sqrt(2.0 * df)
    # below lo, f(s) / f(1) = s^(df-1) e^(df (1 - s²)/2) < s^(df-1) e^(df/2) is under e^-90
    # (for df = 1, 2: the mass below 1e-12 is at most 1e-12)
    tiny = math.exp(-(90.0 + df / 2) / (df - 1)) if df > 1 else 0.0
    lo = max(1e-12, 1.0 - width, tiny)
    nodes = _FEW_DF_NODES if df < 10 else _NODES
    v = np.linspace(math.log(lo), math.log(1.0 + width), nodes)
    s = np.exp(v)  # a log scale: fine relative steps near 0, where small df put mass
    jacobian = s * (v[1] - v[0])  # ds = s dv
    log_f = (
        math.log(2.0)
        + (df / 2) * math.log(df / 2)
        - math.lgamma(df / 2)
        + (df - 1) * np.log(s)
        - df * s * s / 2
    )
    simpson = np.ones(nodes)
    simpson[1:-1:2], simpson[2:-1:2] = 4.0, 2.0
    return s, np.exp(log_f) * simpson * jacobian / 3


def _t_reject(lam: float, crit: float, df: int) -> tuple[float, float]:
    """P[|T| > crit] for T noncentral t(df, lam), and its derivative in lam."""
    s, w = _chi_nodes(df)
    upper, lower = lam - crit * s, -lam - crit * s
    value = float(w @ (_phi(upper) + _phi(lower)))
    slope = float(w @ (_density(upper) - _density(lower)))
    return value, slope


@lru_cache(maxsize=256)
def _t_crit(df: int, alpha: float) -> float:
    """The 1 − alpha/2 quantile of Student's t (t975 at alpha = 0.05; else Newton)."""
    if alpha == 0.05:
        return t975(df)
    crit = _NORMAL.inv_cdf(1 - alpha / 2)
    for _ in range(100):
        value, _slope = _t_reject(0.0, crit, df)
        s, w = _chi_nodes(df)
        slope = -2.0 * float(w @ (s * _density(crit * s)))
        step = (value - alpha) / slope
        crit = max(crit / 2, crit - step)
        if abs(step) < 1e-13 * crit:
            break
    return crit


def t_power(effect: float, se: float, df: int, alpha: float = 0.05) -> float:
    """The power of the two-sided t test on `df` degrees of freedom of a mean whose SE is `se`
    against a true mean `effect` (`scipy.stats.nct` gives the same within 1e-9).

    Example:
        >>> round(t_power(0.1, 0.035, 99), 4)
        0.8077
    """
    return _t_reject(abs(effect) / se, _t_crit(df, alpha), df)[0]


@lru_cache(maxsize=4096)
def _t_lambda(df: int, alpha: float, power: float) -> float:
    """The noncentrality at which the t test on df degrees of freedom has this power."""
    crit = _t_crit(df, alpha)
    lam = crit + _NORMAL.inv_cdf(power)
    lo, hi = 0.0, math.inf
    for _ in range(200):
        value, slope = _t_reject(lam, crit, df)
        if value < power:
            lo = lam
        else:
            hi = lam
        step = (value - power) / slope if slope > 0 else math.inf
        nxt = lam - step
        if not lo < nxt < hi:  # a Newton step out of the bracket: bisect (or double)
            nxt = (lo + hi) / 2 if math.isfinite(hi) else 2 * lam + 1
        if abs(nxt - lam) < 1e-12 * max(1.0, lam):
            return nxt
        lam = nxt
    return lam


_FACTORIALS: list[np.ndarray] = [np.zeros(1)]


def _log_factorials(n: int) -> np.ndarray:
    """log k! for k = 0..n (at least), kept and grown across calls."""
    have = _FACTORIALS[0]
    if have.size <= n:
        more = np.array([math.lgamma(k + 1.0) for k in range(have.size, 2 * n + 2)])
        _FACTORIALS[0] = have = np.concatenate([have, more])
    return have


_CRITICAL: dict[float, np.ndarray] = {}


def _critical(m_max: int, alpha: float) -> np.ndarray:
    """k_M for M = 0..m_max (at least): the largest k with 2 P[Binomial(M, ½) <= k] <= alpha,
    -1 when none. The sum runs over the 8 sd below M/2 only (the rest is below 1e-14)."""
    have = _CRITICAL.get(alpha, np.zeros(0, dtype=np.int64))
    if have.size > m_max:
        return have
    m = np.arange(have.size, max(2 * m_max, 64) + 1)
    lf = _log_factorials(int(m[-1]))
    j_lo = np.maximum(0, np.floor(m / 2 - 4 * np.sqrt(m) - 8)).astype(np.int64)
    j = j_lo[:, None] + np.arange(int((m // 2 - j_lo).max()) + 1)[None, :]
    mm = np.broadcast_to(m[:, None], j.shape)
    inside = j <= mm // 2
    jj = np.where(inside, j, 0)
    pmf = np.where(inside, np.exp(lf[mm] - lf[jj] - lf[mm - jj] - mm * math.log(2.0)), 0.0)
    count = (2.0 * np.cumsum(pmf, axis=1) <= alpha * (1 + 1e-12)).sum(axis=1)
    _CRITICAL[alpha] = have = np.concatenate([have, j_lo + count - 1])
    return have


def _xlog(k: np.ndarray, p: float) -> np.ndarray:
    """k · log(p), 0 where k = 0 (also for p = 0)."""
    if p > 0:
        return np.asarray(k * math.log(p), dtype=np.float64)
    return np.where(k == 0, 0.0, -np.inf)


def _mcnemar_exact(n: int, p01: float, p10: float, alpha: float) -> float:
    """The exact power: Σ_M P[M discordant] · P[min(K, M − K) <= k_M | M], each sum over the
    8 sd around its mean (the mass outside is below 1e-14)."""
    p_d = p01 + p10
    mu, sd = n * p_d, math.sqrt(n * p_d * (1 - p_d))
    lf = _log_factorials(n)
    m = np.arange(max(0, math.floor(mu - 8 * sd - 8)), min(n, math.ceil(mu + 8 * sd + 8)) + 1)
    weight = np.exp(lf[n] - lf[m] - lf[n - m] + _xlog(m, p_d) + _xlog(n - m, 1 - p_d))
    k = _critical(int(m[-1]), alpha)[m]
    if p10 == 0.0:  # q = 1: every discordant pair an improvement, rejected when k_M >= 0
        return float(weight @ (k >= 0))
    q = p01 / p_d
    centre, spread = m * q, np.sqrt(m * q * (1 - q))
    j_lo = np.maximum(0, np.floor(centre - 8 * spread - 8)).astype(np.int64)
    j_hi = np.minimum(m, np.ceil(centre + 8 * spread + 8)).astype(np.int64)
    j = j_lo[:, None] + np.arange(int((j_hi - j_lo).max()) + 1)[None, :]
    mm = np.broadcast_to(m[:, None], j.shape)
    inside = j <= j_hi[:, None]
    jj = np.where(inside, j, 0)
    log_pmf = lf[mm] - lf[jj] - lf[mm - jj] + jj * math.log(q) + (mm - jj) * math.log(1 - q)
    kk = k[:, None]
    region = inside & (kk >= 0) & ((jj <= kk) | (jj >= mm - kk))
    reject = np.where(region, np.exp(log_pmf), 0.0).sum(axis=1)
    return float(weight @ reject)


def _cells(delta: float, discordant: float) -> tuple[float, float]:
    """p₀₁, p₁₀ of an effect `delta` (≥ 0) at discordance `discordant` (at least delta)."""
    if delta >= discordant:
        return (delta, 0.0)
    return ((discordant + delta) / 2, (discordant - delta) / 2)


def mcnemar_power(n: int, delta: float, discordant: float, alpha: float = 0.05) -> float:
    """The power of the two-sided exact McNemar test on `n` pairs against an effect `delta`
    when a share `discordant` of the pairs differ (at least |delta| of them).

    Example:
        >>> round(mcnemar_power(1000, 0.03, 0.12), 3)
        0.76
    """
    p01, p10 = _cells(abs(delta), discordant)
    p_d = p01 + p10
    if n < 1 or p_d <= 0:
        return 0.0
    if n * p_d <= EXACT_DISCORDANT:
        return _mcnemar_exact(int(n), p01, p10, alpha)
    z = _NORMAL.inv_cdf(1 - alpha / 2)
    d = p01 - p10
    spread = math.sqrt(max(p_d - d * d, 1e-300))
    root_n = math.sqrt(n)
    return float(_phi(np.array([(d * root_n - z * math.sqrt(p_d)) / spread]))[0]) + float(
        _phi(np.array([(-d * root_n - z * math.sqrt(p_d)) / spread]))[0]
    )


@lru_cache(maxsize=4096)
def _mcnemar_mde(n: int, discordant: float, alpha: float, power: float) -> float:
    """The delta at which `mcnemar_power` reaches `power` (inf when even δ = 1 does not).

    The normal form's root starts a bracket, and the Illinois method (regula falsi that
    halves the stale end's weight) closes it: about 6 evaluations of the exact sum.
    """

    def gap(x: float) -> float:
        return mcnemar_power(n, x, discordant, alpha) - power

    if 2.0 ** (1 - n) > alpha:  # even n improvements of n (δ = 1) give p = 2^(1-n) > alpha
        return math.inf
    z_a, z_b = _NORMAL.inv_cdf(1 - alpha / 2), _NORMAL.inv_cdf(power)
    x = min(1.0, (z_a + z_b) * math.sqrt(discordant / n))
    for _ in range(50):  # the normal form: (z_a √p_d + z_b √(p_d − δ²)) / √n = δ
        x = min(1.0, (z_a * math.sqrt(discordant) + z_b * math.sqrt(max(discordant - x * x, 0.0)))
                / math.sqrt(n))  # fmt: skip
    lo, hi = max(0.0, 0.97 * x), min(1.0, 1.03 * x)
    f_lo, f_hi = gap(lo), gap(hi)
    while f_lo >= 0 and lo > 0:
        lo, hi, f_hi = lo / 2, lo, f_lo
        f_lo = gap(lo) if lo > 1e-12 else -power
        lo = lo if lo > 1e-12 else 0.0
    while f_hi < 0:
        lo, f_lo = hi, f_hi
        hi = min(1.0, 2 * hi)
        f_hi = gap(hi)
    side = 0
    for _ in range(100):
        if f_hi - f_lo <= 0 or hi - lo < 1e-12 or min(-f_lo, f_hi) < 1e-10:
            break
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo)
        f = gap(x)
        if f < 0:
            lo, f_lo = x, f
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, f_hi = x, f
            if side == 1:
                f_lo /= 2
            side = 1
    return lo if -f_lo < f_hi else hi  # the end nearer the target (within 1e-10 of it)


def _df(n: float, per_cluster: float) -> int:
    return max(0, round(n / per_cluster) - 1)


def mde_of(
    n: float,
    sd: float,
    *,
    power: float = 0.8,
    alpha: float = 0.05,
    discordant: float | None = None,
    per_cluster: float = 1.0,
) -> float:
    """The smallest |delta| that the paired test of `n` cases detects with `power`.

    With `discordant` (0/1 values, no clusters): the exact McNemar test at that share of
    discordant pairs (`sd` unused). Else the t test on n / per_cluster − 1 degrees of freedom
    with deltas of sd `sd` (clustered: SE · √n). NaN when n < 1, sd or discordant is NaN or 0
    (no spread: an mde of 0 would claim every effect detectable) or fewer than 2 clusters;
    inf when no effect reaches `power` (McNemar on fewer than 6 pairs can never reject).

    Example:
        >>> round(mde_of(100, 0.5), 4)
        0.1415
    """
    _check(alpha, power)
    if not n >= 1:
        return math.nan
    if discordant is not None:
        if not discordant > 0:
            return math.nan
        return _mcnemar_mde(int(n), min(1.0, float(discordant)), alpha, power)
    df = _df(n, per_cluster)
    if not sd > 0 or df < 1:
        return math.nan
    return _t_lambda(df, alpha, power) * sd / math.sqrt(n)


def n_for(
    delta: float,
    sd: float,
    *,
    power: float = 0.8,
    alpha: float = 0.05,
    discordant: float | None = None,
    per_cluster: float = 1.0,
) -> int:
    """The number of paired cases needed to detect `delta`: the smallest n with
    `mde_of(n, ...) <= |delta|` (the same test, the same arguments).

    McNemar's power is not monotone in n (its rejection region moves in steps); the smallest
    such n is searched from the crossing down to 3 % below it.

    Example:
        >>> n_for(0.1415, 0.5)
        100
    """
    if not delta or math.isnan(delta) or (discordant is None and math.isnan(sd)):
        raise ValueError(
            f"delta must be a number other than 0 and sd a number; got {delta!r}, {sd!r}"
        )
    _check(alpha, power)
    target = abs(delta)

    def detects(n: int) -> bool:
        if discordant is not None:  # mde(n) <= |delta| is power(n, |delta|) >= power
            return mcnemar_power(n, target, discordant, alpha) >= power
        mde = mde_of(n, sd, power=power, alpha=alpha, per_cluster=per_cluster)
        return mde <= target  # NaN: not detected

    z = _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)
    spread = math.sqrt(discordant) if discordant is not None else sd
    guess = max(1, math.ceil((z * spread / target) ** 2))
    lo, hi = max(0, guess // 2), guess
    while not detects(hi):
        lo, hi = hi, 2 * hi
        if hi > 10**12:
            raise ValueError(f"no number of cases detects {delta!r} with power {power!r}")
    while hi - lo > 1:  # the last lo that does not detect, the first hi that does
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if detects(mid) else (mid, hi)
    if discordant is not None:
        for n in range(max(1, math.floor(hi * 0.97)), hi):
            if detects(n):
                return n
    return max(1, hi)
