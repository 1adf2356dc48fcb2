"""The gate's conditions over one run's summary, each checked with its observed value.

`evalbook gate` (docs/cli.md) parses its options into a `GateSpec`; `check_gate` checks them
and returns one `Condition` each. The gate as a whole (these, then non-inferiority against a
baseline) is `_gate.run_gate`. Nothing here reads files or prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .._model._origin import INFRA
from .._model._run_data import RunData
from .._util._fmt import format_amounts, format_pair, format_pct, format_pp
from ._compare import compare

__all__ = [
    "TOLERANCE",
    "Condition",
    "GateError",
    "GateSpec",
    "baseline_change",
    "check_gate",
    "finite_or_none",
    "gate_target",
    "pending_note",
]

# Observed values within this distance of a threshold count as equal to it, so that a mean
# computed as 0.7000000000000001 or 0.6999999999999999 meets `--min 0.7`.
TOLERANCE = 1e-9


class GateError(Exception):
    """The gate was asked something it cannot answer (unknown score, missing baseline score)."""


@dataclass(frozen=True)
class GateSpec:
    """The conditions of one gate; None means "not checked"."""

    score: str | None = None
    min: float | None = None
    min_ci_low: float | None = None
    max_errors: int | None = None
    max_unscored_rate: float | None = None
    max_regression: float | None = None
    min_completion: float | None = None
    max_drop: float | None = None  # with a baseline to gate against (`--against`)
    max_cost: float | None = None  # US dollars, the run's total recorded cost
    max_latency_p95: float | None = None  # seconds, `usage_summary().latency_p95_s`
    max_infra_errors: float | None = None  # share of samples failed outside the model

    def any(self) -> bool:
        """Whether at least one condition is set."""
        return any(
            v is not None
            for v in (
                self.min,
                self.min_ci_low,
                self.max_errors,
                self.max_unscored_rate,
                self.max_regression,
                self.min_completion,
                self.max_drop,
                self.max_cost,
                self.max_latency_p95,
                self.max_infra_errors,
            )
        )


@dataclass(frozen=True)
class Target:
    """What the gate measures: one score of a run, or (no headline score) its passed rate."""

    score: str | None
    label: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    errors: int
    unscored: int
    n_cases: int

    @property
    def name(self) -> str:
        """The score name, or `passed rate`."""
        return self.score if self.score is not None else "passed rate"


@dataclass(frozen=True)
class Condition:
    """One condition of the gate, with what was measured."""

    flag: str
    holds: bool
    text: str
    details: tuple[str, ...] = ()  # lines printed under the check (the power of --max-drop)


def finite_or_none(x: Any) -> float | None:
    """`x` as a float, None for a missing value (None or NaN): how the gate reads a table cell."""
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) else value


def gate_target(run: RunData, score: str | None) -> Target:
    """The score the gate measures: `score`, else the headline's score, else the passed rate.

    Raises:
        GateError: `score` is not a score of the run.
    """
    summary = run.summary()
    names = [str(s) for s in summary["score"]]
    if score is None:
        score = run.headline.score
        if score is None:
            h = run.headline
            counts = h.counts
            return Target(
                None,
                h.label,
                h.value,
                None if h.ci is None else h.ci[0],
                None if h.ci is None else h.ci[1],
                counts.get("errored", 0) + counts.get("timed_out", 0),
                0,
                h.n_samples,
            )
    if score not in names:
        known = ", ".join(names) or "none"
        raise GateError(f"unknown score {score!r}; this run's scores are: {known}")
    row = summary.iloc[names.index(score)]
    return Target(
        score,
        str(row["label"]),
        finite_or_none(row["mean"]),
        finite_or_none(row["ci_low"]),
        finite_or_none(row["ci_high"]),
        int(row["errors"]),
        int(row["unscored"]),
        int(row["n_cases"]) * run.headline.epochs,  # the counts are of samples
    )


def check_gate(
    run: RunData, spec: GateSpec, regression: Callable[[str], float | None] | None = None
) -> list[Condition]:
    """Check every condition of `spec` on `run`.

    An incomplete run (interrupted, or still running: some cases have no final outcome)
    never passes: a failing `incomplete` check is added whatever `spec` asks.
    `regression(score)` returns the change of `score` from the baseline to this run
    (this run's mean minus the baseline's; None when nothing can be compared); it is needed
    only when `spec.max_regression` is set.

    Raises:
        GateError: an unknown score, or a condition that does not apply to the target.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> [c.holds for c in check_gate(run, GateSpec(min=0.9, max_errors=0))]
        [True, True]
    """
    target = gate_target(run, spec.score)
    name = target.name
    checks: list[Condition] = []
    pending = pending_note(run)
    if pending is not None:
        # A false pass otherwise: the cases that never ran could each have failed.
        checks.append(Condition("incomplete", False, f"{pending}; an incomplete run never passes"))
    stopped = run.options.get("stopped") if isinstance(run.options, dict) else None
    if isinstance(stopped, dict) and stopped.get("decision") == "inferior":
        # the early stop decided against the run: no gate passes it
        checks.append(Condition("decision", False, f"{run.headline.stopped}"))
    if spec.min_completion is not None:
        checks.append(_check_completion(run, spec.min_completion))
    if spec.min is not None:
        checks.append(_check_min(name, "mean", "--min", target.mean, spec.min))
    if spec.min_ci_low is not None:
        checks.append(_check_min(name, "CI low", "--min-ci-low", target.ci_low, spec.min_ci_low))
    if spec.max_errors is not None:
        ok = target.errors <= spec.max_errors
        rel = "<=" if ok else ">"
        what = "error record" if target.score is not None else "errored or timed-out case"
        what += "" if target.errors == 1 else "s"
        message = f"{name}: {target.errors} {what} {rel} max {spec.max_errors} (--max-errors)"
        checks.append(Condition("--max-errors", ok, message))
    if spec.max_unscored_rate is not None:
        if target.score is None:
            raise GateError(
                "--max-unscored-rate needs a score: this run has no primary score, "
                "so pass --score NAME"
            )
        rate = target.unscored / target.n_cases if target.n_cases else 0.0
        ok = rate <= spec.max_unscored_rate + TOLERANCE
        obs, thr = format_pair(rate, spec.max_unscored_rate)
        rel = "<=" if ok else ">"
        message = (
            f"{name}: unscored rate {obs} ({target.unscored} of {target.n_cases}) {rel} "
            f"max {thr} (--max-unscored-rate)"
        )
        checks.append(Condition("--max-unscored-rate", ok, message))
    if spec.max_regression is not None:
        checks.append(_check_regression(target, spec.max_regression, regression))
    if spec.max_infra_errors is not None:
        checks.append(_check_infra(run, spec.max_infra_errors))
    if spec.max_cost is not None or spec.max_latency_p95 is not None:
        usage = run.usage_summary().iloc[0]
        if spec.max_cost is not None:
            checks.append(_check_cost(usage, run.headline.n_samples, spec.max_cost))
        if spec.max_latency_p95 is not None:
            checks.append(
                _check_latency(finite_or_none(usage["latency_p95_s"]), spec.max_latency_p95)
            )
    return checks


def _check_cost(usage: Any, n_samples: int, max_cost: float) -> Condition:
    """`--max-cost`: the run's total recorded cost; an unknown cost fails (it is never $0)."""
    flag = "--max-cost"
    cost, known = finite_or_none(usage["cost"]), int(usage["n_cost_known"])
    if cost is None:
        return Condition(
            flag,
            False,
            f"cost unknown: no sample recorded a cost, and an unknown cost is never counted as "
            f"$0 (max {format_amounts(max_cost, max_cost, '$')[1]}) ({flag})",
        )
    ok = cost <= max_cost + TOLERANCE
    obs, thr = format_amounts(cost, max_cost, "$")
    partial = f" (known for {known} of {n_samples} samples)" if known < n_samples else ""
    rel = "<=" if ok else ">"
    return Condition(flag, ok, f"cost {obs}{partial} {rel} max {thr} ({flag})")


def _check_infra(run: RunData, thr: float) -> Condition:
    """`--max-infra-errors`: the share of samples that failed outside the model (provider +
    environment origins, docs/origin.md)."""
    h = run.headline
    flag = "--max-infra-errors"
    n = h.n_samples
    if not n:
        return Condition(flag, True, f"infrastructure errors — (no cases) ({flag})")
    k = sum(h.origins.get(o, 0) for o in INFRA)
    rate = k / n
    ok = rate <= thr + TOLERANCE
    obs, thr_text = format_pair(rate, thr)
    rel = "<=" if ok else ">"
    which = h.outside_model or "none failed outside the model"
    return Condition(
        flag,
        ok,
        f"infrastructure errors {obs} ({k} of {n} samples: {which}) {rel} max {thr_text} ({flag})",
    )


def _check_latency(p95: float | None, max_s: float) -> Condition:
    """`--max-latency-p95`: the 95th percentile of the samples' durations (those that ran)."""
    flag = "--max-latency-p95"
    if p95 is None:
        thr = format_amounts(max_s, max_s, " s")[1]
        return Condition(flag, False, f"latency p95 is — (no sample ran) > max {thr} ({flag})")
    ok = p95 <= max_s + TOLERANCE
    obs, thr = format_amounts(p95, max_s, " s")
    return Condition(flag, ok, f"latency p95 {obs} {'<=' if ok else '>'} max {thr} ({flag})")


def _check_min(name: str, what: str, flag: str, observed: float | None, thr: float) -> Condition:
    if observed is None:
        return Condition(
            flag, False, f"{name}: {what} is — (no counted values) < min {format_pct(thr)} ({flag})"
        )
    ok = observed >= thr - TOLERANCE
    obs, thr_text = format_pair(observed, thr)
    rel = ">=" if ok else "<"
    return Condition(flag, ok, f"{name}: {what} {obs} {rel} min {thr_text} ({flag})")


def _check_completion(run: RunData, thr: float) -> Condition:
    """`--min-completion`: the share of cases passed or failed (not errored, timed out, not run)."""
    h = run.headline
    done = h.counts.get("passed", 0) + h.counts.get("failed", 0)
    flag = "--min-completion"
    if not h.n_samples:
        return Condition(
            flag, False, f"completion is — (no cases) < min {format_pct(thr)} ({flag})"
        )
    rate = done / h.n_samples
    ok = rate >= thr - TOLERANCE
    obs, thr_text = format_pair(rate, thr)
    rel = ">=" if ok else "<"
    message = f"completion {obs} ({done} of {h.n_samples} passed or failed) {rel} min {thr_text}"
    return Condition(flag, ok, f"{message} ({flag})")


def _check_regression(
    target: Target, max_drop: float, regression: Callable[[str], float | None] | None
) -> Condition:
    if target.score is None:
        raise GateError(
            "--max-regression needs a score: this run has no primary score, so pass --score NAME"
        )
    if regression is None:
        raise GateError("--max-regression needs --baseline RUN")
    delta = regression(target.score)
    flag = "--max-regression"
    if delta is None:
        return Condition(
            flag,
            False,
            f"{target.score}: no change measurable against the baseline (no paired counted "
            f"values) ({flag} {format_pp(max_drop, signed=False)})",
        )
    drop = -delta
    ok = drop <= max_drop + TOLERANCE
    if drop <= 0:
        obs, thr = format_pp(delta), format_pp(max_drop, signed=False)
        return Condition(
            flag, ok, f"{target.score}: change {obs} vs baseline (no drop) ({flag} {thr})"
        )
    obs, thr = format_pair(drop, max_drop, points=True)
    rel = "<=" if ok else ">"
    return Condition(flag, ok, f"{target.score}: drop {obs} vs baseline {rel} max {thr} ({flag})")


def baseline_change(
    baseline: RunData, run: RunData, notes: list[str]
) -> Callable[[str], float | None]:
    """`regression` for `check_gate`: a score's paired change from `baseline` to `run`.

    The comparison's warnings are added to `notes` (they say what makes the change less than
    like for like).
    """

    def change(score: str) -> float | None:
        if score not in {d.name for d in baseline.definitions}:
            raise GateError(f"the baseline run {baseline.name!r} has no score {score!r}")
        comparison = compare(baseline, run, score=score)
        notes.extend(comparison.warnings)
        rows = comparison.summary[comparison.summary["score"].astype(str) == score]
        if rows.empty:
            return None
        return finite_or_none(rows.iloc[0]["delta"])

    return change


def pending_note(run: RunData) -> str | None:
    """A note when some cases of `run` have no final outcome (an incomplete run), else None."""
    # an early-stopped run's samples not run are `stopped_early`, not missing
    pending = run.headline.n_samples - sum(run.headline.counts.values())
    pending -= run.headline.stopped_early
    if pending <= 0:
        return None
    what = "samples" if run.headline.epochs > 1 else "cases"
    cases = f"{pending} {what} have" if pending != 1 else f"1 {what[:-1]} has"
    return f"the run is incomplete: {cases} no final outcome"
