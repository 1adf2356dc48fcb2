"""Comparing two runs case by case (`eb.compare`) and ranking several (`eb.leaderboard`).

Only the public Run API is read (`name`, `definitions`, `cases`, `scores`, `headline`), so
loaded runs compare exactly like in-memory ones. Pairing, the tables and the statistics are
vectorised: no Python loop runs per case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._paired import PairedResult, holm, paired
from .._model._run_data import RunData
from .._model._slices import SMALL, cluster_codes, slices_of
from .._render._compare_html import comparison_html, comparison_text
from .._render._compare_plots import ComparisonPlots
from ._cost_deltas import UsageDeltas, cost_warnings
from ._pairing import (
    case_frame,
    case_ids,
    case_set_warning,
    cluster_column,
    failed_warnings,
    first_epoch_rows,
    positions,
)
from ._warnings import (
    definition_warnings,
    epochs_warning,
    primary_of,
    primary_warning,
    sample_warning,
    stop_notes,
)

__all__ = [
    "CHANGES",
    "COMPARISON_COLUMNS",
    "PAIR_COLUMNS",
    "Comparison",
    "compare",
    "paired_result",
]

COMPARISON_COLUMNS = [
    "score",
    "label",
    "mean_a",
    "mean_b",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "p_adjusted",
    "n_paired",
    "improved",
    "regressed",
    "same",
    "test",
    # issue 17, after the pinned columns: docs/comparing.md
    "rho",
    "mde",
    "n_clusters",
    "small",
]
PAIR_COLUMNS = ["case_id", "score", "a", "b", "delta", "change"]
CHANGES = ["improved", "regressed", "same", "only_a", "only_b"]

ScoreSelection = str | ScoreDefinition | Sequence[str | ScoreDefinition] | None


class Comparison(UsageDeltas):
    """Two runs compared case by case. Build it with `eb.compare(a, b)`.

    Attributes:
        a: The first (reference) run.
        b: The second run; deltas are `b - a`.
        summary: One row per compared score (with `by=`: per (slice, score), the slice
            columns first): means over the paired cases, the paired delta with its 95 % CI,
            `p_value`, Holm-adjusted `p_adjusted` (across every row), counts, the test used,
            then `rho` (correlation of the paired values), `mde` (the minimum detectable
            effect at 80 % power, two-sided 5 %), `n_clusters` and `small` (fewer than 10
            paired values; with `cluster=`, fewer than 10 clusters).
        cases: One row per (case, score) counted in at least one run: `case_id, score, a, b,
            delta, change` with change in improved | regressed | same | only_a | only_b;
            with `by=`, the slice columns after them.
        by: The slice columns (empty without `by=`).
        cluster: The data column the paired tests are clustered by, or None.
        warnings: Sentences about anything that makes the comparison less than like for like.
        shared_cases: How many case ids the two runs have in common.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"q": ["a", "b", "c"]})
        >>> old = eb.run(df, task=lambda q: q, scorers=[eb.scorer("ok")(lambda q: float(q > "a"))],
        ...              name="old", store=None, progress=False)
        >>> new = eb.run(df, task=lambda q: q, scorers=[eb.scorer("ok")(lambda q: 1.0)],
        ...              name="new", store=None, progress=False)
        >>> cmp = eb.compare(old, new)
        >>> cmp.cases["change"].tolist()
        ['improved', 'same', 'same']
    """

    def __init__(
        self,
        a: RunData,
        b: RunData,
        *,
        summary: pd.DataFrame,
        cases: pd.DataFrame,
        warnings: list[str],
        shared_cases: int,
        rows: dict[str, np.ndarray],
        selected: Sequence[str] = (),
        by: Sequence[Any] = (),
        cluster: str | None = None,
        overall: Mapping[str, PairedResult] | None = None,
    ) -> None:
        self.a = a
        self.b = b
        self.summary = summary
        self.cases = cases
        self.warnings = warnings
        self.shared_cases = shared_cases
        self._rows = rows  # per .cases row: row numbers in each run's cases / scores
        self._selected = list(selected)
        self.by = list(by)
        self.cluster = cluster
        # each score over every paired case (the slices pooled): what eb.mde(like=) reads
        self._overall = dict(overall or {})

    @property
    def scores(self) -> list[str]:
        """The names of the compared scores, in the order of the summary."""
        return list(self._selected)

    def regressions(self, score: str | ScoreDefinition | None = None) -> pd.DataFrame:
        """The cases that got worse, worst first, with both runs' outputs side by side.

        Columns: `case_id, score, a, b, delta, output_a, output_b, rationale_a, rationale_b`.

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> df = pd.DataFrame({"q": ["a", "b"]})
            >>> old = eb.run(df, task=lambda q: q, scorers=[lambda output: 1.0],
            ...              store=None, progress=False)
            >>> new = eb.run(df, task=lambda q: q, scorers=[lambda output: 0.0],
            ...              store=None, progress=False)
            >>> eb.compare(old, new).regressions()[["case_id", "a", "b"]].to_dict("list")
            {'case_id': ['0', '1'], 'a': [1.0, 1.0], 'b': [0.0, 0.0]}
        """
        mask = self.cases["change"].to_numpy() == "regressed"
        if score is not None:
            name = score.name if isinstance(score, ScoreDefinition) else score
            if name not in self.scores:
                raise ConfigurationError(
                    f"regressions(score={name!r}): that score is not in this comparison; "
                    f"compared scores: {', '.join(self.scores) or '(none)'}"
                )
            mask &= self.cases["score"].to_numpy() == name
        picked = np.flatnonzero(mask)
        table = self.cases.iloc[picked].drop(columns="change").reset_index(drop=True)
        for what, column, source in (("output", "case", "cases"), ("rationale", "score", "scores")):
            for side, run in (("a", self.a), ("b", self.b)):
                rows = first_epoch_rows(self._rows[f"{column}_{side}"][picked], column, run)
                taken = getattr(run, source)[what].array  # missing where a row number is -1
                table[f"{what}_{side}"] = taken.take(rows, allow_fill=True)
        order = np.argsort(table["delta"].to_numpy(), kind="stable")
        return table.iloc[order].reset_index(drop=True)

    def __repr__(self) -> str:
        # the one text form of a comparison (repr, widget, CLI)
        return comparison_text(self)

    def _repr_html_(self) -> str:
        return comparison_html(self)

    @property
    def plot(self) -> ComparisonPlots:
        """Plotly figures of this comparison: `comparison.plot.deltas()`."""
        return ComparisonPlots(self)


# -- choosing the scores ----------------------------------------------------------------------


def _names(score: ScoreSelection) -> list[str] | None:
    if score is None:
        return None
    items = [score] if isinstance(score, str | ScoreDefinition) else list(score)
    names = []
    for item in items:
        if isinstance(item, ScoreDefinition):
            names.append(item.name)
        elif isinstance(item, str):
            names.append(item)
        else:
            raise ConfigurationError(
                f"compare(score=...) takes a score name or definition (or a list of them), "
                f"not {item!r}"
            )
    return names


def _select(a: RunData, b: RunData, score: ScoreSelection, common: list[str]) -> list[str]:
    """`score=` if given; else the shared primary; else the only common score; else all."""
    names = _names(score)
    if names is not None:
        for name in names:
            if name not in common:
                where = [r.name for r in (a, b) if name in {d.name for d in r.definitions}]
                found = f" (it is only in {where[0]!r})" if where else ""
                raise ConfigurationError(
                    f"compare(score={name!r}): no such score in both runs{found}; "
                    f"scores in both runs: {', '.join(common) or '(none)'}"
                )
        return list(dict.fromkeys(names))
    pa, pb = primary_of(a), primary_of(b)
    if pa is not None and pa == pb:
        return [pa]
    return common


# -- pairing ----------------------------------------------------------------------------------


def paired_result(comparison: Comparison, score: str) -> PairedResult:
    """The paired numbers of one score over the whole comparison (`eb.mde(like=)` plans on them)."""
    return comparison._overall[score]


def compare(
    a: RunData,
    b: RunData,
    *,
    score: ScoreSelection = None,
    by: str | Sequence[str] | None = None,
    cluster: str | bool | None = None,
) -> Comparison:
    """Compare run `b` with run `a` case by case, with paired statistics.

    Cases are aligned by `case_id`; for each score only the cases counted in both runs are
    paired. 0/1 scores get the exact McNemar test and Newcombe's interval for the paired
    difference; other scores a paired sign-flip permutation test and a t interval of the
    mean delta; clustered cases (`cluster=`) the clustered t test of the deltas. p-values
    are Holm-adjusted across every row of the summary (docs/comparing.md).

    Args:
        a: The reference run.
        b: The run compared with it (delta = b - a).
        score: A score name (or definition, or a list of them). By default the primary score
            of both runs, else their only common score, else every common score.
        by: A column of the input data (or a list of them): one summary row per (slice,
            score), slice columns first, in order of first appearance; a missing value is a
            slice of its own. A case's slice value is read from run a's data, and from run
            b's for a case only in b (or when a's data lacks the column).
        cluster: A column of the input data whose cases are not independent (e.g. questions
            on one passage): each paired test is the clustered t on the cluster-robust SE of
            the deltas, with C - 1 degrees of freedom, whatever the values (test
            `"clustered t"`); a case with a missing value is a cluster of its own. None uses
            run a's `eb.run(cluster=)` (else run b's); False turns it off.

    Returns:
        A `Comparison` with `.summary`, `.cases`, `.warnings` and `.regressions()`.

    Raises:
        ConfigurationError: `a` or `b` is not a run, `score` names a score not in both, or
            a `by` / `cluster` column is in neither run's data.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"q": list("abcd"), "expected": list("abcd"), "kind": list("xxyy")})
        >>> old = eb.run(df, task=lambda q: "a", scorers=[eb.scorer("exact")(
        ...     lambda output, expected: float(output == expected))], store=None, progress=False)
        >>> new = eb.run(df, task=lambda q: q, scorers=[eb.scorer("exact")(
        ...     lambda output, expected: float(output == expected))], store=None, progress=False)
        >>> eb.compare(old, new).summary[["score", "mean_a", "mean_b", "delta"]].to_dict("records")
        [{'score': 'exact', 'mean_a': 0.25, 'mean_b': 1.0, 'delta': 0.75}]
        >>> by_kind = eb.compare(old, new, by="kind").summary
        >>> by_kind[["kind", "delta", "small"]].to_dict("list")
        {'kind': ['x', 'y'], 'delta': [0.5, 1.0], 'small': [True, True]}
    """
    for side, run in (("a", a), ("b", b)):
        if not isinstance(run, RunData) and not all(
            hasattr(run, attr) for attr in ("scores", "cases", "definitions", "name")
        ):
            raise ConfigurationError(
                f"compare() takes two runs (from eb.run(...) or eb.load_run(path)); "
                f"{side} is {type(run).__name__}"
            )
    names_a = [d.name for d in a.definitions]
    names_b = {d.name for d in b.definitions}
    common = [n for n in names_a if n in names_b]
    selected = _select(a, b, score, common)

    ids_a, ids_b = case_ids(a), case_ids(b)
    same_ids = ids_a is ids_b or ids_a.equals(ids_b)
    if same_ids:  # the common case: no hashing of ids needed
        index, b_only, shared = ids_a, ids_b[:0], len(ids_a)
    else:
        in_a = ids_b.get_indexer(ids_a) >= 0
        b_only = ids_b[ids_a.get_indexer(ids_b) < 0]
        index = ids_a.append(b_only)
        shared = int(in_a.sum())
    n_a = len(ids_a)
    index_b = np.arange(len(index)) if same_ids else ids_b.get_indexer(index)

    warnings = case_set_warning(a, b, n_a - shared, len(b_only), shared)
    warnings += primary_warning(a, b) + epochs_warning(a, b) + definition_warnings(a, b, common)
    warnings += sample_warning(a, b) + stop_notes(a, b)
    only = (
        [n for n in names_a if n not in names_b],
        [d.name for d in b.definitions if d.name not in set(names_a)],
    )
    for side, extra in zip("ab", only, strict=True):
        if extra:
            warnings.append(
                f"Score{'s' if len(extra) > 1 else ''} only in {side}, not compared: "
                f"{', '.join(extra)}."
            )
    if not common:
        warnings.append("The runs have no score in common, so nothing is compared.")

    va, ra = positions(a, index, selected)
    vb, rb = positions(b, index, selected)
    has_a, has_b = ~np.isnan(va), ~np.isnan(vb)
    both = has_a & has_b

    one = isinstance(by, str) or not isinstance(by, Sequence)  # a name (maybe not a str)
    by_names: list[Any] = [] if by is None else [by] if one else list(by)
    column, cluster_note = cluster_column(a, b, cluster)
    warnings += cluster_note
    frame = case_frame(a, b, index, index_b, by_names, "by=")
    # the runs' default may be missing from their data (a loaded run): then it is said
    wanted = case_frame(
        a, b, index, index_b, [column] if column else [], "cluster=", optional=cluster is None
    )
    if column is not None and column not in wanted.columns:
        warnings.append(
            f"The runs are clustered by {column!r} (eb.run(cluster=)), but neither run's data "
            "has that column (loaded without data.parquet?), so the tests are not clustered."
        )
        column = None
    clusters = None if column is None else cluster_codes(wanted, column, len(index))
    if by is not None:
        slices = slices_of(frame, by, len(index), COMPARISON_COLUMNS)
        codes, keys = slices.codes, slices.keys
        by_names = list(keys.columns)
    else:
        codes, keys = np.zeros(len(index), dtype=np.int64), pd.DataFrame(index=pd.RangeIndex(1))

    labels = {d.name: d.display_label() for d in a.definitions}
    overall: dict[str, PairedResult] = {}
    for j, name in enumerate(selected):
        rows_j = np.flatnonzero(both[:, j])
        overall[name] = paired(va[rows_j, j], vb[rows_j, j], clusters=_at(clusters, rows_j))
        if rows_j.size == 0:
            warnings.append(f"Score {name!r} has no case counted in both runs.")
    if by is None:
        results = [overall[name] for name in selected]
    else:  # slice-major: each slice's cases in input order, then each score
        order = np.argsort(codes, kind="stable")
        bounds = np.searchsorted(codes[order], np.arange(len(keys) + 1))
        results = []
        for k in range(len(keys)):
            rows_k = order[bounds[k] : bounds[k + 1]]
            for j in range(len(selected)):
                rows_kj = rows_k[both[rows_k, j]]
                results.append(
                    paired(va[rows_kj, j], vb[rows_kj, j], clusters=_at(clusters, rows_kj))
                )
    summary = _summary_table(selected, labels, results, keys)

    # the rows counted in a run or both: case-major, i.e. input order, then score order
    n_sel = len(selected)
    present = (has_a | has_b).reshape(-1)
    flat: np.ndarray | slice
    if present.all():  # the common case: every row, no gathering
        flat = slice(None)
        case_i = np.repeat(np.arange(len(index), dtype=np.int64), n_sel)
        score_j = np.tile(np.arange(n_sel, dtype=np.int64), len(index))
    else:
        flat = np.flatnonzero(present)
        case_i, score_j = np.divmod(flat, n_sel)
    a_vals, b_vals = va.reshape(-1)[flat].copy(), vb.reshape(-1)[flat].copy()
    delta = b_vals - a_vals
    # the first that holds of: improved (0), regressed (1), same (2), only_a (3); else only_b
    change = np.full(len(delta), 4, dtype=np.int8)
    change[np.isnan(b_vals)] = 3
    change[delta == 0] = 2
    change[delta < 0] = 1
    change[delta > 0] = 0
    cases = pd.DataFrame(
        {
            # the ids' column type is inferred once over the unique ids, then taken per row
            "case_id": pd.Series(index.to_numpy(), copy=False).array.take(case_i),
            "score": pd.Categorical.from_codes(
                score_j.astype(np.int32), categories=pd.Index(selected)
            ),
            "a": a_vals,
            "b": b_vals,
            "delta": delta,
            "change": pd.Categorical.from_codes(change, categories=pd.Index(CHANGES)),
        },
        columns=PAIR_COLUMNS,
    )
    if by is not None:
        slice_of_row = codes[case_i]
        for name in keys.columns:
            cases[name] = keys[name].array.take(slice_of_row)
    warnings += failed_warnings(a, b, index, index_b, n_a, has_a, has_b) + cost_warnings(a, b)
    rows = {
        "case_a": np.where(case_i < n_a, case_i, -1),
        "case_b": index_b[case_i],
        "score_a": ra.reshape(-1)[flat].copy(),
        "score_b": rb.reshape(-1)[flat].copy(),
    }
    return Comparison(
        a,
        b,
        summary=summary,
        cases=cases,
        warnings=warnings,
        shared_cases=shared,
        rows=rows,
        selected=selected,
        by=by_names,
        cluster=column,
        overall=overall,
    )


def _at(clusters: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if clusters is None else clusters[rows]


def _summary_table(
    selected: list[str],
    labels: Mapping[str, str],
    results: list[PairedResult],
    keys: pd.DataFrame,
) -> pd.DataFrame:
    """The summary rows: for each slice (a row of `keys`), each selected score."""
    n_slices = len(keys)
    names = selected * n_slices
    p = np.array([r.p_value for r in results], dtype=np.float64)
    n_paired = np.array([r.n_paired for r in results], dtype=np.int64)
    table = pd.DataFrame(
        {
            "score": pd.Categorical(names, categories=pd.Index(selected)),
            "label": pd.Series([labels.get(n, n) for n in names], dtype=object),
            "mean_a": [r.mean_a for r in results],
            "mean_b": [r.mean_b for r in results],
            "delta": [r.delta for r in results],
            "ci_low": [r.ci_low for r in results],
            "ci_high": [r.ci_high for r in results],
            "p_value": p,
            "p_adjusted": holm(p),  # across every (slice, score) row
            "n_paired": n_paired,
            "improved": np.array([r.improved for r in results], dtype=np.int64),
            "regressed": np.array([r.regressed for r in results], dtype=np.int64),
            "same": np.array([r.same for r in results], dtype=np.int64),
            "test": pd.Series([r.test for r in results], dtype=object),
            "rho": [r.rho for r in results],
            "mde": [r.mde for r in results],
            "n_clusters": np.array([r.n_clusters for r in results], dtype=np.int64),
            # clusters, with cluster= (n_paired without): the unit of the test, as
            # `summary(by=)` and `show --by` flag a slice
            "small": np.array([r.n_clusters for r in results], dtype=np.int64) < SMALL,
        },
        columns=COMPARISON_COLUMNS,
    )
    for col in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "rho", "mde"):
        table[col] = table[col].astype(np.float64)
    if len(keys.columns):  # the slice columns first, each slice's value on its scores' rows
        repeated = np.repeat(np.arange(n_slices), len(selected))
        front = pd.DataFrame({c: keys[c].array.take(repeated) for c in keys.columns})
        table = pd.concat([front, table], axis=1)
    return table
