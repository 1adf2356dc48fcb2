"""Slices (`by=`) and clusters (`cluster=`) of a run's cases, read from its input data.

Both name columns of `run.data`, whose rows are the run's cases in order. A slice or a
cluster is an integer code per case, so that the summary can group every case at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._util._small import SMALL  # the summary's threshold, re-exported: defined below _render

__all__ = ["SMALL", "Slices", "cluster_codes", "slices_of"]


@dataclass(frozen=True)
class Slices:
    """Each case's slice (`codes`, 0 .. len(keys) − 1, in order of first appearance) and
    `keys`, one row per slice holding its value of each `by` column."""

    codes: np.ndarray
    keys: pd.DataFrame

    @property
    def count(self) -> int:
        return len(self.keys)


def _columns(by: Any, what: str) -> list[Any]:
    names = [by] if isinstance(by, str) else list(by) if isinstance(by, Sequence) else [by]
    if not names:
        raise ConfigurationError(f"{what} needs at least one column name, e.g. {what}'topic'")
    if len(set(map(str, names))) != len(names):
        raise ConfigurationError(f"{what} names a column twice: {names!r}")
    return names


def _check_in(data: pd.DataFrame, names: Sequence[Any], what: str, n_cases: int) -> None:
    missing = [n for n in names if n not in data.columns]
    if missing:
        shown = ", ".join(repr(n) for n in missing)
        if len(data.columns) == 0:
            raise ConfigurationError(
                f"{what}{shown}: this run has no input data columns (a run loaded without its "
                "data.parquet, or data with no columns); pass a run that keeps its data"
            )
        known = ", ".join(repr(c) for c in data.columns)
        raise ConfigurationError(
            f"{what}{shown} is not a column of the run's data; its columns are: {known}"
        )
    if len(data) != n_cases:
        raise ConfigurationError(
            f"{what}{names[0]!r}: the run's data has {len(data)} rows for {n_cases} cases, so "
            "its rows cannot be matched to the cases"
        )


def _codes(column: pd.Series, what: str) -> np.ndarray:
    """Codes in order of first appearance; a missing value (NaN, None) is a value of its own."""
    try:
        codes, _ = pd.factorize(column, sort=False, use_na_sentinel=False)
    except TypeError as exc:  # e.g. lists: unhashable
        raise ConfigurationError(
            f"{what}{column.name!r}: its values cannot be grouped ({exc}); use a column of "
            "strings or numbers"
        ) from None
    return np.asarray(codes, dtype=np.int64)


def slices_of(data: pd.DataFrame, by: Any, n_cases: int, reserved: Sequence[str]) -> Slices:
    """The slices of `by` (a column name or a list of them) over the run's cases.

    Missing values (NaN, None, NaT) form one slice of their own per column, shown as the
    missing value; slices come in order of first appearance in the data. A `by` column named
    like a column of the table it is put in front of (`reserved`) is refused: the two would
    be one column.

    Example:
        >>> s = slices_of(pd.DataFrame({"t": ["b", "a", "b", None]}), "t", 4, ["score"])
        >>> s.codes.tolist(), s.keys["t"].tolist()[:2], s.keys["t"].isna().tolist()
        ([0, 1, 0, 2], ['b', 'a'], [False, False, True])
    """
    names = _columns(by, "by=")
    _check_in(data, names, "by=", n_cases)
    clash = [n for n in names if n in reserved]
    if clash:
        raise ConfigurationError(
            f"by={clash[0]!r}: the summary has a column of that name; rename the data column, "
            f"e.g. run.data.rename(columns={{{clash[0]!r}: '{clash[0]}_group'}})"
        )
    codes = np.zeros(n_cases, dtype=np.int64)
    for name in names:
        own = _codes(data[name], "by=")
        # renumbered after each column (first appearance), so the codes stay below n_cases
        combined, _ = pd.factorize(codes * (int(own.max()) + 1 if own.size else 1) + own)
        codes = np.asarray(combined, dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    keys = data[names].iloc[first].reset_index(drop=True)
    return Slices(codes, keys)


def cluster_codes(data: pd.DataFrame, cluster: str, n_cases: int) -> np.ndarray:
    """Each case's cluster as an integer code: the values of column `cluster` of the data.

    A case whose cluster value is missing (NaN, None) is a cluster of its own: nothing says
    it shares anything with another case.

    Example:
        >>> cluster_codes(pd.DataFrame({"p": ["x", "y", "x", None]}), "p", 4).tolist()
        [0, 1, 0, 2]
    """
    if not isinstance(cluster, str):
        raise ConfigurationError(
            f"cluster= takes one column name of the data, e.g. cluster='passage', not {cluster!r}"
        )
    _check_in(data, [cluster], "cluster=", n_cases)
    column = data[cluster]
    codes = _codes(column, "cluster=")
    missing = column.isna().to_numpy()
    if missing.any():  # renumbered: the missing value's own code goes, one code per case
        present, _ = pd.factorize(codes[~missing])
        codes = np.empty(n_cases, dtype=np.int64)
        codes[~missing] = present
        top = int(present.max()) + 1 if present.size else 0
        codes[missing] = top + np.arange(int(missing.sum()))
    return codes
