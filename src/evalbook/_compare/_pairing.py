"""Pairing the cases of two runs: case ids, the case values paired, and the case data.

The tables of a comparison are built from (case, score) grids over one index of case ids
(run a's in input order, then those only in b), vectorised: no Python loop runs per case.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._run_data import RunData

__all__ = [
    "case_frame",
    "case_ids",
    "case_set_warning",
    "case_values",
    "cluster_column",
    "failed_warnings",
    "first_epoch_rows",
    "positions",
]


def case_ids(run: RunData) -> pd.Index:
    """The run's case ids in input order (the categories of `scores.case_id` when it has them)."""
    if isinstance(run, RunData):  # its scores table's case_id categories are exactly its ids
        column = run.scores["case_id"]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories: pd.Index = pd.Index(column.cat.categories)
            return categories
    ids: pd.Index = pd.Index(pd.unique(run.cases["case_id"]))  # one per case, not per epoch
    return ids


def case_values(run: RunData) -> pd.DataFrame:
    """One row per (case, score) with the case's `value` that a comparison pairs.

    A run's reduced table (each case's epochs reduced by the score's reducer; with one
    epoch, the counted value); a run-like object without one gives its scores' `counted`.
    """
    if isinstance(run, RunData):
        return run.reduced()
    scores = run.scores
    return pd.DataFrame(
        {"case_id": scores["case_id"], "score": scores["score"], "value": scores["counted"]}
    )


def _epochs(run: RunData) -> int:
    """How many epochs each case of `run` has (1 for a run-like object without epochs)."""
    return run.results.epochs if isinstance(run, RunData) else 1


def _canonical(
    run: RunData, index: pd.Index, selected: list[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """`positions` by reshaping, when the case values are in canonical layout over `index`.

    Canonical: `case_id` is a categorical whose categories are `index` (input order) and the
    rows are case-major with each case's scores in the same order. None when it is not.
    """
    scores = case_values(run)
    ids, names = scores["case_id"], scores["score"]
    n = len(index)
    if not (
        isinstance(ids.dtype, pd.CategoricalDtype)
        and isinstance(names.dtype, pd.CategoricalDtype)
        and n > 0
        and len(scores) % n == 0
    ):
        return None
    cats = ids.cat.categories
    if not (cats is index or cats.equals(index)):
        return None
    k = len(scores) // n
    case_codes = ids.cat.codes.to_numpy().reshape(n, k)
    if not bool((case_codes == np.arange(n)[:, None]).all()):
        return None
    score_codes = names.cat.codes.to_numpy().reshape(n, k)
    first = score_codes[0]
    if not bool((score_codes == first).all()):
        return None
    label = [str(c) for c in names.cat.categories]
    where = {label[c]: p for p, c in enumerate(first.tolist()) if c >= 0}
    if len(where) != k or any(name not in where for name in selected):
        return None
    cols = np.array([where[name] for name in selected], dtype=np.int64)
    counted = scores["value"].to_numpy(dtype=np.float64).reshape(n, k)[:, cols]
    rows = np.arange(n, dtype=np.int64)[:, None] * k + cols[None, :]
    return counted, rows


def positions(run: RunData, index: pd.Index, selected: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Case values and their row numbers in `case_values(run)`, shaped (cases of `index`,
    selected)."""
    fast = _canonical(run, index, selected)
    if fast is not None:
        return fast
    scores = case_values(run)
    cat = pd.Categorical(scores["score"])
    wanted = {name: j for j, name in enumerate(selected)}
    col_of = np.array([wanted.get(str(c), -1) for c in cat.categories] + [-1], dtype=np.int64)
    cols = col_of[cat.codes]  # code -1 (missing) picks the trailing -1
    codes, uniques = pd.factorize(scores["case_id"])
    case_of = np.append(index.get_indexer(pd.Index(uniques)), -1)
    case_rows = case_of[codes]
    keep = np.flatnonzero((cols >= 0) & (case_rows >= 0))
    counted = np.full((len(index), len(selected)), np.nan)
    rows = np.full((len(index), len(selected)), -1, dtype=np.int64)
    counted[case_rows[keep], cols[keep]] = scores["value"].to_numpy(dtype=np.float64)[keep]
    rows[case_rows[keep], cols[keep]] = keep
    return counted, rows


def first_epoch_rows(rows: np.ndarray, column: str, run: RunData) -> np.ndarray:
    """Row numbers of cases (`column="case"`) or case values (`"score"`) as the rows of
    their first epoch in `run.cases` / `run.scores` (-1 stays -1): what a case view shows."""
    k = _epochs(run)
    if k == 1:
        return rows
    if column == "case":
        return np.where(rows >= 0, rows * k, -1)
    s = len(run.definitions)
    case, j = np.divmod(rows, max(s, 1))
    return np.where(rows >= 0, case * k * s + j, -1)


def _column_of(run: RunData, name: str, rows: np.ndarray) -> pd.Series | None:
    """Column `name` of the run's data at case rows `rows` (-1: missing); None if absent."""
    data = getattr(run, "data", None)
    if not isinstance(data, pd.DataFrame) or name not in data.columns:
        return None
    if len(data) != len(case_ids(run)):
        raise ConfigurationError(
            f"column {name!r}: run {run.name!r}'s data has {len(data)} rows for "
            f"{len(case_ids(run))} cases, so its rows cannot be matched to the cases"
        )
    return pd.Series(data[name].array.take(rows, allow_fill=True), name=name)


def case_frame(
    a: RunData,
    b: RunData,
    index: pd.Index,
    rows_b: np.ndarray,
    names: list[str],
    what: str,
    *,
    optional: bool = False,
) -> pd.DataFrame:
    """The data columns `names` for the cases of `index`: a case's value is read from run a's
    data, and from run b's for a case only in b (or when a's data lacks the column).

    `index` starts with a's cases in order; `rows_b` is each index case's row in b (-1: none).
    A column in neither run's data is left out when `optional`.

    Raises:
        ConfigurationError: a column is in neither run's data (and not `optional`).
    """
    n_a = len(case_ids(a))
    rows_a = np.where(np.arange(len(index)) < n_a, np.arange(len(index)), -1)
    columns = {}
    for name in names:
        in_a, in_b = _column_of(a, name, rows_a), _column_of(b, name, rows_b)
        if in_a is None and in_b is None and optional:
            continue
        if in_a is None and in_b is None:
            known = [c for c in getattr(a, "data", pd.DataFrame()).columns]
            shown = ", ".join(repr(c) for c in known) or "(none: the run has no data columns)"
            raise ConfigurationError(
                f"{what}{name!r} is not a column of either run's data; run a's columns: {shown}"
            )
        if in_a is None or in_b is None:
            columns[name] = in_b if in_a is None else in_a
        else:  # a's values for a's cases, b's for the cases only in b
            columns[name] = pd.concat([in_a.iloc[:n_a], in_b.iloc[n_a:]], ignore_index=True)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(index)))


_FAILED = ("errored", "timed_out")


def failed_cases(run: RunData, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each case row of `run` in `rows` (-1: not in the run), whether every sample of it
    `errored`, and whether every one errored or timed out with at least one timeout."""
    outcome = run.cases["outcome"].astype(object).to_numpy()
    k = _epochs(run)
    n = len(outcome) // max(k, 1)
    if n == 0:
        none = np.zeros(rows.shape, dtype=bool)
        return (none, none.copy())
    per_case = outcome[: n * k].reshape(n, k)
    errored = (per_case == "errored").all(axis=1)
    failed = np.isin(per_case, _FAILED).all(axis=1)
    inside = rows >= 0
    at = np.where(inside, rows, 0)
    return (errored[at] & inside, (failed & ~errored)[at] & inside)


def cluster_column(
    a: RunData, b: RunData, cluster: str | bool | None
) -> tuple[str | None, list[str]]:
    """The column the comparison clusters by: `cluster=`, else run a's, else run b's default
    (`run.options["cluster"]`); False: none. A note when the runs' defaults differ."""
    if cluster is False:
        return None, []
    if cluster is True or (cluster is not None and not isinstance(cluster, str)):
        raise ConfigurationError(
            f"compare(cluster=...) takes a column name of the data (or False), not {cluster!r}"
        )
    if isinstance(cluster, str):
        return cluster, []
    default_a = getattr(a, "options", {}).get("cluster")
    default_b = getattr(b, "options", {}).get("cluster")
    notes = []
    if default_a and default_b and default_a != default_b:
        notes.append(
            f"The runs are clustered by different columns ({default_a!r} in a, {default_b!r} in "
            f"b); the comparison uses a's. Pass cluster= to choose."
        )
    chosen = default_a or default_b
    return (str(chosen) if chosen else None), notes


def failed_warnings(
    a: RunData,
    b: RunData,
    index: pd.Index,
    index_b: np.ndarray,
    n_a: int,
    has_a: np.ndarray,
    has_b: np.ndarray,
) -> list[str]:
    """One sentence per side: how many shared cases are counted only in the other run because
    every sample of them errored (or timed out) in this one."""
    rows_a = np.where(np.arange(len(index)) < n_a, np.arange(len(index)), -1)
    shared = (rows_a >= 0) & (index_b >= 0)
    out = []
    for side, run, rows, lost, other, kept in (
        ("b", b, index_b, ~has_b & has_a, "a", "only_a"),
        ("a", a, rows_a, ~has_a & has_b, "b", "only_b"),
    ):
        if not lost.any():
            continue
        errored, timed_out = failed_cases(run, rows)
        hit = shared & lost.any(axis=1)
        n_err, n_time = int((hit & errored).sum()), int((hit & timed_out).sum())
        if n_err + n_time == 0:
            continue
        what = " or ".join(p for p, n in (("errored", n_err), ("timed out", n_time)) if n)
        parts = (
            ", ".join(f"{n} {p}" for p, n in (("errored", n_err), ("timed out", n_time)) if n)
            if n_err and n_time
            else None
        )
        total = n_err + n_time
        out.append(
            f"{total} case{'s' if total != 1 else ''} {what} in {side} ({run.name!r})"
            f"{f' ({parts})' if parts else ''} and {'are' if total != 1 else 'is'} counted only "
            f"in {other} ({kept}), not paired."
        )
    return out


def case_set_warning(a: RunData, b: RunData, only_a: int, only_b: int, shared: int) -> list[str]:
    if only_a == 0 and only_b == 0:
        return []
    return [
        f"Case sets differ: {only_a} case{'s' if only_a != 1 else ''} only in a ({a.name!r}), "
        f"{only_b} only in b ({b.name!r}); only the {shared} cases in both are paired."
    ]
