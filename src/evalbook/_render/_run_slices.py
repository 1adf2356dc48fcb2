"""The run widget's Scores tab sliced: `run.summary(by=col, cluster=)` as one block per slice.

The columns offered are the run's input data columns (`run.data`) with few distinct values;
a slice with fewer than `SMALL` counted cases (clusters, with `cluster`) carries the same
"small slice" badge as a sliced comparison (docs/comparing.md).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._errors import ConfigurationError
from .._util._small import SMALL
from ._protocols import RunLike
from ._run_html import summary_html
from ._style import MUTED, badge, esc, is_missing

__all__ = ["MAX_SLICES", "scores_tab_html", "slice_columns"]

# A column with more distinct values than this is not offered: a block per value is no
# longer a readable view (and `summary(by=)` stays a filter-free call for what is offered).
MAX_SLICES = 50
_FIRST = 4 * MAX_SLICES  # rows whose distinct values are counted first


def slice_columns(data: pd.DataFrame) -> list[Any]:
    """The columns of `data` with at most `MAX_SLICES` distinct values (missing counts as one).

    A column whose values cannot be grouped (lists, dicts, a user's object whose `__hash__`
    or `__eq__` raises) is left out.
    """
    out = []
    for name in data.columns:
        column = data[name]
        try:
            # a first part with too many values already rules the column out, exactly, without
            # counting the values of a million rows (0.4 s a text column at 1,000,000)
            if column.iloc[:_FIRST].nunique(dropna=False) > MAX_SLICES:
                continue
            n = column.nunique(dropna=False)
        except Exception:  # unhashable values (`summary(by=)` refuses them too), or hostile ones
            continue
        if n <= MAX_SLICES:
            out.append(name)
    return out


def _title(key: pd.Series, by: Any) -> str:
    """`topic = math`, escaped; a missing value (its own slice) as `—`."""
    value = key[by]
    return f"{esc(by)} = {'—' if is_missing(value) else esc(value)}"


def _cluster_note(summary: pd.DataFrame, cluster: Any) -> str:
    if cluster is None or "n_clusters" not in summary.columns or not len(summary):
        return ""
    n = int(summary["n_clusters"].max())
    return (
        f'<div style="{MUTED}; font-size: 12px">CIs clustered by {esc(cluster)}: {n} clusters</div>'
    )


def scores_tab_html(run: RunLike, by: Any = None, cluster: Any = None) -> str:
    """The Scores tab: the summary table, or with `by` one titled block per slice value.

    `cluster` is passed on to `run.summary` (None: the run's own default). A column the
    summary refuses (e.g. one named like a summary column) shows its message instead.
    """
    try:
        summary = run.summary(by=by, cluster=cluster)
    except ConfigurationError as exc:
        return f'<div data-evalbook="slice-error" style="{MUTED}">{esc(str(exc), 2000)}</div>'
    # the column the intervals are clustered by: None is the run's own (`eb.run(cluster=)`,
    # which the summary uses only when the data has that column)
    default = run.options.get("cluster")
    own = default if default is not None and default in run.data.columns else None
    shown = None if cluster is False else own if cluster is None else cluster
    if by is None:
        return summary_html(summary) + _cluster_note(summary, shown)
    blocks = []
    what = "clusters" if shown is not None else "counted cases"
    one = "cluster" if shown is not None else "counted case"
    # rows are (slice, score), slices in order of first appearance; a missing value is a
    # slice of its own (as in `summary(by=)`)
    codes, _ = pd.factorize(summary[by], sort=False, use_na_sentinel=False)
    for code in range(int(codes.max()) + 1 if len(codes) else 0):
        rows = summary[codes == code]
        key = rows.iloc[0]
        # per score: a score unscored on some cases counts fewer; the slice is small when
        # one of its scores is (each row is flagged alone in the CLI and the comparison)
        counts = sorted({int(n) for n in rows["n_clusters"]})
        n = counts[0]
        flag = (
            " " + badge("small slice", "warning", title=f"fewer than {SMALL} {what}")
            if n < SMALL
            else ""
        )
        size = str(n) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
        unit = one if size == "1" else what
        count = f'<span style="{MUTED}; font-weight: 400">· {size} {unit}</span>'
        blocks.append(
            f'<div data-evalbook="slice" style="margin-bottom: 12px">'
            f'<div style="font-weight: 600; margin-bottom: 4px">{_title(key, by)} {count}{flag}'
            f"</div>{summary_html(rows.reset_index(drop=True))}</div>"
        )
    return "".join(blocks)
