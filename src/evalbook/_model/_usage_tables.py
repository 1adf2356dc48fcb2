"""The usage tables of a run: `run.usage()`, `run.usage_summary()` and the cases' amounts.

Amounts are NaN where no call reported them (never 0); totals are over known amounts, and
`n_cost_known` says how many samples they cover (docs/cost.md).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ._results import PENDING, Results
from ._stats import cluster_se, t975
from ._tally import sample_totals

__all__ = [
    "USAGE_COLUMNS",
    "USAGE_SUMMARY_COLUMNS",
    "sample_amounts",
    "usage_summary",
    "usage_table",
]

USAGE_COLUMNS = [
    "case_id",
    "epoch",
    "source",
    "calls",
    "cached_calls",
    "input_tokens",
    "output_tokens",
    "cost",
    "retries",
    "invalid",
]
USAGE_SUMMARY_COLUMNS = [
    "calls",
    "cached_calls",
    "input_tokens",
    "output_tokens",
    "cost",
    "cost_per_case",
    "cost_ci_low",
    "cost_ci_high",
    "latency_p50_s",
    "latency_p95_s",
    "n_cost_known",
    "retries",
]


def sample_amounts(results: Results) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each sample's (input_tokens, output_tokens, cost) over its sources; NaN unknown."""
    n = results.n_samples
    out = np.full((3, n), math.nan)
    for i, usage in enumerate(results.usage):
        if usage:
            out[:, i] = sample_totals(usage)
    return out[0], out[1], out[2]


def usage_table(results: Results) -> pd.DataFrame:
    """One row per (sample, source) that recorded usage: input order, epoch, then source
    in the order its first call came ("task" first when the task made calls)."""
    rows: list[tuple[object, ...]] = []
    for pos, usage in enumerate(results.usage):
        if not usage:
            continue
        cid, epoch = results.case_id_of(pos), results.epoch_of(pos)
        for name, t in usage.items():
            rows.append(
                (
                    cid,
                    epoch,
                    name,
                    t.calls,
                    t.cached_calls,
                    t.input_tokens,
                    t.output_tokens,
                    t.cost,
                    t.retries,
                    t.invalid,
                )
            )
    table = pd.DataFrame.from_records(rows, columns=USAGE_COLUMNS)
    dtypes = {"epoch": "int32", "calls": "int64", "cached_calls": "int64", "retries": "int64"}
    table = table.astype({**dtypes, **dict.fromkeys(USAGE_COLUMNS[5:8], "float64")})
    table["case_id"] = table["case_id"].astype(object)
    table["source"] = table["source"].astype(object)
    table["invalid"] = table["invalid"].astype(object)
    return table


def _total(values: np.ndarray) -> float:
    known = values[~np.isnan(values)]
    return math.fsum(known.tolist()) if known.size else math.nan


def _mean_ci(values: np.ndarray, cases: np.ndarray) -> tuple[float, float, float]:
    """Mean of the known values and its 95 % t interval, the samples of a case one cluster."""
    known = ~np.isnan(values)
    v, c = values[known], cases[known]
    if not v.size:
        return math.nan, math.nan, math.nan
    mean = float(np.mean(v))
    se, clusters = cluster_se(v, c)
    if clusters < 2 or not math.isfinite(se):
        return mean, math.nan, math.nan
    half = t975(clusters - 1) * se
    return mean, mean - half, mean + half


def usage_summary(results: Results) -> pd.DataFrame:
    """One row: totals over known amounts, cost per sample with its CI, latency quantiles.

    `cost_per_case` is the mean over the samples whose cost is known (`n_cost_known`); its
    interval is the t interval with each case's samples as one cluster. Latency is the
    samples' `duration_s` (task time, all attempts), over the samples that ran.
    """
    tin, tout, cost = sample_amounts(results)
    calls = cached = retries = 0
    for usage in results.usage:
        if usage:
            for t in usage.values():
                calls += t.calls
                cached += t.cached_calls
                retries += t.retries
    cases = np.repeat(np.arange(results.n_cases), results.epochs)
    per_case, low, high = _mean_ci(cost, cases)
    ran = results.duration_s[(results.outcome != PENDING) & ~np.isnan(results.duration_s)]
    p50, p95 = np.quantile(ran, [0.5, 0.95]).tolist() if ran.size else (math.nan, math.nan)
    row = {
        "calls": calls,
        "cached_calls": cached,
        "input_tokens": _total(tin),
        "output_tokens": _total(tout),
        "cost": _total(cost),
        "cost_per_case": per_case,
        "cost_ci_low": low,
        "cost_ci_high": high,
        "latency_p50_s": p50,
        "latency_p95_s": p95,
        "n_cost_known": int(np.count_nonzero(~np.isnan(cost))),
        "retries": retries,
    }
    return pd.DataFrame([row], columns=USAGE_SUMMARY_COLUMNS)
