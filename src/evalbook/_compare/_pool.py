"""`eb.pool(runs, by=None)`: one summary of several runs or tasks, weighted by counted values.

The pooled mean of a score is the mean of every run's counted case values together (each
case's reduced value, as `run.summary()` uses), so a run with 900 counted cases weighs nine
times one with 100: never a mean of the runs' means (docs/interop.md, Pooling).

The interval is stratified by run. The runs are fixed (the tasks or runs the user chose) and
each contributes a fixed number of cases, independent of the other runs' cases, so the pooled
mean's variance is Σ_r w_r² V_r, with w_r = n_r / N the run's share of the counted cases and
V_r the variance of the run's own mean by the run's own rule (docs/statistics.md): the
cluster-robust SE² with the run's `cluster=`; for 0/1 values without clusters, Wilson's
p(1 − p)/n; for other values without clusters, its spread-scaled Wilson's p(1 − p)/(n/φ);
where a run's values show no spread to estimate, p(1 − p)/C, the spread
its degenerate rule assumes. Pooling without strata (the cases as one sample) would add the
spread between the runs' means to the variance of a mean whose weights are fixed.
From V:

- when every run's part is Wilson's (no clusters, or no spread): the Wilson interval on the
  effective number of trials p(1 − p)/V (Kish's design-effect form); with V = 0 (each run's
  values all 0 or all 1), on the number of clusters;
- otherwise: mean ± t975(C − R) · √V, C the clusters (cases, without `cluster=`) and R the runs:
  the degrees of freedom of a stratified sample, its part within [0, 1].

With one run both reduce to the run's own interval, so `pool([run])` is `run.summary()`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._slices import cluster_codes, slices_of
from .._model._stats import GroupedCI, grouped_ci, spread_trials, t975, wilson_arrays
from .._render._frames import PoolTable
from ._warnings import combine_text

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["POOL_COLUMNS", "pool"]

POOL_COLUMNS = ["score", "label", "mean", "ci_low", "ci_high", "counted", "n_runs"]


@dataclass
class _Part:
    """One run's contribution: per (case, local score) its reduced value (NaN unless scored)
    and counted samples; each case's cluster code (or None) and its row in the pooled data."""

    name: str
    run: Any
    columns: np.ndarray  # global score index of each local definition
    value: np.ndarray  # (n_cases, n_scores)
    counted: np.ndarray  # (n_cases, n_scores)
    clusters: np.ndarray | None


def pool(
    runs: Iterable[RunData] | Mapping[str, RunData], *, by: str | Sequence[str] | None = None
) -> PoolTable:
    """One row per score across several runs or tasks, weighted by counted values.

    Columns: `score, label, mean, ci_low, ci_high, counted, n_runs`. A score's `mean` is
    the mean of every run's counted case values together (never a mean of the runs' means),
    its 95 % interval stratified by run (docs/interop.md, Pooling); `counted` adds up the
    runs' counted samples and `n_runs` counts the runs that have the score. Scores are
    matched by name, in order of first appearance; a score defined differently in some
    runs (label, errors policy, reducer, combine, grader) is pooled anyway and
    `attrs["warnings"]` names the difference. When the runs' headline scores differ,
    `attrs["note"]` says `Primary scores differ (a, b)` and `attrs["headlines"]` holds
    `(run name, Headline)` for each run.

    Args:
        runs: Runs (from `eb.run`, `eb.load_run`, `eb.import_results`), or a
            `{name: run}` mapping whose keys name them.
        by: A column of the runs' input data present in every run (or a list of them):
            one row per (slice, score), the slice columns first, each slice pooling the
            cases of every run with that value; a (slice, score) without cases is left out.

    Raises:
        ConfigurationError: no runs, something that is not a run, a run without cases or
            scores, or a `by` column missing from a run's data.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> def one(n, hits):
        ...     df = pd.DataFrame({"hit": [1.0] * hits + [0.0] * (n - hits)})
        ...     return eb.run(df, scorers=[eb.scorer("ok")(lambda hit: hit)],
        ...                   output_column="hit", store=None, progress=False)
        >>> table = eb.pool([one(90, 90), one(10, 0)])
        >>> table[["score", "mean", "counted", "n_runs"]]
          score  mean  counted  n_runs
        0    ok   0.9      100       2
    """
    items = _items(runs)
    names = None if by is None else ([by] if isinstance(by, str) else list(by))
    order: dict[str, list[tuple[str, ScoreDefinition]]] = {}
    for name, run in items:
        for d in run.definitions:
            order.setdefault(d.name, []).append((name, d))
    scores = list(order)
    parts = [_part(name, run, scores) for name, run in items]
    n_slices, codes, keys = _slicing(items, [len(p.value) for p in parts], names)
    table = _pooled(parts, codes, n_slices, len(scores))
    chosen = [scores[j] for j in table.pop("_score")]
    table.insert(0, "score", pd.Series(pd.Categorical(chosen, categories=scores)))
    # labels are free text: an object column, as in run.summary()
    table.insert(
        1, "label", pd.Series([order[s][0][1].display_label() for s in chosen], dtype=object)
    )
    table = table[[*POOL_COLUMNS, "_slice"]]
    if keys is not None:
        slice_keys = keys.iloc[table["_slice"].to_numpy()].reset_index(drop=True)
        table = pd.concat([slice_keys, table.reset_index(drop=True)], axis=1)
    # its notebook display escapes the text and lists the notes (`_render/_frames.py`)
    out = PoolTable(table.drop(columns="_slice").reset_index(drop=True))
    out.attrs["warnings"] = [w for s in scores if (w := _differences(s, order[s]))]
    note = _primary_note(items)
    if note is not None:
        out.attrs["note"] = note
        out.attrs["headlines"] = [(name, run.headline) for name, run in items]
    return out


def _items(runs: Any) -> list[tuple[str, Any]]:
    """The runs as (name, run), each checked to be a run with cases and scores."""
    if hasattr(runs, "headline") or isinstance(runs, str | bytes):
        raise ConfigurationError(
            "pool() takes several runs, e.g. eb.pool([run_a, run_b]), not one "
            f"{type(runs).__name__}; pool([run]) pools one run"
        )
    if isinstance(runs, Mapping):
        items = [(str(k), r) for k, r in runs.items()]
    elif isinstance(runs, Iterable):
        items = [(str(getattr(r, "name", "")), r) for r in runs]
    else:
        raise ConfigurationError(
            f"pool() takes a list of runs or a {{name: run}} mapping, not {type(runs).__name__}"
        )
    if not items:
        raise ConfigurationError("pool() needs at least one run; it was given none")
    for i, (name, run) in enumerate(items):
        if not all(hasattr(run, a) for a in ("headline", "definitions", "reduced", "data")):
            raise ConfigurationError(
                f"pool() takes runs (from eb.run(...), eb.load_run(path) or "
                f"eb.import_results(path)); item {i} is a {type(run).__name__}"
            )
        if len(run.cases) == 0:
            raise ConfigurationError(f"run {name!r} has no cases: there is nothing of it to pool")
        if not run.definitions:
            raise ConfigurationError(f"run {name!r} has no scores: there is nothing of it to pool")
    return items


def _part(name: str, run: Any, scores: list[str]) -> _Part:
    reduced = run.reduced()
    s = len(run.definitions)
    n = len(reduced) // s
    value = reduced["value"].to_numpy(np.float64).copy()
    value[(reduced["status"] != "scored").to_numpy()] = math.nan
    counted = reduced["counted"].to_numpy(np.int64)
    cluster = run.options.get("cluster")
    # the run's own clusters, as its summary uses them (none when its data lacks the column:
    # its summary warns of that)
    clustered = isinstance(cluster, str) and cluster in run.data.columns
    return _Part(
        name,
        run,
        np.array([scores.index(d.name) for d in run.definitions], dtype=np.int64),
        value.reshape(n, s),
        counted.reshape(n, s),
        cluster_codes(run.data, cluster, n) if clustered else None,
    )


def _slicing(
    items: list[tuple[str, Any]], sizes: list[int], names: list[Any] | None
) -> tuple[int, list[np.ndarray], pd.DataFrame | None]:
    """Each run's slice code per case, over the runs' data together (a value is one slice
    across runs), and the slices' keys; one slice of every case without `by`."""
    if names is None:
        return 1, [np.zeros(n, np.int64) for n in sizes], None
    if not names:
        raise ConfigurationError("by= needs at least one column name, e.g. by='topic'")
    for name, run in items:
        missing = [c for c in names if c not in run.data.columns]
        if missing:
            raise ConfigurationError(
                f"by={missing[0]!r}: run {name!r} has no such data column; pool by a column "
                "that every run's data has"
            )
    frames = [run.data[names].reset_index(drop=True) for _, run in items]
    together = pd.concat(frames, ignore_index=True)
    slices = slices_of(together, names, len(together), POOL_COLUMNS)
    bounds = np.cumsum([0, *sizes])
    codes = [slices.codes[bounds[i] : bounds[i + 1]] for i in range(len(items))]
    return slices.count, codes, slices.keys


def _pooled(
    parts: list[_Part], codes: list[np.ndarray], n_slices: int, n_scores: int
) -> pd.DataFrame:
    """The pooled numbers of every (slice, score) cell that some run has cases in."""
    cells, n_runs = n_slices * n_scores, len(parts)
    values, cell_of, stratum, cluster = [], [], [], []
    counted = np.zeros(cells, np.int64)
    present = np.zeros((cells, n_runs), dtype=bool)
    top = 0  # cluster codes of different runs never meet: the runs are strata
    for r, (part, slice_code) in enumerate(zip(parts, codes, strict=True)):
        cell = slice_code[:, None] * n_scores + part.columns[None, :]
        np.add.at(counted, cell.reshape(-1), part.counted.reshape(-1))
        present[cell.reshape(-1), r] = True
        own = part.clusters if part.clusters is not None else np.arange(len(slice_code))
        scored = ~np.isnan(part.value)
        values.append(part.value[scored])
        cell_of.append(cell[scored])
        stratum.append(np.full(int(scored.sum()), r, np.int64))
        cluster.append(np.broadcast_to(own[:, None], cell.shape)[scored] + top)
        top += int(own.max()) + 1 if own.size else 0
    x = np.concatenate(values)
    g = np.concatenate(cell_of).astype(np.int64)
    st = np.concatenate(stratum)
    cl = np.concatenate(cluster).astype(np.int64)
    clustered = np.array([p.clusters is not None for p in parts])
    whole = grouped_ci(x, g, cells)  # the mean: every counted case value, in run order
    strata = grouped_ci(x, g * n_runs + st, cells * n_runs, cl)
    low, high = _stratified(x, g * n_runs + st, whole.mean, strata, clustered, cells, n_runs)
    keep = present.any(axis=1)
    cell_index = np.flatnonzero(keep)
    return pd.DataFrame(
        {
            "_score": cell_index % n_scores,
            "_slice": cell_index // n_scores,
            "mean": whole.mean[keep],
            "ci_low": low[keep],
            "ci_high": high[keep],
            "counted": counted[keep],
            "n_runs": present.sum(axis=1)[keep].astype(np.int64),
        }
    )


def _stratified(
    x: np.ndarray,
    group: np.ndarray,
    mean: np.ndarray,
    strata: GroupedCI,
    clustered: np.ndarray,
    cells: int,
    n_runs: int,
) -> tuple[np.ndarray, np.ndarray]:
    """The stratified 95 % interval of each cell (this module's docstring)."""
    n = strata.n.reshape(cells, n_runs).astype(np.float64)
    m = strata.mean.reshape(cells, n_runs)
    c = strata.n_clusters.reshape(cells, n_runs).astype(np.float64)
    se = strata.se.reshape(cells, n_runs)
    size = cells * n_runs
    nonbinary = np.bincount(group, weights=(x != 0.0) & (x != 1.0), minlength=size) > 0
    lo = np.full(size, math.inf)
    hi = np.full(size, -math.inf)
    np.minimum.at(lo, group, x)
    np.maximum.at(hi, group, x)
    spread = (c >= 2) & (lo != hi).reshape(cells, n_runs) & (se > 0)
    wilson_part = ~nonbinary.reshape(cells, n_runs) & ~clustered[None, :]
    has = n > 0
    q = np.where(has, m * (1 - m), 0.0)
    # each run's variance of its own mean: Wilson's, the degenerate rule's, or its SE²
    var = np.where(wilson_part, q / np.where(has, n, 1.0), 0.0)
    var = np.where(~wilson_part & ~spread & has, q / np.where(has, c, 1.0), var)
    # a run's other values in [0, 1] without clusters: its spread-scaled Wilson interval's
    scaled = ~wilson_part & spread & ~clustered[None, :]
    safe_n, safe_se = np.where(scaled, n, 2.0), np.where(scaled, se, 0.5)
    trials_r = spread_trials(safe_n, np.where(scaled, m, 0.5), safe_se)
    var = np.where(scaled, q / trials_r, var)
    var = np.where(~wilson_part & spread & ~scaled, np.where(spread, se, 0.0) ** 2, var)
    total = n.sum(axis=1)
    weight2 = np.divide(n * n, (total * total)[:, None], out=np.zeros_like(n), where=has)
    v = (weight2 * var).sum(axis=1)
    all_wilson = ((wilson_part | ~spread | scaled) | ~has).all(axis=1)
    low, high = np.full(cells, math.nan), np.full(cells, math.nan)
    some = total > 0
    w_rows = some & all_wilson
    pm = np.where(some, mean, 0.0)
    trials = np.where(v > 0, pm * (1 - pm) / np.where(v > 0, v, 1.0), c.sum(axis=1))
    if w_rows.any():
        low[w_rows], high[w_rows] = wilson_arrays(pm[w_rows] * trials[w_rows], trials[w_rows])
    t_rows = some & ~all_wilson
    for i in np.flatnonzero(t_rows):  # only the t quantile is per cell
        df = int(c[i].sum()) - int(has[i].sum())
        half = t975(df) * math.sqrt(v[i])
        low[i], high[i] = max(0.0, pm[i] - half), min(1.0, pm[i] + half)
    return low, high


def _primary_note(items: list[tuple[str, Any]]) -> str | None:
    """`Primary scores differ (a, b)` when the runs' headline scores differ, else None."""
    kinds: dict[str, None] = {}
    for _, run in items:
        primary = next((d.name for d in run.definitions if d.primary), None)
        score = run.headline.score
        if primary is not None:
            kinds[primary] = None
        elif score is not None:
            kinds[f"{score} (its only score)"] = None
        else:
            kinds["passed rate (no primary score)"] = None
    heads = {run.headline.score for _, run in items}
    if len(heads) < 2:
        return None
    return (
        f"Primary scores differ ({', '.join(kinds)}): no pooled row is a headline; "
        "each run's own headline is listed"
    )


def _definition_fields(d: ScoreDefinition) -> dict[str, str]:
    g = d.grader
    grader = "none" if g is None else f"{g.kind}/{g.id}" + (f"/{g.model}" if g.model else "")
    if g is not None and g.version:
        grader += f"@{g.version}"
    return {
        "label": repr(d.display_label()),
        "errors policy": repr(d.errors),
        "reducer": repr(d.reducer),
        "combine": combine_text(d.combine),
        "grader": grader,
    }


def _differences(score: str, defs: list[tuple[str, ScoreDefinition]]) -> str | None:
    """One sentence naming how a score's definition differs between runs, or None."""
    fields = [(name, _definition_fields(d)) for name, d in defs]
    changes = []
    for field in fields[0][1]:
        seen: dict[str, list[str]] = {}
        for name, f in fields:
            seen.setdefault(f[field], []).append(name)
        if len(seen) > 1:
            each = "; ".join(f"{v} in {', '.join(map(repr, ns))}" for v, ns in seen.items())
            changes.append(f"{field} {each}")
    if not changes:
        return None
    return f"Score {score!r} is defined differently in the runs, pooled anyway: " + (
        " · ".join(changes)
    )
