"""The scoring rule (docs/scoring.md): the one function that decides counted values, and the
summaries and headline built on it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._util._fmt import format_pct
from .._util._text import visible
from ._contract import ERROR, SCORED, UNSCORED
from ._results import ERRORED, FAILED, OUTCOMES, PASSED, TIMED_OUT, Results
from ._scores import ScoreDefinition
from ._stats import mean_ci, wilson

__all__ = ["Headline", "counted_values", "headline_of", "summarize"]


def counted_values(
    outcome: np.ndarray, status: np.ndarray, value: np.ndarray, zero_on_error: np.ndarray
) -> np.ndarray:
    """The value each record contributes to its mean; NaN where it is not counted.

    All arguments are aligned per record (`outcome` is the case's final outcome code).

    | final outcome       | counted value                                                   |
    |---------------------|-----------------------------------------------------------------|
    | passed              | recorded value; unscored: not counted; error: errors policy     |
    | failed              | 0, whatever was recorded                                        |
    | errored / timed_out | errors policy: "exclude" not counted, "zero" 0                  |
    | (no outcome yet)    | not counted                                                     |
    """
    counted = np.full(value.shape, np.nan)
    passed = outcome == PASSED
    ok = passed & (status == SCORED)
    counted[ok] = value[ok]
    counted[passed & (status == ERROR) & zero_on_error] = 0.0
    counted[outcome == FAILED] = 0.0
    no_result = (outcome == ERRORED) | (outcome == TIMED_OUT)
    counted[no_result & zero_on_error] = 0.0
    return counted


def counted_of(results: Results, definitions: Sequence[ScoreDefinition]) -> np.ndarray:
    """`counted_values` for every record of a run."""
    n_scores = len(definitions)
    zero = np.array([d.errors == "zero" for d in definitions], dtype=bool)
    return counted_values(
        np.repeat(results.outcome, n_scores),
        results.status,
        results.value,
        np.tile(zero, results.n_samples),
    )


SUMMARY_COLUMNS = [
    "score",
    "label",
    "primary",
    "derived",
    "mean",
    "ci_low",
    "ci_high",
    "n_cases",
    "counted",
    "zeroed",
    "excluded",
    "unscored",
    "errors",
    "reducer",
    "epochs",
    "var_between",
    "var_within",
]


def summarize(
    results: Results,
    definitions: Sequence[ScoreDefinition],
    counted: np.ndarray,
    reduced: pd.DataFrame,
    variance: pd.DataFrame,
) -> pd.DataFrame:
    """One row per score: mean and CI over cases, next to every count of samples.

    The mean and CI are over the cases' reduced values (`reduced`, from `reduce_scores`):
    the case is the unit of resampling, however many epochs it ran. The counts are of
    sample records: `counted + unscored + excluded == n_cases * epochs`; `zeroed` (failed
    samples, and errors under `errors="zero"`) is part of `counted`; `errors` counts error
    records however they counted. `var_between` / `var_within` (from `variance_parts`) are
    given when the run has 2 epochs or more, NaN otherwise.
    """
    n, s, k = results.n_samples, len(definitions), results.epochs
    c = counted.reshape(n, s)
    status = results.status.reshape(n, s)
    value = results.value.reshape(n, s)
    case_value = reduced["value"].to_numpy(np.float64).reshape(results.n_cases, s)
    case_scored = (reduced["status"] == "scored").to_numpy().reshape(results.n_cases, s)
    rows = []
    for j, d in enumerate(definitions):
        col = c[:, j]
        is_counted = ~np.isnan(col)
        recorded_zero = (status[:, j] == SCORED) & (value[:, j] == 0.0)
        zeroed = int(np.sum(is_counted & (col == 0.0) & ~recorded_zero))
        not_counted = ~is_counted
        mean, lo, hi = mean_ci(case_value[case_scored[:, j], j])
        rows.append(
            (
                d.name,
                d.primary,
                d.derived,
                math.nan if mean is None else mean,
                lo,
                hi,
                results.n_cases,
                int(is_counted.sum()),
                zeroed,
                int(np.sum(not_counted & (status[:, j] != UNSCORED))),
                int(np.sum(not_counted & (status[:, j] == UNSCORED))),
                int(np.sum(status[:, j] == ERROR)),
                d.reducer,
                k,
                float(variance["var_between"].iloc[j]) if k > 1 else math.nan,
                float(variance["var_within"].iloc[j]) if k > 1 else math.nan,
            )
        )
    table = pd.DataFrame.from_records(rows, columns=[c for c in SUMMARY_COLUMNS if c != "label"])
    table["score"] = pd.Categorical(table["score"], categories=[d.name for d in definitions])
    # labels are free text: an object column, as in the other tables
    labels = [d.display_label() for d in definitions]
    table.insert(1, "label", pd.Series(labels, dtype=object, index=table.index))
    return table


@dataclass(frozen=True)
class Headline:
    """The one number a run is read by, with its completion rate.

    `score` is the headline score's name, or None when it is the passed rate.
    """

    score: str | None
    label: str
    value: float | None
    ci: tuple[float, float] | None
    completion: float | None
    counts: dict[str, int] = field(default_factory=dict)
    n_cases: int = 0
    epochs: int = 1

    @property
    def n_samples(self) -> int:
        """Samples (case, epoch): what `counts` and `completion` count."""
        return self.n_cases * self.epochs

    @property
    def text(self) -> str:
        """E.g. `Pass 52% · completed 100%`, with `(n errored, n timed out)` when relevant."""
        text = f"{self.label} {format_pct(self.value)} · completed {format_pct(self.completion)}"
        missing = [
            f"{self.counts.get(k, 0)} {k.replace('_', ' ')}"
            for k in ("errored", "timed_out")
            if self.counts.get(k, 0)
        ]
        pending = self.n_samples - sum(self.counts.values())
        if pending > 0:
            missing.append(f"{pending} not run")
        return f"{text} ({', '.join(missing)})" if missing else text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Headline {visible(self.text)}>"  # a label may hold any text

    def _repr_html_(self) -> str:
        from ..display._html import headline_only_html  # a display hook: display is above

        return headline_only_html(self)


def outcome_counts(results: Results) -> dict[str, int]:
    """Samples per final outcome (all four keys present)."""
    counts = np.bincount(results.outcome[results.outcome >= 0], minlength=len(OUTCOMES))
    return {name: int(counts[i]) for i, name in enumerate(OUTCOMES)}


def headline_of(
    results: Results, definitions: Sequence[ScoreDefinition], summary: pd.DataFrame
) -> Headline:
    """The primary score; else the only score; else the passed rate — with completion."""
    counts = outcome_counts(results)
    n, k = results.n_samples, results.epochs
    completion = (counts["passed"] + counts["failed"]) / n if n else None
    chosen = next((j for j, d in enumerate(definitions) if d.primary), None)
    if chosen is None and len(definitions) == 1:
        chosen = 0
    if chosen is not None:
        row = summary.iloc[chosen]
        mean = None if math.isnan(row["mean"]) else float(row["mean"])
        ci = None if mean is None else (float(row["ci_low"]), float(row["ci_high"]))
        d = definitions[chosen]
        return Headline(d.name, d.display_label(), mean, ci, completion, counts, n // k, k)
    rate = counts["passed"] / n if n else None
    ci = wilson(counts["passed"], n) if n else None
    return Headline(None, "Passed", rate, ci, completion, counts, n // k, k)
