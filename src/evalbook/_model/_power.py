"""Power of a paired comparison: the minimum detectable effect and the sample size.

For a two-sided test at level `alpha` with power `power`, on n paired deltas whose standard
deviation is `sd` (clustered when the comparison is): mde = (z_{1−α/2} + z_{power}) · sd / √n,
and the n needed to detect `delta` is the smallest n with mde(n) ≤ |delta|. Normal
quantiles come from the standard library (`statistics.NormalDist`), not scipy.
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["mde_of", "n_for"]

_NORMAL = NormalDist()


def _z(alpha: float, power: float) -> float:
    if not (0.0 < alpha < 1.0) or not (0.0 < power < 1.0):
        raise ValueError(f"alpha and power must be in (0, 1), got alpha={alpha!r}, power={power!r}")
    return _NORMAL.inv_cdf(1 - alpha / 2) + _NORMAL.inv_cdf(power)


def mde_of(n: float, sd: float, *, power: float = 0.8, alpha: float = 0.05) -> float:
    """The smallest |delta| a paired comparison of `n` deltas with sd `sd` detects.

    NaN when n < 1 or sd is NaN or 0: deltas without any spread say nothing about their
    variance, and an mde of 0 would claim that every effect is detectable.

    Example:
        >>> round(mde_of(100, 0.5), 4)
        0.1401
    """
    if not n >= 1 or not sd > 0:
        return math.nan
    return _z(alpha, power) * sd / math.sqrt(n)


def n_for(delta: float, sd: float, *, power: float = 0.8, alpha: float = 0.05) -> int:
    """The number of paired cases needed to detect `delta` when the deltas have sd `sd`.

    Example:
        >>> n_for(0.1401, 0.5)
        100
    """
    if not delta or math.isnan(delta) or math.isnan(sd):
        raise ValueError(
            f"delta must be a number other than 0 and sd a number; got {delta!r}, {sd!r}"
        )
    return max(1, math.ceil((_z(alpha, power) * sd / abs(delta)) ** 2))
