"""Non-inferiority of a run against a baseline: the paired delta, its CI and the power.

`non_inferiority` compares (`eb.compare(baseline, run)`) and says whether the CI's lower bound
is above −max_drop and whether the comparison could detect a drop of max_drop at all; the gate
(`_gate.run_gate`) turns it into its `--max-drop` check. Nothing here reads files or prints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .._model._power import mde_of
from .._model._run_data import RunData
from .._util._fmt import format_pair, format_pp, format_pp_ci
from ._compare import compare
from ._gate_checks import TOLERANCE, Condition, GateError, finite_or_none
from ._power import cases_needed

__all__ = ["NonInferiority", "non_inferiority"]


@dataclass(frozen=True)
class NonInferiority:
    """One score of a run against a baseline run: the paired delta (run − baseline), its 95 %
    CI, its p-value, and the power of the comparison.

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
    p_value: float | None
    mde: float | None
    n_paired: int
    n_needed: int | None

    @property
    def holds(self) -> bool:
        """Whether the CI's lower bound is at least −max_drop (no paired values: it fails)."""
        return self.ci_low is not None and self.ci_low >= -self.max_drop - TOLERANCE

    @property
    def underpowered(self) -> bool:
        """Whether the comparison could not reliably detect a drop of `max_drop`."""
        return self.mde is not None and self.mde > self.max_drop + TOLERANCE

    def check(self) -> Condition:
        """The `--max-drop` condition, its observed values and the power lines under it."""
        flag = "--max-drop"
        limit = format_pp(self.max_drop, signed=False)
        if self.ci_low is None:
            text = (
                f"{self.score}: no paired counted values against the baseline, so no CI "
                f"(lower bound must be >= −{limit}) ({flag})"
            )
            return Condition(flag, False, text)
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
        return Condition(flag, ok, text, self.power_lines())

    def power_lines(self) -> tuple[str, ...]:
        """`mde ...` and, when underpowered, `underpowered: about N paired cases needed ...`."""
        if self.mde is None:
            return (
                f"mde — (needs at least 2 paired cases with a spread of deltas; "
                f"{self.n_paired} paired)",
            )
        limit = format_pp(self.max_drop, signed=False)
        if math.isinf(self.mde):  # the test cannot reject on so few cases (McNemar below 6)
            lines = [
                f"mde — (no change of any size is detected with 80% power on "
                f"{self.n_paired} paired cases)"
            ]
            why = f"no change is detectable: a real drop of {limit} would go unseen"
        else:
            mde = format_pp(self.mde, signed=False)
            lines = [f"mde {mde} (80% power, two-sided 5%, {self.n_paired} paired cases)"]
            why = (
                f"the mde is {mde} > max drop {limit}: a real drop of {limit} would often go unseen"
            )
        if self.underpowered and self.n_needed is not None:
            lines.append(f"underpowered: about {self.n_needed} paired cases needed ({why})")
        return tuple(lines)


def non_inferiority(
    baseline: RunData, run: RunData, score: str, max_drop: float, notes: list[str]
) -> NonInferiority:
    """`run` against `baseline` on `score` (`eb.compare(baseline, run)`), for `--max-drop`.

    The mde is the comparison's `mde` column when it has one, else `_model/_power.mde_of`
    over the sd of its paired deltas; `n_needed` plans the same test for max_drop
    (`eb.sample_size(max_drop, like=comparison)`: a clustered mde gives a clustered n, a
    McNemar one a McNemar n). Warnings go to `notes`.

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
        mde = finite_or_none(row["mde"])
    elif n >= 2:
        cases = comparison.cases
        paired = cases[(cases["score"].astype(str) == score) & cases["delta"].notna()]
        sd = float(paired["delta"].to_numpy(dtype=float).std(ddof=1))
        mde = finite_or_none(mde_of(n, sd))
    n_needed = None
    if mde is not None and mde > max_drop + TOLERANCE and n >= 1:
        # the same test as the mde's (McNemar, or t on its degrees of freedom; clustered
        # when the comparison was), planned for max_drop
        n_needed = cases_needed(comparison, score, max_drop)
    return NonInferiority(
        score=score,
        max_drop=max_drop,
        delta=None if row is None else finite_or_none(row["delta"]),
        ci_low=None if row is None else finite_or_none(row["ci_low"]),
        ci_high=None if row is None else finite_or_none(row["ci_high"]),
        p_value=None if row is None else finite_or_none(row["p_value"]),
        mde=mde,
        n_paired=n,
        n_needed=n_needed,
    )
