"""Plotly figures of a comparison (`comparison.plot`): the deltas per score, and the forest
plot of each (slice, score) row's delta with its 95 % CI.

Read off `comparison.summary` (docs/comparing.md): with `eb.compare(a, b, by=...)` it holds one
row per (slice, score), the slice columns first; without `by=` one row per score. The figures
are `_figure.py`'s export-safe `Figure` (plotly.js embedded, never a CDN).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from .._util._fmt import format_pp, format_pp_ci
from .._util._text import visible
from ._compare_html import comparison_names
from ._figure import (
    corner_note,
    error_bars,
    figure,
    figure_text,
    graph_objects,
    numbers_fallback,
)
from ._protocols import ComparisonLike
from ._style import NEUTRAL_COLOR, STATUS_COLORS

__all__ = ["ComparisonPlots", "deltas_figure", "forest_figure"]


def _row_label(row: Mapping[Any, Any], by: list[Any], label: str) -> str:
    where = " · ".join(f"{figure_text(c, 40)}={figure_text(row[c], 60)}" for c in by)
    return f"{where} · {figure_text(label)}" if where else figure_text(label)


def forest_figure(comp: ComparisonLike, score: str | None = None) -> Any:
    """One row per (slice, score): the delta B − A in pp with its 95 % CI, a line at zero.

    Rows whose delta is unknown (no paired case) are counted in a note, not drawn; rows with
    fewer than 10 paired values (`small`) are drawn as open markers.

    Args:
        comp: A comparison (`eb.compare(a, b, by=...)`).
        score: Only this score's rows (default: every compared score).

    Example:
        >>> fig = eb.compare(a, b, by="topic").plot.forest()  # doctest: +SKIP
    """
    name_a, name_b = comparison_names(comp)
    s: pd.DataFrame = comp.summary
    by = list(getattr(comp, "by", []))
    if score is not None:
        names = list(dict.fromkeys(s["score"].astype(str)))
        if score not in names:
            raise ValueError(f"forest(score={score!r}): not a compared score; scores are {names}")
        s = s[s["score"].astype(str).to_numpy() == score]
    known = s["delta"].notna().to_numpy()
    unknown = int((~known).sum())
    s = s[known]
    rows = s.to_dict("records")
    labels = [_row_label(r, by, str(r["label"])) for r in rows]
    delta, plus, minus, colors = delta_bars(s)
    small = s["small"].to_list() if "small" in s.columns else [False] * len(s)
    go = graph_objects()
    trace = go.Scatter(
        x=delta,
        # numeric rows, named by ticks: two rows with the same shown text stay two rows
        y=list(range(len(rows))),
        mode="markers",
        marker={
            "size": 11,
            "color": colors,
            "symbol": ["circle-open" if v else "circle" for v in small],
        },
        error_x=error_bars(plus, minus),
        customdata=[[t, int(r["n_paired"])] for t, r in zip(labels, rows, strict=True)],
        hovertemplate="%{customdata[0]}: %{x:+.1f} pp (n=%{customdata[1]})<extra></extra>",
        name="delta",
    )
    fig = figure(data=[trace])
    _zero_line(fig)
    notes = []
    if unknown:
        notes.append(f"{unknown} row{'' if unknown == 1 else 's'} without a paired case not drawn")
    if any(small):
        notes.append("open marker: fewer than 10 paired values")
    if notes:
        corner_note(fig, visible(" · ".join(notes)), y=1.06)
    sliced = f" by {', '.join(figure_text(c, 40) for c in by)}" if by else ""
    fig.update_layout(
        title=f"{figure_text(name_b, 200)} − {figure_text(name_a, 200)}{sliced} (pp, 95% CI)",
        xaxis_title="delta (pp)",
        yaxis={
            "tickvals": list(range(len(rows))),
            "ticktext": labels,
            "autorange": "reversed",  # the summary's first row on top
            "zeroline": False,
        },
        showlegend=False,
        height=max(220, 90 + 28 * len(rows)),
    )
    _numbers(fig, "forest", fig.layout.title.text, labels, s, " · ".join(notes))
    return fig


def _numbers(
    fig: Any, kind: str, title: str, labels: list[str], s: pd.DataFrame, note: str
) -> None:
    """The figure's rows as numbers (delta, CI, paired cases), for viewers without JavaScript."""
    rows = [
        [
            label,
            format_pp(r["delta"]),
            format_pp_ci(r["ci_low"], r["ci_high"]),
            str(int(r["n_paired"])) if "n_paired" in r and pd.notna(r["n_paired"]) else "",
        ]
        for label, r in zip(labels, s.to_dict("records"), strict=True)
    ]
    if not rows:
        note = " · ".join(x for x in ("no row has a paired case: nothing to draw", note) if x)
    numbers_fallback(fig, kind, title, ["row", "delta", "95% CI", "paired"], rows, note)


def _zero_line(fig: Any) -> None:
    """The reference line at no difference, under the markers."""
    fig.add_vline(x=0, line_dash="dot", line_color="rgba(127,127,127,0.8)", layer="below")


def delta_bars(s: pd.DataFrame) -> tuple[list[float], list[float], list[float], list[str]]:
    """A comparison summary's deltas in pp, its CI as error-bar lengths, and each row's colour
    (improved: the CI above 0; regressed: below 0; else grey), for the delta and forest plots."""
    delta = (s["delta"] * 100).to_list()
    plus = ((s["ci_high"] - s["delta"]) * 100).fillna(0).to_list()
    minus = ((s["delta"] - s["ci_low"]) * 100).fillna(0).to_list()
    colors = [
        STATUS_COLORS["improved"]
        if lo > 0
        else STATUS_COLORS["regressed"]
        if hi < 0
        else NEUTRAL_COLOR
        for lo, hi in zip(s["ci_low"].fillna(0), s["ci_high"].fillna(0), strict=True)
    ]
    return delta, plus, minus, colors


def deltas_figure(comp: ComparisonLike) -> Any:
    """Per row of the summary (a score, or with `by=` a (slice, score)): the paired delta
    (B − A) with its 95 % CI as error bars, each on a row of its own, labelled with its
    slice (with one label per score, a sliced comparison's rows once fell on one line)."""
    name_a, name_b = comparison_names(comp)
    s: pd.DataFrame = comp.summary
    s = s[s["delta"].notna()]
    by = list(getattr(comp, "by", []))
    go = graph_objects()
    delta, plus, minus, colors = delta_bars(s)
    labels = [_row_label(r, by, str(r["label"])) for r in s.to_dict("records")]
    trace = go.Scatter(
        x=delta,
        y=labels,
        mode="markers",
        marker={"size": 11, "color": colors},
        error_x=error_bars(plus, minus),
        hovertemplate="%{y}: %{x:+.1f} pp<extra></extra>",
        name="delta",
    )
    fig = figure(data=[trace])
    _zero_line(fig)
    fig.update_layout(
        title=f"{figure_text(name_b, 200)} − {figure_text(name_a, 200)} (pp, 95% CI)",
        xaxis_title="delta (pp)",
        showlegend=False,
        height=max(220, 80 + 50 * len(s)),
    )
    if not len(s):
        corner_note(fig, "no row has a paired case: nothing to draw", y=0.5)
    _numbers(fig, "deltas", fig.layout.title.text, labels, s, "")
    return fig


class ComparisonPlots:
    """`comparison.plot`: figures of a comparison (`deltas()`, `forest()`)."""

    def __init__(self, comp: ComparisonLike) -> None:
        self._comp = comp

    def deltas(self) -> Any:
        """Per-score delta with CI error bars."""
        return deltas_figure(self._comp)

    def forest(self, score: str | None = None) -> Any:
        """Forest plot: each (slice, score) row's delta with its CI (`compare(..., by=)`)."""
        return forest_figure(self._comp, score)

    def __repr__(self) -> str:
        return "<plots of a comparison: .deltas(), .forest(score=None)>"
