"""Power of the tests `eb.compare` runs, computed independently with scipy (a dev dependency).

The exact McNemar power sums scipy's binomial probabilities with the rejection region of
`scipy.stats.binomtest`; the t power is `scipy.stats.nct`'s tail. evalbook's own
(`_model/_power.py`, no scipy) is checked against these.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
from scipy import integrate, optimize, stats


@cache
def critical(m: int, alpha: float = 0.05) -> int:
    """The largest k with binomtest(k, m, 0.5).pvalue <= alpha (-1: none): found with the
    binomial CDF, then checked with binomtest itself at k and k + 1."""
    tail = 2 * stats.binom.cdf(np.arange(m // 2 + 1), m, 0.5)
    k = int(np.count_nonzero(tail <= alpha)) - 1
    assert k < 0 or stats.binomtest(k, m, 0.5).pvalue <= alpha
    assert stats.binomtest(k + 1, m, 0.5).pvalue > alpha
    return k


def mcnemar_power(n: int, delta: float, discordant: float, alpha: float = 0.05) -> float:
    """P[exact McNemar rejects] of n pairs, a share `discordant` discordant, effect delta
    (beyond the discordance: every discordant pair an improvement, p01 = delta)."""
    d = abs(delta)
    p01, p10 = (d, 0.0) if d >= discordant else ((discordant + d) / 2, (discordant - d) / 2)
    p_d = p01 + p10
    m = np.arange(1, n + 1)
    weight = stats.binom.pmf(m, n, p_d)
    m, weight = m[weight > 1e-17], weight[weight > 1e-17]
    k = np.array([critical(int(x), alpha) for x in m])
    q = p01 / p_d
    reject = stats.binom.cdf(k, m, q) + stats.binom.sf(m - k - 1, m, q)
    return float(weight @ np.where(k >= 0, reject, 0.0))


def mcnemar_mde(n: int, discordant: float, power: float = 0.8) -> float:
    return float(
        optimize.brentq(lambda d: mcnemar_power(n, d, discordant) - power, 1e-6, 1.0, xtol=1e-10)
    )


def t_power(effect: float, se: float, df: int, alpha: float = 0.05) -> float:
    crit = stats.t.ppf(1 - alpha / 2, df)
    lam = abs(effect) / se
    value = float(stats.nct.sf(crit, df, lam) + stats.nct.cdf(-crit, df, lam))
    if math.isnan(value):  # scipy's nct gives NaN far out: integrate over the chi by quad
        chi = stats.chi(df, scale=1 / math.sqrt(df))

        def f(s: float) -> float:
            return float(
                chi.pdf(s) * (stats.norm.cdf(lam - crit * s) + stats.norm.cdf(-lam - crit * s))
            )

        cut = lam / crit
        parts = (
            integrate.quad(f, 0, cut, limit=500)[0],
            integrate.quad(f, cut, np.inf, limit=500)[0],
        )
        value = sum(parts)
    return value


def t_mde(se: float, df: int, power: float = 0.8, alpha: float = 0.05) -> float:
    crit = stats.t.ppf(1 - alpha / 2, df)  # the root lies below crit + 6 (power > 0.999 there)
    lam = optimize.brentq(lambda x: t_power(x, 1.0, df, alpha) - power, 0.0, crit + 6.0, xtol=1e-12)
    return float(lam * se)


def t_n(delta: float, sd: float, power: float = 0.8) -> int:
    """The smallest n whose t mde (df n - 1, SE sd / sqrt(n)) is at most |delta|."""
    n = 8  # (scipy's nct gives NaN on 1 df far out)
    while t_mde(sd / math.sqrt(n), n - 1, power) > abs(delta):
        n = n * 2
    lo, hi = n // 2, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (
            (lo, mid) if t_mde(sd / math.sqrt(mid), mid - 1, power) <= abs(delta) else (mid, hi)
        )
    return hi
