"""`eb.leaderboard(runs)`: runs ranked by their headline score, completion beside it.

The board is a DataFrame holding the runs' names exactly; only its notebook display escapes
them (`LeaderboardTable`, `_render/_frames.py`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._render._frames import LeaderboardTable
from ._pairing import case_ids, case_values
from ._ranks import Ranks, rank_intervals

__all__ = ["LEADERBOARD_COLUMNS", "board_order", "leaderboard"]

# the four rank columns first, then what each run's headline says
LEADERBOARD_COLUMNS = [
    "rank",
    "rank_low",
    "rank_high",
    "tier",
    "name",
    "score",
    "label",
    "mean",
    "ci_low",
    "ci_high",
    "completion",
    "passed_rate",
]


def leaderboard(runs: Iterable[RunData] | Mapping[str, RunData]) -> LeaderboardTable:
    """Rank runs by their primary score, best first, with completion in its own column.

    Each row shows the run's headline score (`score, label, mean, ci_low, ci_high`), its
    `completion` and `passed_rate` (the share of cases whose task returned: an outcome, not a
    score, never ranked on). When the runs' headline scores differ there is no ranking: the
    rank columns are `<NA>`, the rows keep the order given, and `board.attrs["note"]` says
    why (its notebook display shows the note under the table; "primary" names only scores a
    run declared). Ties share a rank;
    runs without a value rank last. In a notebook the board shows its text escaped (controls
    and bidi characters as backslash escapes, markup as text), and so does a frame derived
    from it (`board.head()`); its values are the names as given.

    Args:
        runs: Runs, or a `{name: run}` mapping whose keys name the rows.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"q": ["a", "b"]})
        >>> runs = [eb.run(df, task=lambda q: q, scorers=[eb.scorer("ok")(lambda output: v)],
        ...                name=f"v{v}", store=None, progress=False) for v in (0.5, 1.0)]
        >>> eb.leaderboard(runs)[["rank", "name", "mean"]].to_dict("list")
        {'rank': [1, 2], 'name': ['v1.0', 'v0.5'], 'mean': [1.0, 0.5]}
    """
    if isinstance(runs, Mapping):
        items = [(str(k), r) for k, r in runs.items()]
    else:
        items = [(str(getattr(r, "name", "")), r) for r in runs]
    if not items:  # as eb.pool([]) and eb.show([]): an empty board says nothing, loudly
        raise ConfigurationError("leaderboard() needs at least one run; it was given none")
    records = []
    for name, run in items:
        if not hasattr(run, "headline"):
            raise ConfigurationError(
                f"leaderboard() takes runs (from eb.run(...) or eb.load_run(path)), "
                f"not {type(run).__name__}"
            )
        h = run.headline
        outcome = run.cases["outcome"]
        passed = float((outcome == "passed").mean()) if len(outcome) else math.nan
        lo, hi = h.ci if h.ci is not None else (math.nan, math.nan)
        records.append(
            {
                "name": name,
                "score": h.score,
                "label": h.label,
                "mean": math.nan if h.value is None else float(h.value),
                "ci_low": float(lo),
                "ci_high": float(hi),
                "completion": math.nan if h.completion is None else float(h.completion),
                "passed_rate": passed,
            }
        )
    board = pd.DataFrame.from_records(records, columns=LEADERBOARD_COLUMNS[4:])
    headlines = list(dict.fromkeys(board["score"].tolist()))
    if len(headlines) > 1:
        # no shared score, no ranking: a mean of one score is no mean of another, and the
        # passed rate (tasks that returned) says nothing of how good the outputs were
        board.attrs["note"] = _differ_note([r for _, r in items])
        for position, column in enumerate(("rank", "rank_low", "rank_high", "tier")):
            board.insert(position, column, pd.Series(pd.NA, index=board.index, dtype="Int64"))
        out = LeaderboardTable(board)
        out.attrs = {**board.attrs, "positions": list(range(len(board)))}
        return out
    ranks = board["mean"].rank(method="min", ascending=False, na_option="bottom")
    honest = _ranks([r for _, r in items], board["score"].tolist())
    board.insert(0, "rank", ranks.astype(np.int64))
    for position, column in enumerate(("rank_low", "rank_high", "tier"), start=1):
        values = pd.Series(getattr(honest, column), index=board.index, dtype="Int64")
        board.insert(position, column, values.mask(values == 0))  # 0: the run has no value
    counts = [len(case_ids(r)) for _, r in items]
    if len(items) > 1 and honest.n_shared < max(counts):
        shared = (
            f"Rank intervals and tiers compare the runs on the {honest.n_shared} cases they "
            f"all have a value for (of up to {max(counts)})."
        )
        board.attrs["note"] = " ".join(n for n in (board.attrs.get("note"), shared) if n)
    order = np.lexsort((np.arange(len(board)), board["rank"].to_numpy()))
    tiers = board["tier"].to_numpy(dtype=float, na_value=np.nan)[order]
    tiers = tiers[~np.isnan(tiers)]
    if (np.diff(tiers) < 0).any():  # a tier below a later one: the verdicts are not transitive
        board.attrs["note"] = " ".join(n for n in (board.attrs.get("note"), _UNEVEN_TIERS) if n)
    out = LeaderboardTable(board.iloc[order].reset_index(drop=True))
    # each row's run by its position in `runs` (names may repeat): what a view puts beside it
    out.attrs = {**board.attrs, "positions": [int(i) for i in order]}
    return out


# said when, listed by mean, a tier comes after a later one: paired verdicts need not chain
_UNEVEN_TIERS = (
    "Tiers follow the paired tests, not the order of the means: a run listed below one of a "
    "later tier is not separable from its tier's first run, which the run above it is "
    "separably worse than."
)


def board_order(board: pd.DataFrame) -> list[int]:
    """The position in the runs given to `leaderboard` of each of `board`'s rows."""
    positions: list[int] = board.attrs["positions"]
    return positions


def _declared_primary(run: Any) -> str | None:
    """The score a run declared primary, or None (its headline is then its only score or the
    passed rate: not a primary)."""
    return next((d.name for d in getattr(run, "definitions", ()) if d.primary), None)


def _differ_note(runs: list[Any]) -> str:
    """Why the board has no ranking: the runs' headline scores differ.

    "Primary" names only scores a run declared primary; a run's only score or its passed rate
    is said to be what it is (docs/comparing.md, Leaderboards).
    """
    kinds: dict[str, None] = {}
    for run in runs:
        primary, h = _declared_primary(run), run.headline
        if primary is not None:
            kinds[str(primary)] = None
        elif h.score is not None:
            kinds[f"{h.score} (its only score, not declared primary)"] = None
        else:
            kinds["passed rate (no primary score)"] = None
    what = "Primary" if all(_declared_primary(run) is not None for run in runs) else "Headline"
    return (
        f"No ranking: {what.lower()} scores differ ({', '.join(kinds)}), and one score's mean "
        "is no measure of another's. Give the runs one shared primary score to rank them."
    )


def _case_series(run: RunData, score: str | None) -> pd.Series:
    """Each case's value of the board's score (its epochs reduced, as a comparison pairs it;
    NaN: not counted); with no score (every headline the passed rate), the share of the
    case's epochs that passed."""
    if score is not None:
        values = case_values(run)
        values = values[values["score"] == score]
        return pd.Series(values["value"].to_numpy(dtype=float), index=values["case_id"].astype(str))
    cases = run.cases
    passed = (cases["outcome"] == "passed").astype(float)
    return passed.groupby(cases["case_id"].astype(str), observed=True, sort=False).mean()


def _ranks(runs: list[RunData], scores: list[str | None]) -> Ranks:
    """The board's rank intervals and tiers, on the cases every run with a value shares."""
    series = [_case_series(run, score) for run, score in zip(runs, scores, strict=True)]
    counted = [s.dropna() for s in series]
    valued = [k for k, s in enumerate(counted) if len(s)]
    shared = pd.Index([])
    if valued:
        shared = counted[valued[0]].index
        for k in valued[1:]:
            shared = shared.intersection(counted[k].index, sort=False)
    values = np.zeros((len(runs), len(shared)))
    means = np.full(len(runs), np.nan)
    for k in valued:
        values[k] = counted[k].reindex(shared).to_numpy(dtype=float)
        if len(shared):
            means[k] = float(values[k].mean())
    return rank_intervals(values, means)
