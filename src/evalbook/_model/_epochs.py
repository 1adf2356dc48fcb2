"""A case's epochs reduced to one record per (case, score), and the variance split between
cases and epochs (docs/repeats.md).

The input is the long table of sample records, one row per (case, epoch, score), with the
`counted` column that the scoring rule gives (`counted_values`, `_model/_scoring_rule.py`):
the reduction never decides what counts, it reduces what was counted. Everything is
computed per group with numpy (sorts, `bincount`, `reduceat`), never a Python loop per case.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._contract import ERROR, SCORED, STATUSES, UNSCORED
from ._definitions import ScoreDefinition
from ._reducers import is_pass_at, pass_at_estimate, pass_hat_estimate, reducer_k

__all__ = [
    "NEEDS_BINARY",
    "REDUCED_COLUMNS",
    "TOO_FEW_EPOCHS",
    "reduce_scores",
    "variance_parts",
]

REDUCED_COLUMNS = ["case_id", "score", "epochs", "counted", "value", "sd", "status", "reason"]
NEEDS_BINARY = "reducer_needs_binary"
TOO_FEW_EPOCHS = "too_few_epochs"
_NEEDED = ("case_id", "epoch", "score", "status", "counted", "reason")


@dataclass(frozen=True)
class _Groups:
    """The sample records sorted by (case, score, epoch), and per-group statistics.

    A group is one (case, score); `key = case_code * n_scores + score_code`, so groups come
    in case order, then definition order.
    """

    key: np.ndarray  # per group
    starts: np.ndarray  # per group: its first row in the sorted rows
    group: np.ndarray  # per sorted row: its group
    x: np.ndarray  # per sorted row: the counted value (NaN: not counted)
    status: np.ndarray  # per sorted row: status code (-1: missing)
    order: np.ndarray  # per sorted row: its row in the input
    reason: pd.Series  # per input row: reason (read only where a reduced record takes one)
    epochs: np.ndarray  # per group: rows
    n: np.ndarray  # per group: counted rows
    mean: np.ndarray  # per group: mean of counted values (NaN when none)
    var: np.ndarray  # per group: sample variance (ddof=1) of counted values (NaN below 2)


def _case_codes(case: pd.Series) -> tuple[np.ndarray, pd.CategoricalDtype]:
    """The cases' codes and the categorical type of the reduced rows' `case_id` (a
    categorical's own: a million case ids are not checked for uniqueness again)."""
    if isinstance(case.dtype, pd.CategoricalDtype):
        return case.cat.codes.to_numpy(np.int64), case.dtype
    codes, uniques = pd.factorize(case, sort=False)  # first appearance: input order
    return codes.astype(np.int64), pd.CategoricalDtype(pd.Index(uniques, dtype=object))


def _codes_in(column: pd.Series, names: Sequence[str]) -> np.ndarray:
    """Each entry's position in `names`, -1 where it is missing or not one of them."""
    index = pd.Index(list(names), dtype=object)
    if isinstance(column.dtype, pd.CategoricalDtype):  # map the few categories, not every row
        codes = column.cat.codes.to_numpy(np.int64)
        lookup = np.append(index.get_indexer(column.cat.categories), -1)
        return lookup[codes]  # code -1 (missing) reads lookup's last entry, -1
    return index.get_indexer(pd.Index(column.to_numpy(dtype=object))).astype(np.int64)


def _groups(scores: pd.DataFrame, names: list[str]) -> tuple[_Groups, pd.CategoricalDtype]:
    missing = [c for c in _NEEDED if c not in scores.columns]
    if missing:
        raise ValueError(f"the sample table lacks the column(s) {', '.join(missing)}")
    case, case_type = _case_codes(scores["case_id"])
    score = _codes_in(scores["score"], names)
    unknown = scores["score"][(score < 0) | (case < 0)]
    if len(unknown):
        raise ValueError(f"score {unknown.iloc[0]!r} of the sample table has no definition")
    status = _codes_in(scores["status"], STATUSES).astype(np.int8)
    # Each temporary is dropped once read (`del`): at millions of rows the new pages a next
    # one would otherwise take cost more than the arithmetic (the freed ones are reused).
    key = case * len(names) + score
    del case, score
    epoch = scores["epoch"].to_numpy(np.int64)
    low = int(epoch.min()) if epoch.size else 0
    span = int(epoch.max()) - low + 1 if epoch.size else 1
    # one integer sort key (group, then epoch): several times faster than a lexsort
    order = np.argsort(key * span + (epoch - low), kind="stable")
    del epoch
    key_sorted = key[order]
    del key
    first = np.ones(key_sorted.size, dtype=bool)
    first[1:] = key_sorted[1:] != key_sorted[:-1]
    starts = np.flatnonzero(first)
    group = np.cumsum(first) - 1
    del first
    x = scores["counted"].to_numpy(np.float64)[order]
    size = starts.size
    counted = ~np.isnan(x)
    n = np.bincount(group, weights=counted, minlength=size).astype(np.int64)
    total = np.bincount(group, weights=np.where(counted, x, 0.0), minlength=size)
    mean = np.divide(total, n, out=np.full(size, math.nan), where=n > 0)
    del total
    # two passes (deviations from the group mean): no cancellation in Σx² − n·mean²
    dev = np.where(counted, x - mean[group], 0.0)
    del counted
    dev *= dev
    ss = np.bincount(group, weights=dev, minlength=size)
    del dev
    var = np.divide(ss, n - 1, out=np.full(size, math.nan), where=n > 1)
    del ss
    groups = _Groups(
        key_sorted[starts],
        starts,
        group,
        x,
        status[order],
        order,
        scores["reason"],
        np.diff(np.append(starts, key_sorted.size)),
        n,
        mean,
        var,
    )
    return groups, case_type


def _by_value(g: _Groups) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The counted rows sorted by (group, value): their groups, values, and group starts."""
    keep = ~np.isnan(g.x)
    grp, val = g.group[keep], g.x[keep]
    order = np.lexsort((val, grp))
    grp, val = grp[order], val[order]
    # where each group's counted values begin (groups without any are never read)
    begin = np.searchsorted(grp, np.arange(g.key.size))
    return grp, val, begin


def _median(g: _Groups, val: np.ndarray, begin: np.ndarray, has: np.ndarray) -> np.ndarray:
    out = np.full(g.key.size, math.nan)
    lo = begin[has] + (g.n[has] - 1) // 2
    hi = begin[has] + g.n[has] // 2
    # (a + b) / 2 of a ≤ b lies in [a, b]: the rounded sum lies in [2a, 2b]
    out[has] = (val[lo] + val[hi]) / 2
    return out


def _mode(g: _Groups, grp: np.ndarray, val: np.ndarray) -> np.ndarray:
    """The most frequent counted value of each group; a tie goes to the smallest value."""
    out = np.full(g.key.size, math.nan)
    if grp.size == 0:
        return out
    new = np.ones(grp.size, dtype=bool)
    new[1:] = (grp[1:] != grp[:-1]) | (val[1:] != val[:-1])
    run_start = np.flatnonzero(new)
    run_len = np.diff(np.append(run_start, grp.size))
    run_grp, run_val = grp[run_start], val[run_start]
    longest = np.zeros(g.key.size, dtype=np.int64)
    np.maximum.at(longest, run_grp, run_len)
    best = np.flatnonzero(run_len == longest[run_grp])
    # runs are in ascending value within a group: the first longest run is the smallest value
    _, first = np.unique(run_grp[best], return_index=True)
    chosen = best[first]
    out[run_grp[chosen]] = run_val[chosen]
    return out


def _pass_k(reducer: str, n: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The estimator for the given groups, computed once per distinct (n, c) pair."""
    k = reducer_k(reducer)
    assert k is not None
    estimate = pass_at_estimate if is_pass_at(reducer) else pass_hat_estimate
    out = np.full(n.size, math.nan)
    ok = n >= k
    if not ok.any():
        return out
    pair = n[ok] * (int(n.max()) + 1) + c[ok]  # one integer per (n, c), as 0 ≤ c ≤ n
    pairs, back = np.unique(pair, return_inverse=True)
    width = int(n.max()) + 1
    values = np.array([estimate(int(p // width), int(p % width), k) for p in pairs])
    out[ok] = values[back.reshape(-1)]  # a loop over at most (K+1)² pairs, never over cases
    return out


def _first_with(g: _Groups, code: int) -> np.ndarray:
    """Per group: the sorted row of its first epoch with this status, or -1."""
    rows = np.flatnonzero(g.status == code)
    out = np.full(g.key.size, -1, dtype=np.int64)
    grp, first = np.unique(g.group[rows], return_index=True)
    out[grp] = rows[first]
    return out


def reduce_scores(scores: pd.DataFrame, definitions: Sequence[ScoreDefinition]) -> pd.DataFrame:
    """One row per (case, score): the case's counted epoch values reduced by the score's reducer.

    `scores` has one row per sample record: `case_id, epoch, score, status, counted, reason`
    (as in `run.scores`; `counted` from the scoring rule). Columns of the result
    (`REDUCED_COLUMNS`): `epochs` (sample records), `counted` (counted ones), `value` (NaN
    unless `status == "scored"`), `sd` (standard deviation of the counted values, ddof=1: NaN
    below 2), `status`, `reason`. In order, for each (case, score):

    - no counted epoch: not counted; `error` if one of its records is an error, else
      `unscored` if one is unscored, with the reason of the first such epoch (e.g.
      `case_errored`, or the scorer's unscored reason); no final outcome yet: status missing;
    - pass@k / pass^k with a counted value other than 0 and 1: `error` / `reducer_needs_binary`;
    - pass@k / pass^k with fewer than k counted epochs: `unscored` / `too_few_epochs`;
    - else `scored`: mean, median, min, max, mode (the smallest of the most frequent values)
      or the pass@k / pass^k estimate over the counted epochs.

    Rows come in case order (the categories of a categorical `case_id`, else first
    appearance), then definition order.
    """
    names = [d.name for d in definitions]
    g, case_type = _groups(scores, names)
    size = g.key.size
    score_of = g.key % max(len(names), 1)
    by_value = functools.cache(lambda: _by_value(g))  # a sort that only median and mode need
    has = g.n > 0
    counted_val = np.where(np.isnan(g.x), 0.0, g.x)
    ones = np.bincount(g.group, weights=counted_val == 1.0, minlength=size).astype(np.int64)
    other = ~np.isnan(g.x) & (g.x != 0.0) & (g.x != 1.0)
    binary = np.bincount(g.group, weights=other, minlength=size) == 0
    status = np.full(size, SCORED, dtype=np.int8)
    reason = np.full(size, None, dtype=object)
    value = np.full(size, math.nan)
    # fmin / fmax skip NaN (not counted); a group without counted values is not scored
    plain: dict[str, Callable[[], np.ndarray]] = {
        "mean": lambda: g.mean,
        "min": lambda: np.fmin.reduceat(g.x, g.starts) if size else g.mean,
        "max": lambda: np.fmax.reduceat(g.x, g.starts) if size else g.mean,
        "median": lambda: _median(g, by_value()[1], by_value()[2], has),
        "mode": lambda: _mode(g, by_value()[0], by_value()[1]),
    }
    for reducer in dict.fromkeys(d.reducer for d in definitions):
        these = np.isin(score_of, [j for j, d in enumerate(definitions) if d.reducer == reducer])
        if reducer in plain:
            value[these] = plain[reducer]()[these]
            continue
        k = reducer_k(reducer)
        assert k is not None
        value[these] = _pass_k(reducer, g.n[these], ones[these])
        few = these & has & (g.n < k)
        status[few], reason[few] = UNSCORED, TOO_FEW_EPOCHS
        mixed = these & has & ~binary
        status[mixed], reason[mixed] = ERROR, NEEDS_BINARY
    # no counted epoch: the first error's, else the first unscored record's status and reason
    first_error, first_unscored = _first_with(g, ERROR), _first_with(g, UNSCORED)
    none = ~has
    status[none] = -1
    for code, first in ((UNSCORED, first_unscored), (ERROR, first_error)):
        at = none & (first >= 0)
        status[at] = code
        reason[at] = g.reason.iloc[g.order[first[at]]].to_numpy(dtype=object)
    value[status != SCORED] = math.nan
    # the few reasons factorized (sorted, as pd.Categorical sorts them): 20 times quicker
    # than pd.Categorical on a million rows of objects
    codes, found = pd.factorize(reason, sort=True, use_na_sentinel=True)
    table = pd.DataFrame(
        {
            "case_id": pd.Categorical.from_codes(g.key // max(len(names), 1), dtype=case_type),
            "score": pd.Categorical.from_codes(score_of, categories=pd.Index(names)),
            "epochs": g.epochs.astype(np.int64),
            "counted": g.n,
            "value": value,
            "sd": np.sqrt(g.var),
            "status": pd.Categorical.from_codes(status, categories=pd.Index(STATUSES)),
            "reason": pd.Categorical.from_codes(codes, categories=pd.Index(found)),
        },
        columns=REDUCED_COLUMNS,
        copy=False,  # arrays made here: neither copied nor stacked into blocks (0.5 s at 1M)
    )
    return table


def variance_parts(
    scores: pd.DataFrame,
    definitions: Sequence[ScoreDefinition],
    slices: np.ndarray | None = None,
    n_slices: int = 1,
) -> pd.DataFrame:
    """Per score: `var_between` and `var_within` of the counted epoch values (Miller 2024).

    - `var_between`: the sample variance (ddof=1) across cases of the case means (mean of
      each case's counted epochs, whatever the reducer); NaN with fewer than 2 such cases.
    - `var_within`: the mean over cases with ≥ 2 counted epochs of their sample variance
      (ddof=1, unbiased for the case's own variance); NaN when no case has 2.

    The observed variance of case means holds the within-case part divided by the epochs:
    with K epochs per case, var_between ≈ σ²_between + var_within / K (docs/repeats.md).
    With one epoch var_within is NaN and var_between is the plain variance of the values;
    `summary()` shows both only when epochs ≥ 2.

    `slices` (a slice code per case, in case order; `summary(by=)`): one row per
    (slice, score) instead, slice-major.
    """
    names = [d.name for d in definitions]
    g, _ = _groups(scores, names)
    width = max(len(names), 1)
    score_of = g.key % width
    if slices is not None:  # one cell per (slice, score): the same sums, grouped finer
        score_of = slices[g.key // width] * len(names) + score_of
    s = len(names) * n_slices
    has = g.n > 0
    m = np.bincount(score_of[has], minlength=s)
    total = np.bincount(score_of[has], weights=g.mean[has], minlength=s)
    centre = np.divide(total, m, out=np.full(s, math.nan), where=m > 0)
    dev = g.mean[has] - centre[score_of[has]]
    ss = np.bincount(score_of[has], weights=dev * dev, minlength=s)
    between = np.divide(ss, m - 1, out=np.full(s, math.nan), where=m > 1)
    two = g.n > 1
    w = np.bincount(score_of[two], minlength=s)
    within_sum = np.bincount(score_of[two], weights=g.var[two], minlength=s)
    within = np.divide(within_sum, w, out=np.full(s, math.nan), where=w > 0)
    return pd.DataFrame(
        {
            "score": pd.Categorical(names * n_slices, categories=names),
            "var_between": between,
            "var_within": within,
        }
    )
