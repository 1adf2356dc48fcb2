"""What a change costs: the paired cost and latency deltas of two runs (`Comparison.usage`).

Each run's samples are first reduced to one value per case (the mean over the case's
samples whose value is known: its epochs), then paired by case id; a case counts for a
measure only when both runs know its value. The interval is the t interval of the mean
paired delta on the cluster-robust SE (`cluster_se`: with every case its own cluster, the
usual s/√n), with t on C − 1 degrees of freedom, as `compare` does for clustered scores.
It is not clipped: costs and seconds have no upper bound (docs/comparing.md).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._model._slices import cluster_codes
from .._model._stats import cluster_se, t975
from ._pairing import case_frame, case_ids

__all__ = ["MEASURES", "USAGE_DELTA_COLUMNS", "UsageDeltas", "cost_warnings", "usage_deltas"]

USAGE_DELTA_COLUMNS = ["measure", "mean_a", "mean_b", "delta", "ci_low", "ci_high", "n_paired"]
# each measure and the column of `run.cases` it reduces per case
MEASURES = {"cost_per_case": "cost", "latency_s": "duration_s"}


def case_means(
    run: RunData, measures: tuple[str, ...] = tuple(MEASURES)
) -> tuple[pd.Index, dict[str, np.ndarray]]:
    """The run's case ids (input order) and, per measure, each case's mean over its samples
    with a known value (NaN when none is known: no cost recorded, or the case never ran).

    The cases table holds each case's samples together, in input order (`first_epoch_rows`
    reads it so too), so a reshape to (cases, epochs) pairs each sample with its case.

    Raises:
        ConfigurationError: the cases table is not one row per (case, epoch).
    """
    ids = case_ids(run)
    cases = run.cases
    n = len(ids)
    k = len(cases) // n if n else 1
    if n * k != len(cases):
        raise ConfigurationError(
            f"run {run.name!r}: its cases table has {len(cases)} rows for {n} cases, not one "
            "row per (case, epoch), so its cost and latency cannot be read per case"
        )
    ran = cases["outcome"].notna().to_numpy() if "outcome" in cases.columns else True
    means = {}
    for measure in measures:
        column = MEASURES[measure]
        if column not in cases.columns:  # a run-like object, or a run stored before usage
            means[measure] = np.full(n, math.nan)
            continue
        values = cases[column].to_numpy(dtype=np.float64, na_value=math.nan)
        known = ~np.isnan(values) & ran
        count = known.reshape(n, k).sum(axis=1)
        total = np.where(known, values, 0.0).reshape(n, k).sum(axis=1)
        means[measure] = np.divide(total, count, out=np.full(n, math.nan), where=count > 0)
    return ids, means


def _rows_in(ids: pd.Index, wanted: pd.Index) -> np.ndarray:
    """Each id of `wanted` as its row in `ids` (-1: absent)."""
    if ids is wanted or ids.equals(wanted):  # the common case: no hashing of ids needed
        return np.arange(len(wanted), dtype=np.int64)
    return np.asarray(ids.get_indexer(wanted), dtype=np.int64)


def _row(measure: str, a: np.ndarray, b: np.ndarray, clusters: np.ndarray) -> dict[str, Any]:
    n = int(a.size)
    row: dict[str, Any] = dict.fromkeys(USAGE_DELTA_COLUMNS, math.nan)
    row.update(measure=measure, n_paired=n)
    if n == 0:
        return row
    mean_a, mean_b = float(a.mean()), float(b.mean())
    delta = mean_b - mean_a
    row.update(mean_a=mean_a, mean_b=mean_b, delta=delta)
    # codes renumbered within the paired cases: a cluster with no paired case is not counted
    se, c = cluster_se(b - a, pd.factorize(clusters)[0])
    if c >= 2 and math.isfinite(se):  # one cluster shows no spread: no interval
        half = t975(c - 1) * se
        row.update(ci_low=delta - half, ci_high=delta + half)
    return row


def usage_deltas(a: RunData, b: RunData, cluster: str | None = None) -> pd.DataFrame:
    """The paired cost and latency deltas of run `b` against run `a`.

    One row per measure, `cost_per_case` then `latency_s` (the samples' `duration_s`):
    `measure, mean_a, mean_b, delta, ci_low, ci_high, n_paired`. Means are over the
    `n_paired` cases with a known value in both runs, each case's samples reduced to their
    mean first; `delta` is `mean_b - mean_a`, with its 95 % t interval (clustered by the data
    column `cluster` when given). With no paired case (e.g. neither run recorded usage) the
    row is still there, `n_paired` 0 and NaN elsewhere; with one paired cluster the interval
    is NaN.
    """
    ids_a, means_a = case_means(a)
    ids_b, means_b = case_means(b)
    rows_b = _rows_in(ids_b, ids_a)
    frame = case_frame(a, b, ids_a, rows_b, [cluster] if cluster else [], "cluster=", optional=True)
    if cluster is not None and cluster in frame.columns:
        clusters = cluster_codes(frame, cluster, len(ids_a))
    else:  # each case its own cluster: the usual paired t interval
        clusters = np.arange(len(ids_a), dtype=np.int64)
    shared = np.flatnonzero(rows_b >= 0)
    rows = []
    for measure in MEASURES:
        va, vb = means_a[measure][shared], means_b[measure][rows_b[shared]]
        both = ~np.isnan(va) & ~np.isnan(vb)
        rows.append(_row(measure, va[both], vb[both], clusters[shared[both]]))
    table = pd.DataFrame(rows, columns=USAGE_DELTA_COLUMNS)
    return table.astype({c: np.float64 for c in USAGE_DELTA_COLUMNS[1:6]} | {"n_paired": np.int64})


def cost_warnings(a: RunData, b: RunData) -> list[str]:
    """One sentence per run: how many shared cases have a cost in the other run but not in
    it (they are not paired for cost). Nothing when both runs lack cost alike."""
    ids_a, means_a = case_means(a, ("cost_per_case",))
    ids_b, means_b = case_means(b, ("cost_per_case",))
    rows_b = _rows_in(ids_b, ids_a)
    shared = np.flatnonzero(rows_b >= 0)
    known_a = ~np.isnan(means_a["cost_per_case"][shared])
    known_b = ~np.isnan(means_b["cost_per_case"][rows_b[shared]])
    out = []
    for side, run, lost, other in (
        ("b", b, known_a & ~known_b, "a"),
        ("a", a, known_b & ~known_a, "b"),
    ):
        n = int(lost.sum())
        if n:
            out.append(
                f"Cost unknown for {n} case{'s' if n != 1 else ''} of run {side} ({run.name!r}) "
                f"that {'have' if n != 1 else 'has'} a cost in run {other}: "
                f"{'they are' if n != 1 else 'it is'} not paired in the usage deltas."
            )
    return out


class UsageDeltas:
    """Mixed into `Comparison`: its paired cost and latency deltas."""

    a: RunData
    b: RunData
    cluster: str | None

    @property
    def usage(self) -> pd.DataFrame:
        """The paired cost and latency deltas, b − a: one row per measure.

        Columns `measure, mean_a, mean_b, delta, ci_low, ci_high, n_paired`; the measures are
        `cost_per_case` (US dollars) and `latency_s` (the samples' `duration_s`). Each case's
        samples (epochs) are reduced to their mean first; a case is paired for a measure when
        both runs know its value (a cost unknown in one run is said in `warnings`). Without
        usage in either run both rows are still there, with `n_paired` 0 and NaN elsewhere.
        The interval is the 95 % t interval of the mean paired delta, clustered like the
        comparison (docs/comparing.md).

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> def cheap(q, ctx):
            ...     ctx.record_usage(cost=0.01)
            ...     return q
            >>> def dear(q, ctx):
            ...     ctx.record_usage(cost=0.03)
            ...     return q
            >>> df = pd.DataFrame({"q": ["a", "b", "c"]})
            >>> old = eb.run(df, task=cheap, scorers=[lambda output: 1.0], store=None,
            ...              progress=False)
            >>> new = eb.run(df, task=dear, scorers=[lambda output: 1.0], store=None,
            ...              progress=False)
            >>> row = eb.compare(old, new).usage.iloc[0]
            >>> row["measure"], round(float(row["delta"]), 4), int(row["n_paired"])
            ('cost_per_case', 0.02, 3)
        """
        return usage_deltas(self.a, self.b, self.cluster)
