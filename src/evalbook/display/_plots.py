"""Plotly figures of runs and comparisons (imported lazily: plotly is an optional extra).

The figures are `plotly.graph_objects.Figure`s (not FigureWidgets). Their display bundle
carries plotly's own mimetype (JupyterLab, VS Code) *and* a self-contained `text/html` version
that embeds plotly.js itself (about 3.5 MB; never a CDN: an exported notebook must show its
charts offline, and nothing is fetched from the network), so the chart survives
`nbconvert --to html` and any viewer without plotly's renderer extension.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np
import pandas as pd

from .._model._run_data import RunData
from .._util._text import safe_str, visible
from ._compare_html import comparison_names
from ._flaky import CLASSES, flakiness, flakiness_html
from ._style import MUTED, SHORT_LIMIT, STATUS_COLORS, esc, root, shorten

__all__ = ["ComparisonPlots", "RunPlots"]

# Lines the theme does not colour (error bars, zero lines): plotly.js draws an error bar #444
# by default, invisible on a dark theme; a mid grey reads on light and dark backgrounds
LINE_COLOR = "#8c8c8c"
_PALETTE = ["#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#4f46e5"]


def _go() -> Any:
    try:
        import plotly.graph_objects as go  # optional (the notebook extra): only for a plot
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'plots need plotly: pip install "evalbook[notebook]" (or pip install plotly)'
        ) from exc
    return go


@functools.cache
def _figure_class() -> Any:
    base: Any = _go().Figure

    class Figure(base):  # type: ignore[misc]
        """A `go.Figure` that renders in exported notebooks too (plotly mimetype + HTML)."""

        # (HTML, text) of what the figure says, for viewers that run no JavaScript: the HTML
        # goes before the chart's, the text replaces the placeholder text
        _fallback: tuple[str, str] | None = None

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kw: Any) -> Any:
            import plotly.io as pio  # optional, like plotly.graph_objects above

            spec = self.to_plotly_json()
            spec["config"] = {"displaylogo": False}
            html = pio.to_html(self, include_plotlyjs=True, full_html=False)
            text = f"<plotly Figure: {self.layout.title.text or 'untitled'}>"
            if self._fallback is not None:
                html, text = self._fallback[0] + html, self._fallback[1]
            return {
                "application/vnd.plotly.v1+json": spec,
                "text/html": html,
                "text/plain": text,
            }

        def _ipython_display_(self) -> None:
            # plotly's own hook shows only the default renderer's output; show the full bundle.
            from IPython import display as ipython_display  # optional: only inside IPython

            display: Any = ipython_display.display
            display(self._repr_mimebundle_(), raw=True)

    Figure.__module__ = "evalbook.display"
    Figure.__qualname__ = "Figure"
    return Figure


def _figure(**kwargs: Any) -> Any:
    """A `go.Figure` whose display bundle also holds export-safe HTML."""
    fig = _figure_class()(**kwargs)
    fig.update_layout(
        template="plotly_white",
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=360,
        font={"color": "#808080"},
    )
    # the zero line under the traces: a bar at 0 (flakiness, distribution) is not struck through
    axes = {
        "gridcolor": "rgba(127,127,127,0.25)",
        "zerolinecolor": "rgba(127,127,127,0.5)",
        "zerolinelayer": "below traces",
    }
    fig.update_xaxes(**axes)
    fig.update_yaxes(**axes)
    return fig


def _text(x: object, limit: int = SHORT_LIMIT) -> str:
    """User text in a figure (a label, a reason, a run's name): shortened, controls escaped."""
    return visible(shorten(safe_str(x), limit))


def _labels(run: RunData) -> dict[str, str]:
    return {d.name: _text(d.display_label()) for d in run.definitions}


def unscored_figure(run: RunData) -> Any:
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
    go = _go()
    traces = [go.Bar(name="scored", x=x, y=scored.to_list(), marker_color="rgba(127,127,127,0.35)")]
    table = run.unscored()
    keys = list(dict.fromkeys(zip(table["status"], table["reason"], strict=True)))
    for i, (status, reason) in enumerate(keys):
        part = table[(table["status"] == status) & (table["reason"] == reason)]
        shown = _text(f"{status}: {reason}", 200)  # a legend entry
        counts = part.groupby(part["score"].astype(str))["n"].sum().reindex(names, fill_value=0)
        color = _PALETTE[i % len(_PALETTE)]
        traces.append(
            go.Bar(
                name=shown,
                x=x,
                y=counts.to_list(),
                marker_color=color,
                hovertemplate="%{x}<br>" + shown + "<br>%{y} cases<extra></extra>",
            )
        )
    fig = _figure(data=traces)
    n = int(summary["n_cases"].max()) if len(summary) else 0
    k = run.headline.epochs  # a record per sample: with epochs, bars count samples
    of = f"{n * k} samples" if k > 1 else f"{n} cases"
    fig.update_layout(
        barmode="stack",
        title=f"Unscored reasons and errors · {_text(run.name, 200)}",
        yaxis_title=f"records (of {of})",
        legend_title_text="status: reason",
    )
    # a grid line at a category's centre showed through the translucent "scored" bar
    fig.update_xaxes(showgrid=False)
    return fig


def distribution_figure(run: RunData, score: str | None = None) -> Any:
    """Histogram of recorded values, one trace per score (or just `score`)."""
    labels = _labels(run)
    names = [d.name for d in run.definitions]
    if score is not None and score not in names:
        raise ValueError(f"unknown score {score!r}; scores are {names}")
    chosen = [score] if score is not None else names
    go = _go()
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
                marker_color=_PALETTE[(i + 3) % len(_PALETTE)],
            )
        )
    fig = _figure(data=traces)
    fig.update_layout(
        barmode="overlay",
        title=f"Score distribution · {_text(run.name, 200)}",
        # x = 0 is a bin's centre, not a reference: no zero line standing out of its bar
        xaxis={"title": "recorded value", "range": [-0.05, 1.05], "zeroline": False},
        yaxis_title="records",
    )
    return fig


def flakiness_figure(run: RunData, score: str | None = None) -> Any:
    """Per-case pass rates over the epochs, stacked by class: always, sometimes, never right.

    The classes and rates are `display/_flaky.py`'s; cases with no counted epoch are counted
    in the legend's note, not plotted. With one epoch the figure says that flakiness needs
    epochs ≥ 2 (no bars). The display bundle's HTML starts with the counts as plain HTML, for
    viewers that run no JavaScript.
    """
    f = flakiness(run, score)
    go = _go()
    fig = _figure()
    title = f"Flakiness · {_text(f.label, 200)} · {_text(run.name, 200)}"
    if f.epochs < 2:
        fig.add_annotation(
            text=_text(f.message, 400),
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
        fig.add_annotation(
            text=f"not counted: {apart} case{'' if apart == 1 else 's'} · {f.n_cases} cases × "
            f"{f.epochs} epochs",
            xref="paper",
            yref="paper",
            x=1,
            y=1.08,
            showarrow=False,
            xanchor="right",
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
            legend_title_text=_text(f.score),
        )
    fig._fallback = (flakiness_html(f), visible(f.message))
    return fig


def consistency_figure(run: RunData, score: str | None = None) -> Any:
    """Histogram of each case's mean over its counted epochs (pass/fail: the share passed).

    The means are `display/_flaky.py`'s pass rates (the counted values, as the reducers see
    them); cases with no counted epoch are counted in a note, not plotted. A run with one
    epoch per case has no consistency to show: that is an error saying how to get one.
    """
    f = flakiness(run, score)
    if f.epochs < 2:
        raise ValueError(
            f"run.plot.consistency() needs epochs ≥ 2: run {run.name!r} has 1 epoch per case. "
            "Run it with eb.run(..., epochs=5) to see how consistent each case is."
        )
    go = _go()
    rate = f.rate[~np.isnan(f.rate)] * 100
    trace = go.Histogram(
        name=_text(f.label),
        x=rate.tolist(),
        # 5-point bins centred on 0, 5, …, 100: 0 % and 100 % (consistent cases) have their own
        xbins={"start": -2.5, "end": 102.5, "size": 5},
        marker_color=_PALETTE[3],
        hovertemplate="%{x}%: %{y} cases<extra></extra>",
    )
    fig = _figure(data=[trace])
    apart = f.count("not_counted")
    fig.add_annotation(
        text=f"{rate.size} cases × {f.epochs} epochs · not counted: {apart} case"
        f"{'' if apart == 1 else 's'}",
        xref="paper",
        yref="paper",
        x=1,
        y=1.08,
        showarrow=False,
        xanchor="right",
    )
    fig.update_layout(
        title=f"Consistency over epochs · {_text(f.label, 200)} · {_text(run.name, 200)}",
        xaxis={
            "title": "mean over the case's counted epochs (%; pass/fail: share passed)",
            "range": [-5, 105],
            "zeroline": False,  # 0 % is a bin's centre (as in flakiness)
        },
        yaxis_title="cases",
        showlegend=False,
    )
    fig._fallback = _consistency_fallback(f.label, f.epochs, rate, apart)
    return fig


def _consistency_fallback(label: str, epochs: int, rate: np.ndarray, apart: int) -> tuple[str, str]:
    """(HTML, text) of the histogram's bars, for viewers that run no JavaScript."""
    centres, counts = np.unique(np.round(rate / 5) * 5, return_counts=True)  # the bars' centres
    bars = " · ".join(f"{c:g} %: {n}" for c, n in zip(centres, counts, strict=True))
    text = visible(
        f"Consistency over {epochs} epochs · {_text(label)}: cases by mean — {bars or 'none'} · "
        f"not counted: {apart}"
    )
    return root(
        f'<div style="{MUTED}; margin: 4px 0 8px 0">{esc(text, 4000)}</div>', "consistency"
    ), text


def delta_bars(s: pd.DataFrame) -> tuple[list[float], list[float], list[float], list[str]]:
    """A comparison summary's deltas in pp, its CI as error-bar lengths, and each row's colour
    (improved: the CI above 0; regressed: below 0; else grey), for the delta and forest plots."""
    delta = (s["delta"] * 100).to_list()
    plus = ((s["ci_high"] - s["delta"]) * 100).fillna(0).to_list()
    minus = ((s["delta"] - s["ci_low"]) * 100).fillna(0).to_list()
    colors = [
        STATUS_COLORS["improved"] if lo > 0 else STATUS_COLORS["regressed"] if hi < 0 else "#6b7280"
        for lo, hi in zip(s["ci_low"].fillna(0), s["ci_high"].fillna(0), strict=True)
    ]
    return delta, plus, minus, colors


def deltas_figure(comp: Any) -> Any:
    """Per score: the paired delta (B − A) with its 95 % CI as error bars."""
    name_a, name_b = comparison_names(comp)
    s: pd.DataFrame = comp.summary
    s = s[s["delta"].notna()]
    go = _go()
    delta, plus, minus, colors = delta_bars(s)
    trace = go.Scatter(
        x=delta,
        y=[_text(v) for v in s["label"]],
        mode="markers",
        marker={"size": 11, "color": colors},
        error_x={
            "type": "data",
            "symmetric": False,
            "array": plus,
            "arrayminus": minus,
            "color": LINE_COLOR,
        },
        hovertemplate="%{y}: %{x:+.1f} pp<extra></extra>",
        name="delta",
    )
    fig = _figure(data=[trace])
    fig.add_vline(x=0, line_dash="dot", line_color="rgba(127,127,127,0.8)", layer="below")
    fig.update_layout(
        title=f"{_text(name_b, 200)} − {_text(name_a, 200)} (pp, 95% CI)",
        xaxis_title="delta (pp)",
        showlegend=False,
        height=max(220, 80 + 50 * len(s)),
    )
    return fig


class RunPlots:
    """`run.plot`: figures of one run (`unscored()`, `distribution()`, `flakiness()`,
    `consistency()`)."""

    def __init__(self, run: RunData) -> None:
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


class ComparisonPlots:
    """`comparison.plot`: figures of a comparison (`deltas()`, `forest()`)."""

    def __init__(self, comp: Any) -> None:
        self._comp = comp

    def deltas(self) -> Any:
        """Per-score delta with CI error bars."""
        return deltas_figure(self._comp)

    def forest(self, score: str | None = None) -> Any:
        """Forest plot: each (slice, score) row's delta with its CI (`compare(..., by=)`)."""
        from ._plots_compare import forest_figure  # it imports this module: loaded on use

        return forest_figure(self._comp, score)

    def __repr__(self) -> str:
        return "<plots of a comparison: .deltas(), .forest(score=None)>"
