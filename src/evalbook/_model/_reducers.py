"""Reducers (docs/repeats.md): how a case's counted epoch values become the case's value.

A reducer is a string, so that it reads well in a table and round-trips through JSON:
`"mean"`, `"median"`, `"min"`, `"max"`, `"mode"`, `"pass@k"` (`eb.pass_at(k)`) and
`"pass^k"` (`eb.pass_hat(k)`). `check_reducer` is the one validator (whether a run has
the epochs a pass@k needs is plan-making's: `_runner/_plan.check_epochs`); the estimators of
pass@k and pass^k are here too, in the product form (no huge binomials).

A judge's votes reduce with the same words (`VOTE_REDUCERS`, checked by `vote_reducer`;
`"majority"` is the old name of `"mode"`): `reduce_values` reduces one list of votes, and
`_model/_epochs.py` every case's epochs at once with numpy; the rules are the same (a tie of
the mode goes to the smallest value), a test holds the two together.
"""

from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from collections.abc import Sequence
from numbers import Integral

from .._errors import ConfigurationError
from .._util._warn import warn

__all__ = [
    "OLD_NAMES",
    "PLAIN_REDUCERS",
    "VOTE_REDUCERS",
    "check_reducer",
    "is_pass_at",
    "pass_at",
    "pass_at_estimate",
    "pass_hat",
    "pass_hat_estimate",
    "reduce_values",
    "reducer_k",
    "vote_reducer",
]

PLAIN_REDUCERS = ("mean", "median", "min", "max", "mode")
# what a judge's votes reduce with: the plain reducers, the judge's default first
VOTE_REDUCERS = ("median", "mean", "min", "max", "mode")
# Old spellings of a reducer: a judge's "majority" was the epochs' "mode" under another name.
# Stored graders say it still (a run written before the rename); they read as "mode", so
# that such a run resumes and compares like one written now.
OLD_NAMES = {"majority": "mode"}
# Canonical spellings only ("pass@3", never "pass@03" or "pass@ 3"): one reducer, one string.
_PASS = re.compile(r"^pass([@^])([1-9][0-9]*)$")
_CHOICES = '"mean", "median", "min", "max", "mode", eb.pass_at(k) or eb.pass_hat(k) with k ≥ 1'


def _k(k: object, where: str) -> int:
    # bool is an int subclass: pass_at(True) is a mistake, not pass@1
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise ConfigurationError(f"{where} takes a whole number k ≥ 1, not {k!r}")
    if int(k) < 1:
        raise ConfigurationError(f"{where} takes a whole number k ≥ 1, not {int(k)}")
    return int(k)


def pass_at(k: int) -> str:
    """The reducer pass@k: the chance that at least one of k epochs passes.

    The unbiased estimator of Chen et al. (2021) over a case's n counted epochs, c of
    them 1: 1 − C(n−c, k)/C(n, k). Values must be 0 or 1.

    Example:
        >>> import evalbook as eb
        >>> eb.pass_at(3)
        'pass@3'
    """
    return f"pass@{_k(k, 'pass_at()')}"


def pass_hat(k: int) -> str:
    """The reducer pass^k: the chance that k epochs drawn without replacement all pass.

    C(c, k)/C(n, k) over a case's n counted epochs, c of them 1. Values must be 0 or 1.

    Example:
        >>> import evalbook as eb
        >>> eb.pass_hat(2)
        'pass^2'
    """
    return f"pass^{_k(k, 'pass_hat()')}"


def check_reducer(reducer: object) -> str:
    """`reducer` if it is one of the reducers, else a ConfigurationError listing them."""
    if isinstance(reducer, str) and (reducer in PLAIN_REDUCERS or _PASS.match(reducer)):
        return reducer
    raise ConfigurationError(f"reducer must be one of {_CHOICES}; got {reducer!r}")


def vote_reducer(reducer: object) -> str:
    """A judge's `reducer=`, checked; `"majority"` is `"mode"`, with a DeprecationWarning."""
    if isinstance(reducer, str) and reducer in OLD_NAMES:
        new = OLD_NAMES[reducer]
        warn(
            f'reducer="{reducer}" is deprecated: it is the same rule as "{new}" (the most '
            f"frequent value; a tie goes to the smallest), which is its name for epochs "
            f'too; pass reducer="{new}"',
            DeprecationWarning,
        )
        return new
    if isinstance(reducer, str) and reducer in VOTE_REDUCERS:
        return reducer
    raise ConfigurationError(f"reducer must be one of {', '.join(VOTE_REDUCERS)}; got {reducer!r}")


def reduce_values(values: Sequence[float], reducer: str) -> float:
    """One list of finite values (a judge's valid votes) reduced by a plain reducer.

    The rules of `reduce_scores` (`_model/_epochs.py`), one list at a time: the median of
    an even count is the mean of the middle two, the mode's tie goes to the smallest value.
    The mean is an exact sum (`fsum`), kept between the smallest and largest value: bounding
    only undoes round-off (it never moves a value that a judge wrote).

    Example:
        >>> reduce_values([90, 60, 60, 90], "mode"), reduce_values([60, 90, 70, 80], "median")
        (60, 75.0)
    """
    if reducer == "median":
        return float(statistics.median(values))
    if reducer == "mean":
        return min(max(math.fsum(values) / len(values), min(values)), max(values))
    if reducer == "min":
        return min(values)
    if reducer == "max":
        return max(values)
    if reducer != "mode":
        raise ValueError(f"{reducer!r} is not a plain reducer")
    counts = Counter(values)  # the most frequent value; a tie goes to the smallest
    top = max(counts.values())
    return min(v for v, n in counts.items() if n == top)


def reducer_k(reducer: str) -> int | None:
    """The k of a pass@k or pass^k reducer; None for the others."""
    m = _PASS.match(reducer)
    return int(m.group(2)) if m else None


def is_pass_at(reducer: str) -> bool:
    """True for pass@k (as opposed to pass^k and the plain reducers)."""
    return reducer.startswith("pass@")


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 ≤ c ≤ n and 1 ≤ k ≤ n, got n={n}, c={c}, k={k}")


def _ratio(m: int, n: int, k: int) -> float:
    """C(m, k) / C(n, k) for m ≤ n, as the product Π_{i=m+1..n} (1 − k/i).

    Each factor is in [0, 1), so the product neither overflows nor loses precision the way
    a quotient of two huge binomials does; C(m, k) is 0 when m < k. The factors are taken
    from i = n down, so that one more factor (m − 1) multiplies the same rounded partial
    product by a number ≤ 1: the estimates are exactly monotone in c, not only up to rounding.
    """
    if m < k:
        return 0.0
    # start=1.0: with m = n the product is empty, and pass^k of c = n is the float 1.0
    return math.prod((1.0 - k / i for i in range(n, m, -1)), start=1.0)


def pass_at_estimate(n: int, c: int, k: int) -> float:
    """pass@k = 1 − C(n−c, k)/C(n, k) of n counted epochs, c of them passed.

    Exact at the edges: 0.0 when c = 0, 1.0 when n − c < k (every draw of k holds a pass).

    Example:
        >>> round(pass_at_estimate(5, 2, 1), 12), pass_at_estimate(5, 2, 3)
        (0.4, 0.9)
    """
    _check_counts(n, c, k)
    return 1.0 - _ratio(n - c, n, k)


def pass_hat_estimate(n: int, c: int, k: int) -> float:
    """pass^k = C(c, k)/C(n, k) of n counted epochs, c of them passed.

    Exact at the edges: 1.0 when c = n, 0.0 when c < k.

    Example:
        >>> round(pass_hat_estimate(5, 4, 2), 12)
        0.6
    """
    _check_counts(n, c, k)
    return _ratio(c, n, k)
