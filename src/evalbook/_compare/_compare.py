"""Comparing two runs case by case (`eb.compare`) and ranking several (`eb.leaderboard`).

Only the public Run API is read (`name`, `definitions`, `cases`, `scores`, `headline`), so
loaded runs compare exactly like in-memory ones. Pairing, the tables and the statistics are
vectorised: no Python loop runs per case.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._paired import PairedResult, holm, paired
from .._model._run_data import RunData
from .._model._scores import ScoreDefinition
from .._util._fmt import format_p, format_p_phrase, format_pct, format_pp, format_pp_ci
from .._util._text import visible
from ._warnings import definition_warnings, primary_of, primary_warning

if TYPE_CHECKING:
    from ..display._plots import ComparisonPlots

__all__ = ["CASE_COLUMNS", "CHANGES", "SUMMARY_COLUMNS", "Comparison", "compare"]

SUMMARY_COLUMNS = [
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
]
CASE_COLUMNS = ["case_id", "score", "a", "b", "delta", "change"]
CHANGES = ["improved", "regressed", "same", "only_a", "only_b"]

ScoreSelection = str | ScoreDefinition | Sequence[str | ScoreDefinition] | None


class Comparison:
    """Two runs compared case by case. Build it with `eb.compare(a, b)`.

    Attributes:
        a: The first (reference) run.
        b: The second run; deltas are `b - a`.
        summary: One row per compared score: means over the paired cases, the paired delta
            with its 95 % CI, `p_value`, Holm-adjusted `p_adjusted`, counts and the test used.
        cases: One row per (case, score) counted in at least one run: `case_id, score, a, b,
            delta, change` with change in improved | regressed | same | only_a | only_b.
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
    ) -> None:
        self.a = a
        self.b = b
        self.summary = summary
        self.cases = cases
        self.warnings = warnings
        self.shared_cases = shared_cases
        self._rows = rows  # per .cases row: row numbers in each run's cases / scores

    @property
    def scores(self) -> list[str]:
        """The names of the compared scores, in the order of the summary."""
        return [str(s) for s in self.summary["score"]]

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
                rows = _first_epoch_rows(self._rows[f"{column}_{side}"][picked], column, run)
                taken = getattr(run, source)[what].array  # missing where a row number is -1
                table[f"{what}_{side}"] = taken.take(rows, allow_fill=True)
        order = np.argsort(table["delta"].to_numpy(), kind="stable")
        return table.iloc[order].reset_index(drop=True)

    def __repr__(self) -> str:
        head = (
            f"<Comparison {self.a.name!r} → {self.b.name!r} · {self.shared_cases} shared cases"
            f" · {len(self.summary)} score{'s' if len(self.summary) != 1 else ''}>"
        )
        lines = [head]
        for row in self.summary.itertuples(index=False):
            lines.append(f"  {row.score}: {_row_text(row)}")
        lines.extend(f"  ! {w}" for w in self.warnings)
        return "\n".join(visible(line) for line in lines)  # labels, names: any text

    def _repr_html_(self) -> str:
        # a display hook: the display layer sits above this one and loads only when shown
        from ..display._compare_html import comparison_html

        return comparison_html(self)

    @property
    def plot(self) -> ComparisonPlots:
        """Plotly figures of this comparison: `comparison.plot.deltas()`."""
        # a display hook: the display layer sits above this one and loads only when asked
        from ..display._plots import ComparisonPlots

        return ComparisonPlots(self)


def _row_text(row: Any) -> str:
    if row.n_paired == 0:
        return "no case counted in both runs"
    return (
        f"{format_pct(row.mean_a)} → {format_pct(row.mean_b)} ({format_pp(row.delta)}, 95% CI"
        f" {format_pp_ci(row.ci_low, row.ci_high)}) · {format_p_phrase(row.p_value)}"
        f" (Holm {format_p(row.p_adjusted)}, {row.test}) · {row.n_paired} paired:"
        f" {row.improved} improved, {row.regressed} regressed, {row.same} same"
    )


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


def _case_ids(run: RunData) -> pd.Index:
    """The run's case ids in input order (the categories of `scores.case_id` when it has them)."""
    if isinstance(run, RunData):  # its scores table's case_id categories are exactly its ids
        column = run.scores["case_id"]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories: pd.Index = pd.Index(column.cat.categories)
            return categories
    ids: pd.Index = pd.Index(pd.unique(run.cases["case_id"]))  # one per case, not per epoch
    return ids


def _case_values(run: RunData) -> pd.DataFrame:
    """One row per (case, score) with the case's `value` that a comparison pairs.

    A run's reduced table (each case's epochs reduced by the score's reducer; with one
    epoch, the counted value); a run-like object without one gives its scores' `counted`.
    """
    if isinstance(run, RunData):
        return run._reduced
    scores = run.scores
    return pd.DataFrame(
        {"case_id": scores["case_id"], "score": scores["score"], "value": scores["counted"]}
    )


def _epochs(run: RunData) -> int:
    """How many epochs each case of `run` has (1 for a run-like object without epochs)."""
    return run._results.epochs if isinstance(run, RunData) else 1


def _canonical(
    run: RunData, index: pd.Index, selected: list[str]
) -> tuple[np.ndarray, np.ndarray] | None:
    """`_positions` by reshaping, when the case values are in canonical layout over `index`.

    Canonical: `case_id` is a categorical whose categories are `index` (input order) and the
    rows are case-major with each case's scores in the same order. None when it is not.
    """
    scores = _case_values(run)
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


def _positions(run: RunData, index: pd.Index, selected: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Case values and their row numbers in `_case_values(run)`, shaped (cases of `index`,
    selected)."""
    fast = _canonical(run, index, selected)
    if fast is not None:
        return fast
    scores = _case_values(run)
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


def _first_epoch_rows(rows: np.ndarray, column: str, run: RunData) -> np.ndarray:
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


def _case_set_warning(a: RunData, b: RunData, only_a: int, only_b: int, shared: int) -> list[str]:
    if only_a == 0 and only_b == 0:
        return []
    return [
        f"Case sets differ: {only_a} case{'s' if only_a != 1 else ''} only in a ({a.name!r}), "
        f"{only_b} only in b ({b.name!r}); only the {shared} cases in both are paired."
    ]


def compare(a: RunData, b: RunData, *, score: ScoreSelection = None) -> Comparison:
    """Compare run `b` with run `a` case by case, with paired statistics.

    Cases are aligned by `case_id`; for each score only the cases counted in both runs are
    paired. 0/1 scores get the exact McNemar test and Newcombe's interval for the paired
    difference; other scores a paired sign-flip permutation test and a t interval of the
    mean delta. p-values are Holm-adjusted across the compared scores.

    Args:
        a: The reference run.
        b: The run compared with it (delta = b - a).
        score: A score name (or definition, or a list of them). By default the primary score
            of both runs, else their only common score, else every common score.

    Returns:
        A `Comparison` with `.summary`, `.cases`, `.warnings` and `.regressions()`.

    Raises:
        ConfigurationError: `a` or `b` is not a run, or `score` names a score not in both.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"q": list("abcd"), "expected": list("abcd")})
        >>> old = eb.run(df, task=lambda q: "a", scorers=[eb.scorer("exact")(
        ...     lambda output, expected: float(output == expected))], store=None, progress=False)
        >>> new = eb.run(df, task=lambda q: q, scorers=[eb.scorer("exact")(
        ...     lambda output, expected: float(output == expected))], store=None, progress=False)
        >>> eb.compare(old, new).summary[["score", "mean_a", "mean_b", "delta"]].to_dict("records")
        [{'score': 'exact', 'mean_a': 0.25, 'mean_b': 1.0, 'delta': 0.75}]
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

    ids_a, ids_b = _case_ids(a), _case_ids(b)
    same_ids = ids_a is ids_b or ids_a.equals(ids_b)
    if same_ids:  # the common case: no hashing of ids needed
        index, b_only, shared = ids_a, ids_b[:0], len(ids_a)
    else:
        in_a = ids_b.get_indexer(ids_a) >= 0
        b_only = ids_b[ids_a.get_indexer(ids_b) < 0]
        index = ids_a.append(b_only)
        shared = int(in_a.sum())

    warnings = _case_set_warning(a, b, len(ids_a) - shared, len(b_only), shared)
    warnings += primary_warning(a, b)
    warnings += definition_warnings(a, b, common)
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

    va, ra = _positions(a, index, selected)
    vb, rb = _positions(b, index, selected)
    has_a, has_b = ~np.isnan(va), ~np.isnan(vb)
    both = has_a & has_b

    labels = {d.name: d.display_label() for d in a.definitions}
    results: list[PairedResult] = []
    for j, name in enumerate(selected):
        pair = both[:, j]
        results.append(paired(va[pair, j], vb[pair, j]))
        if not pair.any():
            warnings.append(f"Score {name!r} has no case counted in both runs.")
    summary = _summary_table(selected, labels, results)

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
        columns=CASE_COLUMNS,
    )
    n_a = len(ids_a)
    rows = {
        "case_a": np.where(case_i < n_a, case_i, -1),
        "case_b": case_i.copy() if same_ids else ids_b.get_indexer(index)[case_i],
        "score_a": ra.reshape(-1)[flat].copy(),
        "score_b": rb.reshape(-1)[flat].copy(),
    }
    return Comparison(
        a, b, summary=summary, cases=cases, warnings=warnings, shared_cases=shared, rows=rows
    )


def _summary_table(
    selected: list[str], labels: Mapping[str, str], results: list[PairedResult]
) -> pd.DataFrame:
    p = np.array([r.p_value for r in results], dtype=np.float64)
    table = pd.DataFrame(
        {
            "score": pd.Categorical(selected, categories=pd.Index(selected)),
            "label": pd.Series([labels.get(n, n) for n in selected], dtype=object),
            "mean_a": [r.mean_a for r in results],
            "mean_b": [r.mean_b for r in results],
            "delta": [r.delta for r in results],
            "ci_low": [r.ci_low for r in results],
            "ci_high": [r.ci_high for r in results],
            "p_value": p,
            "p_adjusted": holm(p),
            "n_paired": np.array([r.n_paired for r in results], dtype=np.int64),
            "improved": np.array([r.improved for r in results], dtype=np.int64),
            "regressed": np.array([r.regressed for r in results], dtype=np.int64),
            "same": np.array([r.same for r in results], dtype=np.int64),
            "test": pd.Series([r.test for r in results], dtype=object),
        },
        columns=SUMMARY_COLUMNS,
    )
    for col in ("mean_a", "mean_b", "delta", "ci_low", "ci_high"):
        table[col] = table[col].astype(np.float64)
    return table
