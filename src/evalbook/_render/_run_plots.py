"""Plotly figures of one run (`run.plot`): unscored reasons, score distribution, flakiness and
consistency over epochs. Built from `_figure.py`'s primitives (plotly imported there, on use).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._util._text import visible
from ._figure import (
    PALETTE,
    corner_note,
    figure,
    figure_text,
    graph_objects,
    numbers_fallback,
    set_fallback,
)
from ._flaky import CLASSES, flakiness, flakiness_html
from ._protocols import RunLike
from ._style import MUTED, NEUTRAL_COLOR, STATUS_COLORS, esc, root

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
    rows: list[list[str]] = [["scored", *(str(v) for v in scored.to_list())]]
    seen: dict[str, int] = {}
    for status, reason in keys:
        part = table[(table["status"] == status) & (table["reason"] == reason)]
        shown = figure_text(f"{status}: {reason}", 200)  # a legend entry
        counts = part.groupby(part["score"].astype(str))["n"].sum().reindex(names, fill_value=0)
        # one palette: errors red, unscored amber (as the cards); reasons of one status apart
        # by their pattern
        i = seen[status] = seen.get(status, -1) + 1
        traces.append(
            go.Bar(
                name=shown,
                x=x,
                y=counts.to_list(),
                marker_color=STATUS_COLORS.get(status, NEUTRAL_COLOR),
                marker_pattern_shape=_PATTERNS[i % len(_PATTERNS)],
                hovertemplate="%{x}<br>" + shown + "<br>%{y} cases<extra></extra>",
            )
        )
        rows.append([figure_text(f"{status}: {reason}", 200), *(str(int(v)) for v in counts)])
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
    note = "" if keys else "every record is scored: no unscored reason, no error"
    numbers_fallback(
        fig,
        "unscored",
        f"Unscored reasons and errors · {figure_text(run.name, 200)} (records of {of})",
        ["", *x],
        rows,
        note,
        unit="series",
    )
    return fig


# bar patterns that tell apart the reasons of one status (one colour each status)
_PATTERNS = ["", "/", "x", ".", "\\", "+", "-", "|"]


def distribution_figure(run: RunLike, score: str | None = None) -> Any:
    """Histogram of recorded values: one panel per score (or just `score`), so that bars at
    the same value (0 and 1 of pass/fail scores) never hide behind each other. A score with no
    recorded value says so in its panel and in the numbers."""
    labels = _labels(run)
    names = [d.name for d in run.definitions]
    if score is not None and score not in names:
        raise ValueError(f"unknown score {score!r}; scores are {names}")
    chosen = [score] if score is not None else names
    go = graph_objects()
    scores = run.scores
    fig = figure()
    panels = max(len(chosen), 1)
    fig.set_subplots(
        rows=panels,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=min(0.12, 0.3 / panels),
        subplot_titles=[labels[n] for n in chosen] if len(chosen) > 1 else None,
    )
    rows: list[list[str]] = []
    empty: list[str] = []
    for i, name in enumerate(chosen):
        values = scores.loc[
            (scores["score"].astype(str) == name) & scores["value"].notna(), "value"
        ].to_numpy(dtype=float)
        fig.add_trace(
            go.Histogram(
                name=labels[name],
                x=values.tolist(),
                # 0.05-wide bins centred on 0, 0.05, …, 1 (plotly's bins hold their start,
                # not their end): 0.0 and 1.0 each have a whole bin inside the axis
                xbins={"start": -0.025, "end": 1.025, "size": 0.05},
                marker_color=PALETTE[(i + 3) % len(PALETTE)],
                showlegend=False,
            ),
            row=i + 1,
            col=1,
        )
        fig.update_yaxes(title_text="records", row=i + 1, col=1)
        if values.size == 0:
            empty.append(labels[name])
            fig.add_annotation(
                text="no recorded values",
                xref="x domain" if i == 0 else f"x{i + 1} domain",
                yref="y domain" if i == 0 else f"y{i + 1} domain",
                x=0.5,
                y=0.5,
                showarrow=False,
            )
            rows.append([labels[name], "no recorded values"])
            continue
        centres, counts = np.unique(np.round(values / 0.05) * 0.05, return_counts=True)
        bars = " · ".join(f"{c:.2f}: {n}" for c, n in zip(centres, counts, strict=True))
        rows.append([labels[name], bars])
    if not chosen:
        fig.add_annotation(
            text="no scores: this run has no scorer",
            xref="paper",
            yref="paper",
            x=0.5,
            y=0.5,
            showarrow=False,
        )
    fig.update_layout(
        title=f"Score distribution · {figure_text(run.name, 200)}",
        height=max(360, 110 + 200 * panels),
    )
    # x = 0 is a bin's centre, not a reference: no zero line standing out of its bar
    fig.update_xaxes(range=[-0.05, 1.05], zeroline=False)
    fig.update_xaxes(title_text="recorded value", row=panels, col=1)
    note = f"no recorded values: {', '.join(empty)}" if empty else ""
    if not chosen:
        note = "no scores: this run has no scorer"
    numbers_fallback(
        fig,
        "distribution",
        f"Score distribution · {figure_text(run.name, 200)} (records by value, 0.05 bins)",
        ["score", "value: records"],
        rows,
        note,
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
