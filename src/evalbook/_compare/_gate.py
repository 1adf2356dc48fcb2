"""The gate: every condition of a `GateSpec` on a run, and its verdict, `eb.Check`.

`run_gate` checks a run's own conditions (`_gate_checks.check_gate`), then, with a baseline,
non-inferiority (`_non_inferiority`), and returns a `Check`: the one gate logic, which
`evalbook gate`, `eb.check` (`_api/_check.py`) and the pytest plugin all call.
`gate_against(run, base, max_drop=...)` is non-inferiority alone. Nothing here reads files or
prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._util._text import visible
from ._gate_checks import (
    Condition,
    GateError,
    GateSpec,
    baseline_change,
    check_gate,
    gate_target,
    pending_note,
)
from ._non_inferiority import NonInferiority, non_inferiority

__all__ = ["Check", "gate_against", "gate_spec", "run_gate"]


@dataclass(frozen=True, repr=False)
class Check:
    """What a gate found: every condition, the notes, the measured score and (with a
    baseline) the paired numbers. Truthy when every condition holds.

    `report` is the text `evalbook gate` prints (without colour), and `repr(check)` is that
    report, so `assert eb.check(run, min=0.8)` says why it failed. `underpowered` is said in
    the report and never fails a check; an incomplete run never passes.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2, 3, 4]}), task=lambda x: x, name="demo",
        ...              scorers=[lambda x: float(x > 1)], store=None, progress=False)
        >>> result = eb.check(run, min=0.8)
        >>> bool(result), result.passed, result.mean
        (False, False, 0.75)
        >>> print(result.report)
        gate demo: lambda 75% · completed 100%
        ok    completion 100% (4 of 4 passed or failed) >= min 100% (--min-completion)
        FAIL  lambda: mean 75% < min 80% (--min)
        gate failed: 1 of 2 conditions
    """

    run: str
    checks: tuple[Condition, ...]
    notes: tuple[str, ...] = ()
    against: NonInferiority | None = None
    header: tuple[str, ...] = ()  # `gate RUN (path): headline`, `against BASE (path): ...`
    score: str | None = None  # the score measured (None: the passed rate, no headline score)
    mean: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    completion: float | None = None  # the run's completion (passed or failed samples)

    @property
    def passed(self) -> bool:
        """Whether every condition holds (an incomplete run never passes)."""
        return all(c.holds for c in self.checks)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def delta(self) -> float | None:
        """The paired delta (run − baseline), when gated against a baseline."""
        return None if self.against is None else self.against.delta

    @property
    def p_value(self) -> float | None:
        """The paired test's p-value against the baseline, when gated against one."""
        return None if self.against is None else self.against.p_value

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
    def underpowered(self) -> bool:
        """Whether the comparison against the baseline could not reliably see a drop of
        max_drop (said in the report; it never fails the check)."""
        return self.against is not None and self.against.underpowered

    @property
    def verdict(self) -> str:
        """`gate passed: 2 conditions hold` or `gate failed: 1 of 2 conditions`."""
        n, failed = len(self.checks), sum(not c.holds for c in self.checks)
        if failed:
            return f"gate failed: {failed} of {n} conditions"
        return f"gate passed: {n} conditions hold" if n != 1 else "gate passed: 1 condition holds"

    @property
    def lines(self) -> list[str]:
        """The report's lines: the run (and baseline), notes, each condition (`ok` / `FAIL`)
        with its details, the verdict. Untrusted text is not escaped here (`report` does)."""
        out = list(self.header)
        out.extend(f"note: {note}" for note in self.notes)
        for check in self.checks:
            out.append(f"{'ok  ' if check.holds else 'FAIL'}  {check.text}")
            out.extend(f"      {line}" for line in check.details)
        out.append(self.verdict)
        return out

    @property
    def report(self) -> str:
        """The report `evalbook gate` prints, without colour; control characters escaped."""
        return "\n".join(visible(line) for line in self.lines)

    def __str__(self) -> str:
        return self.report

    def __repr__(self) -> str:
        return self.report


def _header(word: str, run: RunData) -> str:
    where = f" ({run.path})" if run.path is not None else ""
    return f"{word} {run.name}{where}: {run.headline.text}"


def run_gate(
    run: RunData,
    spec: GateSpec,
    *,
    baseline: RunData | None = None,
    against: RunData | None = None,
) -> Check:
    """Every condition of `spec` on `run`: `check_gate`, then `--max-drop` against `against`.

    The one gate logic: `evalbook gate`, `eb.check` and the pytest plugin call it.

    Raises:
        GateError: an unknown score, or a condition that does not apply (as `check_gate`).
    """
    notes: list[str] = []
    regression = None if baseline is None else baseline_change(baseline, run, notes)
    checks = check_gate(run, spec, regression)
    target = gate_target(run, spec.score)
    found = None
    if spec.max_drop is not None or against is not None:
        if spec.max_drop is None or against is None:
            raise GateError("--against BASE and --max-drop X go together: give both")
        if target.score is None:
            raise GateError(
                "--max-drop needs a score: this run has no primary score, so pass --score NAME"
            )
        pending = pending_note(against)
        if pending is not None:
            notes.append(f"the baseline {pending[len('the run ') :]}")
        found = non_inferiority(against, run, target.score, spec.max_drop, notes)
        checks.append(found.check())
    header = [_header("gate", run)]
    if against is not None:
        header.append(_header("against", against))
    return Check(
        run.name,
        tuple(checks),
        tuple(notes),
        found,
        header=tuple(header),
        score=target.score,
        mean=target.mean,
        ci_low=target.ci_low,
        ci_high=target.ci_high,
        completion=run.headline.completion,
    )


def gate_against(
    run: RunData,
    base: RunData,
    *,
    max_drop: float,
    score: str | None = None,
    min_completion: float | None = None,
) -> Check:
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
        gate new: ok 100% · completed 100%
        against base: ok 75% · completed 100%
        ok    ok: delta +25.0 pp vs baseline, 95% CI [...]: lower bound ... >= −5.0 pp (--max-drop)
              mde ... pp (80% power, two-sided 5%, 40 paired cases)
        ...
        gate passed: 1 condition holds
    """
    spec = gate_spec(score=score, max_drop=max_drop, min_completion=min_completion)
    try:
        return run_gate(run, spec, against=base)
    except GateError as exc:
        raise ConfigurationError(str(exc)) from None


def _fraction(name: str, value: object, *, above_zero: bool = False) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigurationError(f"{name} must be a fraction such as 0.05, got {value!r}")
    if above_zero and not 0 < value <= 1:
        raise ConfigurationError(
            f"{name} must be above 0 and at most 1 (a drop of 0.05 is 5 pp), got {value!r}"
        )
    if not 0 <= value <= 1:
        raise ConfigurationError(f"{name} must be a fraction between 0 and 1, got {value!r}")
    return float(value)


def gate_spec(
    *,
    min: float | None = None,
    max_errors: int | None = None,
    min_completion: float | None = None,
    max_drop: float | None = None,
    score: str | None = None,
    max_cost: float | None = None,
) -> GateSpec:
    """The conditions of `eb.check` (and `eb.Eval(check=...)`) as a `GateSpec`, each checked.

    Raises:
        ConfigurationError: a fraction outside [0, 1] (`max_drop` must be above 0), a count
            or a cost below 0, a score that is not a name.

    Example:
        >>> gate_spec(min=0.8, max_drop=0.02).max_drop
        0.02
    """
    if isinstance(max_errors, bool) or not (max_errors is None or isinstance(max_errors, int)):
        raise ConfigurationError(f"max_errors must be a whole number, got {max_errors!r}")
    if max_errors is not None and max_errors < 0:
        raise ConfigurationError(f"max_errors must be 0 or more, got {max_errors!r}")
    if max_cost is not None and (
        isinstance(max_cost, bool) or not isinstance(max_cost, int | float) or not max_cost >= 0
    ):
        raise ConfigurationError(f"max_cost must be an amount of US dollars >= 0, got {max_cost!r}")
    if score is not None and not isinstance(score, str):
        raise ConfigurationError(f"score must be a score's name, got {score!r}")
    return GateSpec(
        score=score,
        min=_fraction("min", min),
        max_errors=max_errors,
        min_completion=_fraction("min_completion", min_completion),
        max_drop=_fraction("max_drop", max_drop, above_zero=True),
        max_cost=None if max_cost is None else float(max_cost),
    )
