"""The gate against a baseline (non-inferiority): `evalbook gate RUN --against BASE --max-drop X`.

`gate_against(run, base, max_drop=...)` is the same gate as a Python function, for notebooks
and pytest (docs/cli.md). `run_gate` runs every condition of a `GateSpec` (those of
`check_gate`, then `--max-drop`) and returns a `GateResult`; nothing here reads files or
prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._errors import ConfigurationError
from .._model._power import mde_of, n_for
from .._model._run_data import RunData
from .._util._fmt import format_pair, format_pp, format_pp_ci
from ._compare import compare
from ._gate import (
    _EPS,
    Check,
    GateError,
    GateSpec,
    _num,
    baseline_change,
    check_gate,
    gate_target,
    pending_note,
)

__all__ = ["GateResult", "NonInferiority", "gate_against", "non_inferiority", "run_gate"]


@dataclass(frozen=True)
class NonInferiority:
    """One score of a run against a baseline run: the paired delta (run − baseline), its 95 %
    CI, and the power of the comparison.

    It holds when the CI's lower bound is ≥ −`max_drop`. It is `underpowered` when `mde` (the
    smallest |delta| detected with 80 % power at two-sided α = 0.05, for these paired cases) is
    above `max_drop`; `n_needed` is then about how many paired cases would bring it down to
    `max_drop`. Being underpowered is reported, never a failure of its own.
    """

    score: str
    max_drop: float
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    mde: float | None
    n_paired: int
    n_needed: int | None

    @property
    def holds(self) -> bool:
        """Whether the CI's lower bound is at least −max_drop (no paired values: it fails)."""
        return self.ci_low is not None and self.ci_low >= -self.max_drop - _EPS

    @property
    def underpowered(self) -> bool:
        """Whether the comparison could not reliably detect a drop of `max_drop`."""
        return self.mde is not None and self.mde > self.max_drop + _EPS

    def check(self) -> Check:
        """The `--max-drop` condition, its observed values and the power lines under it."""
        flag = "--max-drop"
        limit = format_pp(self.max_drop, signed=False)
        if self.ci_low is None:
            text = (
                f"{self.score}: no paired counted values against the baseline, so no CI "
                f"(lower bound must be >= −{limit}) ({flag})"
            )
            return Check(flag, False, text)
        ok = self.holds
        if self.ci_low < 0:
            obs, thr = format_pair(-self.ci_low, self.max_drop, points=True)
            bound = f"lower bound −{obs} {'>=' if ok else '<'} −{thr}"
        else:
            bound = f"lower bound {format_pp(self.ci_low)} >= −{limit}"
        text = (
            f"{self.score}: delta {format_pp(self.delta)} vs baseline, 95% CI "
            f"{format_pp_ci(self.ci_low, self.ci_high)}: {bound} ({flag})"
        )
        return Check(flag, ok, text, self.power_lines())

    def power_lines(self) -> tuple[str, ...]:
        """`mde ...` and, when underpowered, `underpowered: about N paired cases needed ...`."""
        if self.mde is None:
            return (
                f"mde — (needs at least 2 paired cases with a spread of deltas; "
                f"{self.n_paired} paired)",
            )
        mde = format_pp(self.mde, signed=False)
        lines = [f"mde {mde} (80% power, two-sided 5%, {self.n_paired} paired cases)"]
        if self.underpowered and self.n_needed is not None:
            limit = format_pp(self.max_drop, signed=False)
            lines.append(
                f"underpowered: about {self.n_needed} paired cases needed (the mde is {mde} "
                f"> max drop {limit}: a real drop of {limit} would often go unseen)"
            )
        return tuple(lines)


def non_inferiority(
    baseline: RunData, run: RunData, score: str, max_drop: float, notes: list[str]
) -> NonInferiority:
    """`run` against `baseline` on `score` (`eb.compare(baseline, run)`), for `--max-drop`.

    The mde is the comparison's `mde` column when it has one, else `_model/_power.mde_of`
    over the sd of its paired deltas; `n_needed` is `n_for(max_drop, sd)` with the sd the
    mde stands for (so a clustered mde gives a clustered n). Warnings go to `notes`.

    Raises:
        GateError: the baseline has no such score.
    """
    if score not in {d.name for d in baseline.definitions}:
        raise GateError(f"the baseline run {baseline.name!r} has no score {score!r}")
    comparison = compare(baseline, run, score=score)
    notes.extend(comparison.warnings)
    rows = comparison.summary[comparison.summary["score"].astype(str) == score]
    row = rows.iloc[0] if len(rows) else None
    n = 0 if row is None else int(row["n_paired"])
    mde: float | None = None
    if row is not None and "mde" in rows.columns:
        mde = _num(row["mde"])
    elif n >= 2:
        cases = comparison.cases
        paired = cases[(cases["score"].astype(str) == score) & cases["delta"].notna()]
        sd = float(paired["delta"].to_numpy(dtype=float).std(ddof=1))
        mde = _num(mde_of(n, sd))
    n_needed = None
    if mde is not None and mde > max_drop + _EPS and n >= 1:
        # the sd of paired deltas that this mde stands for: mde = z · sd / √n
        sd_delta = mde * math.sqrt(n) / mde_of(1, 1.0)
        n_needed = n_for(max_drop, sd_delta)
    return NonInferiority(
        score=score,
        max_drop=max_drop,
        delta=None if row is None else _num(row["delta"]),
        ci_low=None if row is None else _num(row["ci_low"]),
        ci_high=None if row is None else _num(row["ci_high"]),
        mde=mde,
        n_paired=n,
        n_needed=n_needed,
    )


@dataclass(frozen=True)
class GateResult:
    """What a gate found: every check, the notes, and (with a baseline) the paired numbers.

    `passed` is True when every check holds. `str(result)` is the report `evalbook gate`
    prints (without colour), so a failed `assert result.passed, result` shows it.
    """

    run: str
    checks: tuple[Check, ...]
    notes: tuple[str, ...] = ()
    against: NonInferiority | None = None

    @property
    def passed(self) -> bool:
        """Whether every condition holds (an incomplete run never passes)."""
        return all(c.holds for c in self.checks)

    @property
    def delta(self) -> float | None:
        """The paired delta (run − baseline), when gated against a baseline."""
        return None if self.against is None else self.against.delta

    @property
    def ci(self) -> tuple[float, float] | None:
        """The delta's 95 % CI, when gated against a baseline and one exists."""
        a = self.against
        if a is None or a.ci_low is None or a.ci_high is None:
            return None
        return (a.ci_low, a.ci_high)

    @property
    def mde(self) -> float | None:
        """The comparison's minimum detectable effect (80 % power, two-sided α = 0.05)."""
        return None if self.against is None else self.against.mde

    @property
    def n_needed(self) -> int | None:
        """About how many paired cases would make the mde ≤ max_drop (when underpowered)."""
        return None if self.against is None else self.against.n_needed

    @property
    def verdict(self) -> str:
        """`gate passed: 2 conditions hold` or `gate failed: 1 of 2 conditions`."""
        n, failed = len(self.checks), sum(not c.holds for c in self.checks)
        if failed:
            return f"gate failed: {failed} of {n} conditions"
        return f"gate passed: {n} conditions hold" if n != 1 else "gate passed: 1 condition holds"

    @property
    def lines(self) -> list[str]:
        """The report's lines: notes, then each check (`ok` / `FAIL`) and its details."""
        out = [f"note: {note}" for note in self.notes]
        for check in self.checks:
            out.append(f"{'ok  ' if check.holds else 'FAIL'}  {check.text}")
            out.extend(f"      {line}" for line in check.details)
        out.append(self.verdict)
        return out

    def __str__(self) -> str:
        return "\n".join(self.lines)


def run_gate(
    run: RunData,
    spec: GateSpec,
    *,
    baseline: RunData | None = None,
    against: RunData | None = None,
) -> GateResult:
    """Every condition of `spec` on `run`: `check_gate`, then `--max-drop` against `against`.

    Raises:
        GateError: an unknown score, or a condition that does not apply (as `check_gate`).
    """
    notes: list[str] = []
    regression = None if baseline is None else baseline_change(baseline, run, notes)
    checks = check_gate(run, spec, regression)
    found = None
    if spec.max_drop is not None or against is not None:
        if spec.max_drop is None or against is None:
            raise GateError("--against BASE and --max-drop X go together: give both")
        target = gate_target(run, spec.score)
        if target.score is None:
            raise GateError(
                "--max-drop needs a score: this run has no primary score, so pass --score NAME"
            )
        pending = pending_note(against)
        if pending is not None:
            notes.append(f"the baseline {pending[len('the run ') :]}")
        found = non_inferiority(against, run, target.score, spec.max_drop, notes)
        checks.append(found.check())
    return GateResult(run.name, tuple(checks), tuple(notes), found)


def gate_against(
    run: RunData,
    base: RunData,
    *,
    max_drop: float,
    score: str | None = None,
    min_completion: float | None = None,
) -> GateResult:
    """Non-inferiority of `run` against the baseline run `base`, as `evalbook gate RUN
    --against BASE --max-drop X` checks it (docs/cli.md).

    It passes when the 95 % CI lower bound of the paired delta (run − base, on `score`, by
    default the run's headline score) is ≥ −`max_drop`, and `run` is complete (an incomplete
    or running run never passes) with, if given, a completion ≥ `min_completion`. The result
    carries the delta, its CI, the mde and, when the mde exceeds `max_drop`, about how many
    paired cases would be needed; being underpowered alone never fails the gate.

    Raises:
        ConfigurationError: `max_drop` or `min_completion` is not a fraction (`max_drop` must be
            above 0), or `score` is not a score of both runs.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"x": range(40)})
        >>> ok = eb.define_score("ok", primary=True)
        >>> base = eb.run(df, task=lambda x: x, scorers=[eb.scorer(ok)(lambda x: float(x % 4 > 0))],
        ...               name="base", store=None, progress=False)
        >>> new = eb.run(df, task=lambda x: x, scorers=[eb.scorer(ok)(lambda x: 1.0)],
        ...              name="new", store=None, progress=False)
        >>> result = gate_against(new, base, max_drop=0.05)
        >>> result.passed, round(result.delta, 2), result.n_needed
        (True, 0.25, 604)
        >>> print(result)  # doctest: +ELLIPSIS
        ok    ok: delta +25.0 pp vs baseline, 95% CI [...]: lower bound ... >= −5.0 pp (--max-drop)
              mde ... pp (80% power, two-sided 5%, 40 paired cases)
        ...
        gate passed: 1 condition holds
    """
    if isinstance(max_drop, bool) or not isinstance(max_drop, int | float):
        raise ConfigurationError(f"max_drop must be a fraction such as 0.05, got {max_drop!r}")
    if not 0 < max_drop <= 1:
        raise ConfigurationError(
            f"max_drop must be above 0 and at most 1 (a drop of 0.05 is 5 pp), got {max_drop!r}"
        )
    if min_completion is not None and not 0 <= min_completion <= 1:
        raise ConfigurationError(
            f"min_completion must be a fraction between 0 and 1, got {min_completion!r}"
        )
    spec = GateSpec(score=score, max_drop=float(max_drop), min_completion=min_completion)
    try:
        return run_gate(run, spec, against=base)
    except GateError as exc:
        raise ConfigurationError(str(exc)) from None
