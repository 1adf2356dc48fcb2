"""Cost against score across runs, with the Pareto front (the runs no other run beats on both).

x is each run's cost per sample (`run.usage_summary()["cost_per_case"]`, docs/cost.md), y its
headline score's mean with the 95 % CI as error bars (what `eb.leaderboard` ranks by). A run is
placed only when the cost of every one of its samples is known: a run with no known cost or a
partly known one is named in the note, never drawn at $0 nor at the mean of the samples that
happen to be priced. The figure is `_figure.py`'s export-safe `Figure` (plotly.js embedded).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .._util._fmt import format_pct
from .._util._text import visible
from ._figure import corner_note, error_bars, figure, figure_text, graph_objects, numbers_fallback
from ._protocols import RunLike
from ._style import NEUTRAL_COLOR, STATUS_COLORS

__all__ = ["pareto_figure"]


@dataclass(frozen=True)
class _Point:
    name: str
    cost: float
    mean: float
    low: float
    high: float


def _front(points: list[_Point]) -> list[_Point]:
    """The points no other point matches or beats on both (cost lower, mean higher), by cost."""
    front = [
        p
        for p in points
        if not any(
            q.cost <= p.cost and q.mean >= p.mean and (q.cost < p.cost or q.mean > p.mean)
            for q in points
        )
    ]
    return sorted(front, key=lambda p: (p.cost, -p.mean))


def _items(runs: Iterable[RunLike] | Mapping[str, RunLike]) -> list[tuple[str, RunLike]]:
    if isinstance(runs, Mapping):
        items = [(str(k), r) for k, r in runs.items()]
    else:
        items = [(str(getattr(r, "name", "")), r) for r in runs]
    for _, run in items:
        if not hasattr(run, "headline") or not hasattr(run, "usage_summary"):
            raise ValueError(
                f"pareto takes runs (from eb.run(...) or eb.load_run(path)), not "
                f"{type(run).__name__}"
            )
    return items


def pareto_figure(runs: Iterable[RunLike] | Mapping[str, RunLike]) -> Any:
    """Scatter of cost per sample against the headline score, the Pareto front drawn through it.

    Args:
        runs: Runs, or a `{name: run}` mapping whose keys name the points (as for
            `eb.leaderboard`). Their headline scores must be the same score.

    Raises:
        ValueError: When the runs' headline scores differ (the y axis would mix two scores).

    Example:
        >>> fig = pareto_figure([run_small, run_large])  # doctest: +SKIP
    """
    items = _items(runs)
    scores = {run.headline.score for _, run in items}
    if len(scores) > 1:
        which = "; ".join(
            f"{figure_text(name, 80)}: {run.headline.score or 'none (passed rate)'}"
            for name, run in items
        )
        raise ValueError(
            f"pareto needs one headline score across the runs, and they differ ({which}); "
            "declare the same primary score in every run (eb.define_score(name, primary=True))"
        )
    points: list[_Point] = []
    unplaced: list[str] = []
    for name, run in items:
        h = run.headline
        usage = run.usage_summary().iloc[0]
        known, n = int(usage["n_cost_known"]), h.n_samples
        cost = float(usage["cost_per_case"])
        shown = repr(figure_text(name, 80))
        if h.value is None or math.isnan(float(h.value)):
            unplaced.append(f"{shown} (no score value)")
        elif known < n or not math.isfinite(cost):
            unplaced.append(f"{shown} (cost known for {known} of {n} samples)")
        else:
            low, high = h.ci if h.ci is not None else (math.nan, math.nan)
            points.append(_Point(name, cost, float(h.value), float(low), float(high)))
    front = _front(points)
    label = figure_text(items[0][1].headline.label) if items else "score"
    go = graph_objects()
    on_front = {id(p) for p in front}
    colors = [STATUS_COLORS["improved"] if id(p) in on_front else NEUTRAL_COLOR for p in points]
    hover = [
        f"{figure_text(p.name, 200)}<br>${p.cost:.4g} per sample<br>{label} {format_pct(p.mean)}"
        for p in points
    ]
    runs_trace = go.Scatter(
        name="runs",
        x=[p.cost for p in points],
        y=[p.mean * 100 for p in points],
        mode="markers+text",
        text=[figure_text(p.name, 40) for p in points],
        textposition="top center",
        cliponaxis=False,  # a name over a point at the top of the axis is drawn whole
        marker={"size": 11, "color": colors},
        error_y=error_bars(
            [_gap(p.high, p.mean) for p in points], [_gap(p.mean, p.low) for p in points]
        ),
        hovertext=hover,
        hoverinfo="text",
    )
    front_trace = go.Scatter(
        name="Pareto front",
        x=[p.cost for p in front],
        y=[p.mean * 100 for p in front],
        mode="lines",
        # the staircase: from a front run, the next costs more and scores higher
        line={"shape": "hv", "dash": "dot", "color": STATUS_COLORS["improved"]},
        hoverinfo="skip",
    )
    fig = figure(data=[front_trace, runs_trace])
    note = "not placed: " + ", ".join(unplaced) if unplaced else ""
    if note:
        fig.add_annotation(
            text=visible(note),
            xref="paper",
            yref="paper",
            x=0,
            y=-0.22,
            showarrow=False,
            xanchor="left",
        )
    fig.update_layout(
        title=f"Cost against {label} · Pareto front",
        xaxis={"title": "cost per sample (USD)", "tickprefix": "$", "rangemode": "tozero"},
        yaxis={"title": f"{label} (%, 95% CI)"},
        showlegend=False,
        margin={"l": 60, "r": 20, "t": 50, "b": 90},
    )
    names = ", ".join(repr(figure_text(p.name, 80)) for p in front) or "none"
    if not points:
        corner_note(fig, "no run to place: none has a known cost for every sample", y=0.5)
    numbers_fallback(
        fig,
        "pareto",
        f"Pareto front (cost per sample against {label}): {names}",
        ["run", "cost per sample", label, "95% CI", "on the front"],
        [
            [
                figure_text(p.name, 80),
                f"${p.cost:.4g}",
                format_pct(p.mean),
                f"[{format_pct(p.low)}, {format_pct(p.high)}]" if math.isfinite(p.low) else "",
                "yes" if id(p) in on_front else "",
            ]
            for p in points
        ],
        note,
    )
    return fig


def _gap(x: float, y: float) -> float:
    """An error bar's length in pp (0 when the CI is unknown: the bar is not drawn)."""
    d = (x - y) * 100
    return d if math.isfinite(d) else 0.0
