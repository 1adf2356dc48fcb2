"""Power for planning: `eb.sample_size` (cases needed to detect a delta) and `eb.mde`.

Both plan the test a comparison runs (`_model/_power.py`): from a past comparison (`like=`:
its test, and its share of discordant pairs or its sd of paired deltas and cases per
cluster), from `sd_delta=` (the t test) or from `discordant=` (0/1 scores: exact McNemar).
"""

from __future__ import annotations

import math
from numbers import Integral, Real
from typing import NamedTuple

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._paired import CLUSTERED_T, MCNEMAR
from .._model._power import mde_of, n_for
from ._compare import Comparison, paired_result

__all__ = ["cases_needed", "mde", "sample_size"]


def _real(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ConfigurationError(f"{name} must be a finite number, not {value!r}")
    return float(value)


def _level(name: str, value: object) -> float:
    x = _real(name, value)
    if not 0.0 < x < 1.0:
        raise ConfigurationError(f"{name} must be between 0 and 1 (exclusive), not {value!r}")
    return x


class _Design(NamedTuple):
    """What the power of the planned test depends on (`_model/_power.mde_of`'s arguments)."""

    sd: float
    discordant: float | None = None  # 0/1 values without clusters: exact McNemar
    per_cluster: float = 1.0  # cases per cluster: t on n / per_cluster − 1 df


def _design(
    who: str,
    like: Comparison | None,
    sd_delta: object,
    discordant: object,
    score: str | ScoreDefinition | None,
) -> _Design:
    """The planned test: `sd_delta` (t), `discordant` (exact McNemar), or the one `like`
    ran on its score (its share of discordant pairs, or its sd and cases per cluster)."""
    given = sum(x is not None for x in (like, sd_delta, discordant))
    if given != 1:
        raise ConfigurationError(
            f"{who} needs exactly one of like= (a Comparison from eb.compare), sd_delta= "
            "(the standard deviation of the paired deltas, e.g. sd_delta=0.4) or discordant= "
            "(for 0/1 scores: the share of cases on which the two runs differ, e.g. 0.12)"
        )
    if sd_delta is not None or discordant is not None:
        if score is not None:
            what = "sd_delta=" if sd_delta is not None else "discordant="
            raise ConfigurationError(f"{who}: score= picks a score of like=; drop it with {what}")
        if discordant is not None:
            share = _real("discordant", discordant)
            if not 0.0 < share <= 1.0:
                raise ConfigurationError(
                    f"discordant must be a share of cases in (0, 1], not {discordant!r}"
                )
            return _Design(math.nan, discordant=share)
        sd = _real("sd_delta", sd_delta)
        if sd <= 0:
            raise ConfigurationError(f"sd_delta must be positive, not {sd_delta!r}")
        return _Design(sd)
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
    if r.test == MCNEMAR:
        if r.improved + r.regressed == 0:
            raise ConfigurationError(
                f"{who}: score {name!r} of that comparison has no spread of paired deltas to "
                f"plan from ({r.n_paired} paired, no case differs); pass discordant= instead"
            )
        return _Design(r.sd_delta, discordant=(r.improved + r.regressed) / r.n_paired)
    if not r.sd_delta > 0:  # NaN (fewer than 2 pairs, or clusters) or 0 (no spread)
        raise ConfigurationError(
            f"{who}: score {name!r} of that comparison has no spread of paired deltas to "
            f"plan from ({r.n_paired} paired, sd {r.sd_delta:g}); pass sd_delta= instead"
        )
    per_cluster = r.n_paired / r.n_clusters if r.test == CLUSTERED_T else 1.0
    return _Design(float(r.sd_delta), per_cluster=per_cluster)


def cases_needed(comparison: Comparison, score: str, delta: float) -> int | None:
    """About how many paired cases `comparison`'s test needs to detect `delta` on `score`
    (`eb.sample_size(delta, like=comparison, score=score)`); None when it has nothing to
    plan from."""
    try:
        return sample_size(delta, like=comparison, score=score)
    except ConfigurationError:
        return None


def sample_size(
    delta: float,
    *,
    like: Comparison | None = None,
    sd_delta: float | None = None,
    discordant: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    score: str | ScoreDefinition | None = None,
) -> int:
    """The number of paired cases needed to detect a change of `delta` (e.g. 0.03 = 3 pp).

    The smallest n at which the test the comparison will run detects `delta` with `power`
    (the n whose `eb.mde` is ≤ |delta|): the exact McNemar test for 0/1 scores (`discordant=`,
    or a `like=` of 0/1 scores), else the t test of the paired deltas (`sd_delta=`, or a
    `like=`'s sd; its clustered sd and cases per cluster when it was clustered, so n counts
    cases drawn the same way). docs/statistics.md has the formulas and their check.

    Args:
        delta: The change to detect, as a fraction (0.03 for 3 percentage points).
        like: A Comparison whose score's paired deltas stand for the planned ones.
        sd_delta: The sd of the paired deltas, instead of `like=`.
        discordant: For 0/1 scores, instead of `like=`: the share of cases on which the
            two runs will differ (0.12: they disagree on 12 % of the cases).
        power: The chance of detecting `delta` when it is real.
        alpha: The two-sided level of the test.
        score: Which score of `like=` (needed when it compared several).

    Raises:
        ConfigurationError: not exactly one of `like=` / `sd_delta=` / `discordant=`, a bad
            number, or a `like=` with several scores and no `score=`.

    Example:
        >>> import evalbook as eb
        >>> eb.sample_size(0.03, discordant=0.12), eb.sample_size(0.03, sd_delta=0.35)
        (1096, 1071)
    """
    d = _real("delta", delta)
    if d == 0:
        raise ConfigurationError("delta must not be 0: no sample size detects a change of 0")
    plan = _design("sample_size()", like, sd_delta, discordant, score)
    return n_for(
        d,
        plan.sd,
        power=_level("power", power),
        alpha=_level("alpha", alpha),
        discordant=plan.discordant,
        per_cluster=plan.per_cluster,
    )


def mde(
    n: int,
    *,
    like: Comparison | None = None,
    sd_delta: float | None = None,
    discordant: float | None = None,
    power: float = 0.8,
    alpha: float = 0.05,
    score: str | ScoreDefinition | None = None,
) -> float:
    """The minimum detectable effect of a paired comparison of `n` cases (the inverse of
    `eb.sample_size`): the |delta| that the test it runs detects with `power`, as a fraction.

    The exact McNemar test for 0/1 scores (`discordant=`, or a `like=` of 0/1 scores), else
    the t test of the paired deltas on its degrees of freedom (`sd_delta=`: n − 1; a
    clustered `like=`: its clusters scaled to n, minus 1). inf when no effect reaches
    `power` (McNemar on fewer than 6 pairs never rejects); NaN with fewer than 2 clusters.

    Args:
        n: The number of paired cases.
        like: A Comparison whose score's paired deltas stand for the planned ones (its
            clustered sd when it was clustered).
        sd_delta: The sd of the paired deltas, instead of `like=`.
        discordant: For 0/1 scores, instead of `like=`: the share of cases on which the
            two runs will differ.
        power: The chance of detecting the effect when it is real.
        alpha: The two-sided level of the test.
        score: Which score of `like=` (needed when it compared several).

    Raises:
        ConfigurationError: not exactly one of `like=` / `sd_delta=` / `discordant=`, a bad
            number, or a `like=` with several scores and no `score=`.

    Example:
        >>> import evalbook as eb
        >>> round(eb.mde(1000, discordant=0.12), 4), round(eb.mde(1000, sd_delta=0.35), 4)
        (0.0314, 0.031)
    """
    if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
        raise ConfigurationError(f"n must be a whole number of cases >= 1, not {n!r}")
    plan = _design("mde()", like, sd_delta, discordant, score)
    return mde_of(
        int(n),
        plan.sd,
        power=_level("power", power),
        alpha=_level("alpha", alpha),
        discordant=plan.discordant,
        per_cluster=plan.per_cluster,
    )
