"""The gate: every condition of a `GateSpec` on a run, and the result `evalbook gate` prints.

`run_gate` checks a run's own conditions (`_gate_checks.check_gate`), then, with a baseline,
non-inferiority (`_non_inferiority`), and returns a `GateResult`. `gate_against(run, base,
max_drop=...)` is the same gate as a Python function, for notebooks and pytest (docs/cli.md).
Nothing here reads files or prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ConfigurationError
from .._model._run_data import RunData
from ._gate_checks import (
    Check,
    GateError,
    GateSpec,
    baseline_change,
    check_gate,
    gate_target,
    pending_note,
)
from ._non_inferiority import NonInferiority, non_inferiority

__all__ = ["GateResult", "gate_against", "run_gate"]


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
        (True, 0.25, 817)
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
