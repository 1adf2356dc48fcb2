"""Power for planning: `eb.sample_size` (cases needed to detect a delta) and `eb.mde`.

Both read the sd of paired deltas from a past comparison (`like=`) or take it (`sd_delta=`),
and use the one formula of `_model/_power.py`: mde = (z_{1−α/2} + z_power) · sd / √n.
"""

from __future__ import annotations

import math
from numbers import Integral, Real

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._power import mde_of, n_for
from ._compare import Comparison, paired_result

__all__ = ["mde", "sample_size"]


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ConfigurationError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _level(name: str, value: object) -> float:
    x = _real(name, value)
    if not 0.0 < x < 1.0:
        raise ConfigurationError(f"{name} must be between 0 and 1 (exclusive), not {value!r}")
    return x


def _sd(
    who: str, like: Comparison | None, sd_delta: object, score: str | ScoreDefinition | None
) -> float:
    """The sd of paired deltas: `sd_delta`, or the one of `like`'s score (clustered when
    `like` was: its clustered SE times √n)."""
    if (like is None) == (sd_delta is None):
        raise ConfigurationError(
            f"{who} needs exactly one of like= (a Comparison from eb.compare) or sd_delta= "
            "(the standard deviation of the paired deltas, e.g. sd_delta=0.4)"
        )
    if sd_delta is not None:
        if score is not None:
            raise ConfigurationError(
                f"{who}: score= picks a score of like=; drop it with sd_delta="
            )
        sd = _real("sd_delta", sd_delta)
        if sd <= 0:
            raise ConfigurationError(f"sd_delta must be positive, not {sd_delta!r}")
        return sd
    if not isinstance(like, Comparison):
        raise ConfigurationError(
            f"{who}: like= takes a Comparison (from eb.compare(a, b)), not {type(like).__name__}"
        )
    names = like.scores
    if score is not None:
        name = score.name if isinstance(score, ScoreDefinition) else str(score)
        if name not in names:
            raise ConfigurationError(
                f"{who}: score={name!r} is not in that comparison; its scores: "
                f"{', '.join(names) or '(none)'}"
            )
    elif len(names) == 1:
        name = names[0]
    else:
        raise ConfigurationError(
            f"{who}: that comparison compared {len(names)} scores ({', '.join(names)}); "
            f"name one with score=, e.g. score={names[0]!r}"
            if names
            else f"{who}: that comparison compared no score"
        )
    r = paired_result(like, name)
    if not r.sd_delta > 0:  # NaN (fewer than 2 pairs, or clusters) or 0 (no spread)
        raise ConfigurationError(
            f"{who}: score {name!r} of that comparison has no spread of paired deltas to "
            f"plan from ({r.n_paired} paired, sd {r.sd_delta:g}); pass sd_delta= instead"
        )
    return float(r.sd_delta)


def sample_size(
    delta: float,
    *,
    like: Comparison | None = None,
    sd_delta: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    score: str | ScoreDefinition | None = None,
) -> int:
    """The number of paired cases needed to detect a change of `delta` (e.g. 0.03 = 3 pp).

    The smallest n with (z_{1−α/2} + z_power) · sd / √n ≤ |delta|, where sd is the standard
    deviation of the paired deltas: `sd_delta=`, or read from a past comparison (`like=`;
    its clustered value when it was clustered, so n counts cases drawn the same way).

    Args:
        delta: The change to detect, as a fraction (0.03 for 3 percentage points).
        like: A Comparison whose score's paired deltas stand for the planned ones.
        sd_delta: The sd of the paired deltas, instead of `like=`.
        power: The chance of detecting `delta` when it is real.
        alpha: The two-sided level of the test.
        score: Which score of `like=` (needed when it compared several).

    Raises:
        ConfigurationError: not exactly one of `like=` / `sd_delta=`, a bad number, or a
            `like=` with several scores and no `score=`.

    Example:
        >>> import evalbook as eb
        >>> eb.sample_size(0.03, sd_delta=0.35)
        1069
    """
    d = _real("delta", delta)
    if d == 0:
        raise ConfigurationError("delta must not be 0: no sample size detects a change of 0")
    sd = _sd("sample_size()", like, sd_delta, score)
    return n_for(d, sd, power=_level("power", power), alpha=_level("alpha", alpha))


def mde(
    n: int,
    *,
    like: Comparison | None = None,
    sd_delta: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    score: str | ScoreDefinition | None = None,
) -> float:
    """The minimum detectable effect of a paired comparison of `n` cases (the inverse of
    `eb.sample_size`): (z_{1−α/2} + z_power) · sd / √n, as a fraction.

    Args:
        n: The number of paired cases.
        like: A Comparison whose score's paired deltas stand for the planned ones (its
            clustered sd when it was clustered).
        sd_delta: The sd of the paired deltas, instead of `like=`.
        power: The chance of detecting the effect when it is real.
        alpha: The two-sided level of the test.
        score: Which score of `like=` (needed when it compared several).

    Raises:
        ConfigurationError: not exactly one of `like=` / `sd_delta=`, a bad number, or a
            `like=` with several scores and no `score=`.

    Example:
        >>> import evalbook as eb
        >>> round(eb.mde(1069, sd_delta=0.35), 4)
        0.03
    """
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ConfigurationError(f"n must be a whole number of cases >= 1, not {n!r}")
    sd = _sd("mde()", like, sd_delta, score)
    return mde_of(int(n), sd, power=_level("power", power), alpha=_level("alpha", alpha))
