"""`eb.leaderboard(runs)`: runs ranked by their headline score, completion beside it.

The board is a plain DataFrame holding the runs' names exactly; only its notebook display
escapes them (`visible`): pandas' HTML escapes markup but shows controls and bidi characters
raw, and it has no per-frame formatter, so the board carries its own `_repr_html_` (an
instance attribute: pandas' table, drawn from a copy whose text is escaped).
"""

from __future__ import annotations

import math
import types
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._util._text import visible

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["LEADERBOARD_COLUMNS", "leaderboard"]

LEADERBOARD_COLUMNS = [
    "rank",
    "name",
    "score",
    "label",
    "mean",
    "ci_low",
    "ci_high",
    "completion",
    "passed_rate",
]


def leaderboard(runs: Iterable[RunData] | Mapping[str, RunData]) -> pd.DataFrame:
    """Rank runs by their primary score, best first, with completion in its own column.

    Each row shows the run's headline score (`score, label, mean, ci_low, ci_high`), its
    `completion` and `passed_rate`. When the runs' primary scores differ, the rows rank by
    passed rate instead and `board.attrs["note"]` says so. Ties share a rank; runs without a
    value rank last. In a notebook the board shows its text escaped (controls and bidi
    characters as backslash escapes, markup as text); its values are the names as given
    (a frame derived from it, e.g. `board.head()`, is displayed by pandas as it is).

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
    board = pd.DataFrame.from_records(records, columns=LEADERBOARD_COLUMNS[1:])
    headlines = list(dict.fromkeys(board["score"].tolist()))
    key = "mean"
    if len(headlines) > 1:
        key = "passed_rate"
        shown = ", ".join("none" if s is None else str(s) for s in headlines)
        board.attrs["note"] = f"Primary scores differ ({shown}), so the rows rank by passed cases."
    ranks = board[key].rank(method="min", ascending=False, na_option="bottom")
    board.insert(0, "rank", ranks.astype(np.int64))
    order = np.lexsort((np.arange(len(board)), board["rank"].to_numpy()))
    out = board.iloc[order].reset_index(drop=True)
    out.attrs = dict(board.attrs)
    # an instance attribute, never a column: what IPython's display calls for this frame
    object.__setattr__(out, "_repr_html_", types.MethodType(_escaped_html, out))
    return out


def _shown(value: Any) -> Any:
    return visible(value) if isinstance(value, str) else value


def _escaped_html(board: pd.DataFrame) -> str | None:
    """pandas' own notebook table of `board`, its text shown through `visible`."""
    shown = board.copy()  # the board itself keeps the exact text
    for column in shown.columns:
        if not pd.api.types.is_numeric_dtype(shown[column]):
            shown[column] = shown[column].map(_shown)
    # the class's method (the stubs do not declare it), not the board's own attribute
    html: str | None = pd.DataFrame._repr_html_(shown)  # type: ignore[attr-defined]
    return html
