"""The scoring rule (docs/scoring.md): the one function that decides counted values, and the
summaries and headline built on it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._render._run_html import headline_only_html
from .._util._fmt import format_pct
from .._util._text import visible
from ._contract import ERROR, SCORED, UNSCORED
from ._definitions import ScoreDefinition
from ._origin import INFRA, ORIGINS, infra_note, infra_warning
from ._results import ERRORED, FAILED, OUTCOMES, PASSED, TIMED_OUT, Results
from ._slices import Slices
from ._stats import grouped_ci, wilson

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
    "cases_counted",
    "cases_dropped",
    "dropped_reasons",
    "counted",
    "zeroed",
    "excluded",
    "unscored",
    "errors",
    "reducer",
    "epochs",
    "n_clusters",
    "var_between",
    "var_within",
]

# a sample record's kind, for one count of every kind per (slice, score) at once
_COUNTED, _ZEROED, _EXCLUDED, _UNSCORED = 0, 1, 2, 3


def summarize(
    results: Results,
    definitions: Sequence[ScoreDefinition],
    counted: np.ndarray,
    reduced: pd.DataFrame,
    variance: pd.DataFrame,
    *,
    slices: Slices | None = None,
    clusters: np.ndarray | None = None,
) -> pd.DataFrame:
    """One row per score (per slice and score with `slices`): mean and CI over cases, next to
    every count of samples.

    The mean and CI are over the cases' reduced values (`reduced`, from `reduce_scores`):
    the case is the unit of resampling, however many epochs it ran; the CI follows the one
    rule of `_model/_stats.py` (`grouped_ci`), with `clusters` (a cluster code per case,
    `cluster=`) the cluster-robust t. `n_clusters` is the number of clusters among the
    counted cases (without `clusters`, each case is its own: the counted cases). The counts
    are of sample records: `counted + unscored + excluded == n_cases * epochs`; `zeroed`
    (failed samples, and errors under `errors="zero"`) is part of `counted`; `errors` counts
    error records however they counted. `var_between` / `var_within` (from `variance_parts`,
    one row per row of this table) are given when the run has 2 epochs or more, NaN
    otherwise.

    With `slices` (a slice code per case, `summary(by=)`) every number is the same rule
    applied to the cases of one slice: one pass over every record for all slices together,
    rows slice by slice (order of first appearance), then in definition order, the slice
    columns first.
    """
    s, k = len(definitions), results.epochs
    n_slices = 1 if slices is None else slices.count
    case_slice = np.zeros(results.n_cases, np.int64) if slices is None else slices.codes
    cells = n_slices * s
    # per sample record: its (slice, score) cell and its kind
    cell = (np.repeat(case_slice, k)[:, None] * s + np.arange(s)[None, :]).reshape(-1)
    status = results.status
    is_counted = ~np.isnan(counted)
    recorded_zero = (status == SCORED) & (results.value == 0.0)
    kind = np.where(
        is_counted,
        np.where((counted == 0.0) & ~recorded_zero, _ZEROED, _COUNTED),
        np.where(status == UNSCORED, _UNSCORED, _EXCLUDED),
    )
    tally = np.bincount(cell * 4 + kind, minlength=cells * 4).reshape(cells, 4)
    errors = np.bincount(cell, weights=status == ERROR, minlength=cells).astype(np.int64)
    # per case: the reduced values that are scored, by cell (and cluster)
    case_cell = (case_slice[:, None] * s + np.arange(s)[None, :]).reshape(-1)
    scored = (reduced["status"] == "scored").to_numpy()
    values = reduced["value"].to_numpy(np.float64)[scored]
    case_clusters = None if clusters is None else np.repeat(clusters, s)[scored]
    ci = grouped_ci(values, case_cell[scored], cells, case_clusters)
    n_cases = np.bincount(case_slice, minlength=n_slices).astype(np.int64)
    # the cases the mean is over, and why each other case is not: every row's cases add up
    cases_counted = np.bincount(case_cell[scored], minlength=cells).astype(np.int64)
    reasons = _dropped_reasons(reduced["reason"].to_numpy(object), case_cell, scored, cells)
    epochs_on = k > 1
    table = pd.DataFrame(
        {
            "score": pd.Categorical.from_codes(
                np.tile(np.arange(s), n_slices), categories=pd.Index([d.name for d in definitions])
            ),
            # labels are free text: an object column, as in the other tables
            "label": pd.Series([d.display_label() for d in definitions] * n_slices, dtype=object),
            "primary": np.tile([d.primary for d in definitions], n_slices).astype(bool),
            "derived": np.tile([d.derived for d in definitions], n_slices).astype(bool),
            "mean": ci.mean,
            "ci_low": ci.low,
            "ci_high": ci.high,
            "n_cases": np.repeat(n_cases, s),
            "cases_counted": cases_counted,
            "cases_dropped": np.repeat(n_cases, s) - cases_counted,
            "dropped_reasons": pd.Series(reasons, dtype=object),
            "counted": tally[:, _COUNTED] + tally[:, _ZEROED],
            "zeroed": tally[:, _ZEROED],
            "excluded": tally[:, _EXCLUDED],
            "unscored": tally[:, _UNSCORED],
            "errors": errors,
            "reducer": pd.Series([d.reducer for d in definitions] * n_slices, dtype=object),
            "epochs": np.full(cells, k, dtype=np.int64),
            "n_clusters": ci.n_clusters,
            "var_between": variance["var_between"].to_numpy(np.float64)
            if epochs_on
            else np.full(cells, math.nan),
            "var_within": variance["var_within"].to_numpy(np.float64)
            if epochs_on
            else np.full(cells, math.nan),
        },
        columns=SUMMARY_COLUMNS,
    )
    if slices is not None:
        keys = slices.keys.iloc[np.repeat(np.arange(n_slices), s)].reset_index(drop=True)
        table = pd.concat([keys, table], axis=1)
    return table


# how many kinds of reason a summary row names, and how much of each (an unscored reason is
# the scorer's own text, of any length): the rest is counted, the row stays short
_REASONS_SHOWN = 3
_REASON_CHARS = 60


def _reason_key(why: object) -> str:
    """A reason as a summary row names it: its text (60 characters at most), else "no value"."""
    key = str(why) if isinstance(why, str) else "no value"
    return key if len(key) <= _REASON_CHARS else key[: _REASON_CHARS - 1] + "…"


def _dropped_reasons(
    reason: np.ndarray, case_cell: np.ndarray, scored: np.ndarray, cells: int
) -> list[str | None]:
    """Per cell, why its cases outside the mean are (`too_few_epochs 2 · refusal 1`, most
    first, at most 3 kinds and 60 characters of each); None where every case counts."""
    found: list[dict[str, int]] = [{} for _ in range(cells)]
    # counted on codes: a reason's key is made once per distinct reason, not once per case
    # (a million-sample run may leave most of its cases out for a few reasons)
    codes, uniques = pd.factorize(pd.Series(reason[~scored], dtype=object), use_na_sentinel=False)
    keys = [_reason_key(why) for why in uniques.tolist()]
    key_codes, kinds = pd.factorize(pd.Series(keys, dtype=object))
    pairs = case_cell[~scored].astype(np.int64) * len(kinds) + key_codes[codes]
    distinct, counts = np.unique(pairs, return_counts=True)
    for pair, n in zip(distinct.tolist(), counts.tolist(), strict=True):
        c, k = divmod(pair, len(kinds))
        found[c][str(kinds[k])] = n
    out: list[str | None] = []
    for f in found:
        ranked = sorted(f.items(), key=lambda kv: (-kv[1], kv[0]))
        parts = [f"{k} {n}" for k, n in ranked[:_REASONS_SHOWN]]
        if len(ranked) > _REASONS_SHOWN:
            rest = sum(n for _, n in ranked[_REASONS_SHOWN:])
            parts.append(f"{len(ranked) - _REASONS_SHOWN} other reasons {rest}")
        out.append(" · ".join(parts) or None)
    return out


@dataclass(frozen=True)
class Headline:
    """The one number a run is read by, with its completion rate.

    `score` is the headline score's name, or None when it is the passed rate. `no_primary`
    is True when the run has several scores and none is primary: the passed rate then
    stands in for a score, and the text says so (docs/scores.md).
    """

    score: str | None
    label: str
    value: float | None
    ci: tuple[float, float] | None
    completion: float | None
    counts: dict[str, int] = field(default_factory=dict)
    n_cases: int = 0
    epochs: int = 1
    no_primary: bool = False
    # the cases the score's mean is over, when fewer than the run's (why the others are not:
    # the summary's `dropped_reasons`); None when every case counts, or for the passed rate
    cases_counted: int | None = None
    # an early-stopped run (`stop_when=`): its stop in words, and the samples it never ran
    # (`stopped_early`: neither errors nor "not run"; completion is over the samples it ran)
    stopped: str | None = None
    stopped_early: int = 0
    # errored or timed-out samples by origin (`_origin.ORIGINS`; origins with none left out)
    origins: dict[str, int] = field(default_factory=dict)

    @property
    def outside_model(self) -> str | None:
        """`N samples failed outside the model (provider 30, environment 10)`, or None."""
        return infra_note(self.origins)

    @property
    def infra_alarm(self) -> str | None:
        """The warning when more than 10 % of the samples failed outside the model, or None."""
        return infra_warning(self.outside_model, self.infra_share)

    @property
    def infra_share(self) -> float | None:
        """The share of samples that failed outside the model (provider + environment)."""
        n = self.n_samples
        return sum(self.origins.get(o, 0) for o in INFRA) / n if n else None

    @property
    def n_samples(self) -> int:
        """Samples (case, epoch): what `counts` and `completion` count."""
        return self.n_cases * self.epochs

    @property
    def text(self) -> str:
        """E.g. `Pass 52% · completed 100%`, with `(n errored, n timed out)` when relevant."""
        # several scores and none primary: the passed rate is not one of them, so it says so
        lead = "No primary score · tasks passed" if self.no_primary else self.label
        over = ""
        if self.cases_counted is not None:
            over = f" over {self.cases_counted} of {self.n_cases} cases"
        text = f"{lead} {format_pct(self.value)}{over} · completed {format_pct(self.completion)}"
        missing = [
            f"{self.counts.get(k, 0)} {k.replace('_', ' ')}"
            for k in ("errored", "timed_out")
            if self.counts.get(k, 0)
        ]
        pending = self.n_samples - sum(self.counts.values()) - self.stopped_early
        if pending > 0:
            missing.append(f"{pending} not run")
        text = f"{text} ({', '.join(missing)})" if missing else text
        if self.stopped is not None:
            text = f"{text} · {self.stopped}"
        outside = self.outside_model
        return text if outside is None else f"{text} · {outside}"

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"<Headline {visible(self.text)}>"  # a label may hold any text

    def _repr_html_(self) -> str:
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
    origins = origin_counts(results)
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
        cases = int(row["cases_counted"])
        fewer = mean is not None and cases < n // k  # no value at all: "—" says it
        return Headline(
            d.name,
            d.display_label(),
            mean,
            ci,
            completion,
            counts,
            n // k,
            k,
            cases_counted=cases if fewer else None,
            origins=origins,
        )
    rate = counts["passed"] / n if n else None
    ci = wilson(counts["passed"], n) if n else None
    several = len(definitions) > 1
    return Headline(
        None, "Passed", rate, ci, completion, counts, n // k, k, several, origins=origins
    )


def origin_counts(results: Results) -> dict[str, int]:
    """Errored and timed-out samples by origin (only origins that have any)."""
    found: dict[str, int] = {}
    failed = np.flatnonzero((results.outcome == ERRORED) | (results.outcome == TIMED_OUT))
    for i in failed.tolist():
        origin = results.origin[i]
        if origin is not None:
            found[origin] = found.get(origin, 0) + 1
    return {o: found[o] for o in ORIGINS if o in found}
