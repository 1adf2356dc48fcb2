"""Plotly figures of one run (`run.plot`): unscored reasons, score distribution, flakiness and
consistency over epochs. Built from `_figure.py`'s primitives (plotly imported there, on use).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._util._text import visible
from ._figure import PALETTE, corner_note, figure, figure_text, graph_objects, set_fallback
from ._flaky import CLASSES, flakiness, flakiness_html
from ._protocols import RunLike
from ._style import MUTED, STATUS_COLORS, esc, root

__all__ = ["RunPlots"]


def _labels(run: RunLike) -> dict[str, str]:
    return {d.name: figure_text(d.display_label()) for d in run.definitions}


def unscored_figure(run: RunLike) -> Any:
    """Stacked bars per score: scored records, then each unscored reason and error code.

    Example:
        >>> fig = run.plot.unscored()  # doctest: +SKIP
    """
    labels = _labels(run)
    names = [d.name for d in run.definitions]
    x = [labels[n] for n in names]
    summary = run.summary()
    scores = run.scores
    is_scored = pd.Series((scores["status"] == "scored").to_numpy(), index=scores.index)
    scored = (
        is_scored.groupby(scores["score"].astype(str).to_numpy(), sort=False)
        .sum()
        .reindex(names, fill_value=0)
        .astype(int)
    )
    go = graph_objects()
    traces = [go.Bar(name="scored", x=x, y=scored.to_list(), marker_color="rgba(127,127,127,0.35)")]
    table = run.unscored()
    keys = list(dict.fromkeys(zip(table["status"], table["reason"], strict=True)))
    for i, (status, reason) in enumerate(keys):
        part = table[(table["status"] == status) & (table["reason"] == reason)]
        shown = figure_text(f"{status}: {reason}", 200)  # a legend entry
        counts = part.groupby(part["score"].astype(str))["n"].sum().reindex(names, fill_value=0)
        color = PALETTE[i % len(PALETTE)]
        traces.append(
            go.Bar(
                name=shown,
                x=x,
                y=counts.to_list(),
                marker_color=color,
                hovertemplate="%{x}<br>" + shown + "<br>%{y} cases<extra></extra>",
            )
        )
    fig = figure(data=traces)
    n = int(summary["n_cases"].max()) if len(summary) else 0
    k = run.headline.epochs  # a record per sample: with epochs, bars count samples
    of = f"{n * k} samples" if k > 1 else f"{n} cases"
    fig.update_layout(
        barmode="stack",
        title=f"Unscored reasons and errors · {figure_text(run.name, 200)}",
        yaxis_title=f"records (of {of})",
        legend_title_text="status: reason",
    )
    # a grid line at a category's centre showed through the translucent "scored" bar
    fig.update_xaxes(showgrid=False)
    return fig


def distribution_figure(run: RunLike, score: str | None = None) -> Any:
    """Histogram of recorded values, one trace per score (or just `score`)."""
    labels = _labels(run)
    names = [d.name for d in run.definitions]
    if score is not None and score not in names:
        raise ValueError(f"unknown score {score!r}; scores are {names}")
    chosen = [score] if score is not None else names
    go = graph_objects()
    scores = run.scores
    traces = []
    for i, name in enumerate(chosen):
        rows = scores[(scores["score"].astype(str) == name) & scores["value"].notna()]
        traces.append(
            go.Histogram(
                name=labels[name],
                x=rows["value"].to_list(),
                # 0.05-wide bins centred on 0, 0.05, …, 1 (plotly's bins hold their start,
                # not their end): 0.0 and 1.0 each have a whole bin inside the axis
                xbins={"start": -0.025, "end": 1.025, "size": 0.05},
                opacity=0.75 if len(chosen) > 1 else 0.9,
                marker_color=PALETTE[(i + 3) % len(PALETTE)],
            )
        )
    fig = figure(data=traces)
    fig.update_layout(
        barmode="overlay",
        title=f"Score distribution · {figure_text(run.name, 200)}",
        # x = 0 is a bin's centre, not a reference: no zero line standing out of its bar
        xaxis={"title": "recorded value", "range": [-0.05, 1.05], "zeroline": False},
        yaxis_title="records",
    )
    return fig


def flakiness_figure(run: RunLike, score: str | None = None) -> Any:
    """Per-case pass rates over the epochs, stacked by class: always, sometimes, never right.

    The classes and rates are `_render/_flaky.py`'s; cases with no counted epoch are counted
    in the legend's note, not plotted. With one epoch the figure says that flakiness needs
    epochs ≥ 2 (no bars). The display bundle's HTML starts with the counts as plain HTML, for
    viewers that run no JavaScript.
    """
    f = flakiness(run, score)
    go = graph_objects()
    fig = figure()
    title = f"Flakiness · {figure_text(f.label, 200)} · {figure_text(run.name, 200)}"
    if f.epochs < 2:
        fig.add_annotation(
            text=figure_text(f.message, 400),
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
            showarrow=False,
        )
        fig.update_xaxes(visible=False)
        fig.update_yaxes(visible=False)
        fig.update_layout(title=title, height=200)
    else:
        for kind, status in CLASSES.items():
            if kind == "not_counted":
                continue
            rate = f.rate[f.kind == kind] * 100
            fig.add_trace(
                go.Histogram(
                    name=f"{kind} right ({f.count(kind)})",
                    x=rate.tolist(),
                    # 5-point bins centred on 0, 5, …, 100: 0 % and 100 % have their own
                    xbins={"start": -2.5, "end": 102.5, "size": 5},
                    marker_color=STATUS_COLORS[status],
                    hovertemplate=f"{kind} right<br>%{{x}}% of counted epochs: "
                    "%{y} cases<extra></extra>",
                )
            )
        apart = f.count("not_counted")
        corner_note(
            fig,
            f"not counted: {apart} case{'' if apart == 1 else 's'} · {f.n_cases} cases × "
            f"{f.epochs} epochs",
        )
        fig.update_layout(
            barmode="stack",
            title=title,
            # 0 % is a bin's centre, not a reference: no zero line standing out of its bar
            xaxis={
                "title": "pass rate over the counted epochs (%)",
                "range": [-5, 105],
                "zeroline": False,
            },
            yaxis_title="cases",
            legend_title_text=figure_text(f.score),
        )
    set_fallback(fig, flakiness_html(f), visible(f.message))
    return fig


def consistency_figure(run: RunLike, score: str | None = None) -> Any:
    """Histogram of each case's mean over its counted epochs (pass/fail: the share passed).

    The means are `_render/_flaky.py`'s pass rates (the counted values, as the reducers see
    them); cases with no counted epoch are counted in a note, not plotted. A run with one
    epoch per case has no consistency to show: that is an error saying how to get one.
    """
    f = flakiness(run, score)
    if f.epochs < 2:
        raise ValueError(
            f"run.plot.consistency() needs epochs ≥ 2: run {run.name!r} has 1 epoch per case. "
            "Run it with eb.run(..., epochs=5) to see how consistent each case is."
        )
    go = graph_objects()
    rate = f.rate[~np.isnan(f.rate)] * 100
    trace = go.Histogram(
        name=figure_text(f.label),
        x=rate.tolist(),
        # 5-point bins centred on 0, 5, …, 100: 0 % and 100 % (consistent cases) have their own
        xbins={"start": -2.5, "end": 102.5, "size": 5},
        marker_color=PALETTE[3],
        hovertemplate="%{x}%: %{y} cases<extra></extra>",
    )
    fig = figure(data=[trace])
    apart = f.count("not_counted")
    corner_note(
        fig,
        f"{rate.size} cases × {f.epochs} epochs · not counted: {apart} case"
        f"{'' if apart == 1 else 's'}",
    )
    fig.update_layout(
        title=(
            f"Consistency over epochs · {figure_text(f.label, 200)} · {figure_text(run.name, 200)}"
        ),
        xaxis={
            "title": "mean over the case's counted epochs (%; pass/fail: share passed)",
            "range": [-5, 105],
            "zeroline": False,  # 0 % is a bin's centre (as in flakiness)
        },
        yaxis_title="cases",
        showlegend=False,
    )
    set_fallback(fig, *_consistency_fallback(f.label, f.epochs, rate, apart))
    return fig


def _consistency_fallback(label: str, epochs: int, rate: np.ndarray, apart: int) -> tuple[str, str]:
    """(HTML, text) of the histogram's bars, for viewers that run no JavaScript."""
    centres, counts = np.unique(np.round(rate / 5) * 5, return_counts=True)  # the bars' centres
    bars = " · ".join(f"{c:g} %: {n}" for c, n in zip(centres, counts, strict=True))
    text = visible(
        f"Consistency over {epochs} epochs · {figure_text(label)}: cases by mean — "
        f"{bars or 'none'} · not counted: {apart}"
    )
    return root(
        f'<div style="{MUTED}; margin: 4px 0 8px 0">{esc(text, 4000)}</div>', "consistency"
    ), text


class RunPlots:
    """`run.plot`: figures of one run (`unscored()`, `distribution()`, `flakiness()`,
    `consistency()`)."""

    def __init__(self, run: RunLike) -> None:
        self._run = run

    def unscored(self) -> Any:
        """Stacked bars of unscored reasons and error codes per score."""
        return unscored_figure(self._run)

    def distribution(self, score: str | None = None) -> Any:
        """Histogram of recorded values per score."""
        return distribution_figure(self._run, score)

    def flakiness(self, score: str | None = None) -> Any:
        """How many cases are always / sometimes / never right over their epochs."""
        return flakiness_figure(self._run, score)

    def consistency(self, score: str | None = None) -> Any:
        """Histogram of each case's mean over its epochs (runs with epochs ≥ 2)."""
        return consistency_figure(self._run, score)

    def __repr__(self) -> str:
        return (
            f"<plots of run {self._run.name!r}: .unscored(), .distribution(score=None), "
            ".flakiness(score=None), .consistency(score=None)>"
        )
