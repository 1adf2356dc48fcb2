"""The primitives every figure is built from: plotly (imported here only), the export-safe
`Figure`, its layout, user text in a figure, and the colours lines and traces take.

The figures are `plotly.graph_objects.Figure`s (not FigureWidgets). Their display bundle
carries plotly's own mimetype (JupyterLab, VS Code) *and* a self-contained `text/html` version
that embeds plotly.js itself (about 3.5 MB; never a CDN: an exported notebook must show its
charts offline, and nothing is fetched from the network), so the chart survives
`nbconvert --to html` and any viewer without plotly's renderer extension. Run figures
(`_run_plots.py`), comparison figures (`_compare_plots.py`) and the cost-vs-score scatter
(`_pareto_plot.py`) import these names; none of them imports another.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .._util._text import safe_str, visible
from ._style import SHORT_LIMIT, shorten

__all__ = [
    "LINE_COLOR",
    "PALETTE",
    "corner_note",
    "error_bars",
    "fallback_html",
    "fallback_text",
    "figure",
    "figure_text",
    "graph_objects",
    "plotly_js",
    "plotly_modules",
    "set_fallback",
]

# Lines the theme does not colour (error bars, zero lines): plotly.js draws an error bar #444
# by default, invisible on a dark theme; a mid grey reads on light and dark backgrounds
LINE_COLOR = "#8c8c8c"
PALETTE = ["#d97706", "#dc2626", "#7c3aed", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#4f46e5"]


def plotly_modules() -> tuple[Any, Any]:
    """(plotly.graph_objects, plotly.io): the one import of plotly, an optional dependency
    (the notebook extra), done when a figure is built or shown."""
    try:
        import plotly.graph_objects as go
        import plotly.io as pio
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'plots need plotly: pip install "evalbook[notebook]" (or pip install plotly)'
        ) from exc
    return go, pio


def plotly_js() -> str:
    """plotly.js itself (about 4.8 MB of JavaScript), for a page that embeds it once
    (`_report_html.py`); plotly's own module for it, imported here as `plotly_modules` does."""
    plotly_modules()  # the advice of a missing plotly
    # optional dependency (the notebook extra), as in plotly_modules
    from plotly.offline import get_plotlyjs

    js: str = get_plotlyjs()
    return js


def graph_objects() -> Any:
    """`plotly.graph_objects`, for the traces of a figure."""
    return plotly_modules()[0]


@functools.cache
def _figure_class() -> Any:
    base: Any = graph_objects().Figure

    class Figure(base):  # type: ignore[misc]
        """A `go.Figure` that renders in exported notebooks too (plotly mimetype + HTML)."""

        # (HTML, text) of what the figure says, for viewers that run no JavaScript: the HTML
        # goes before the chart's, the text replaces the placeholder text
        _fallback: tuple[str, str] | None = None

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kw: Any) -> Any:
            pio = plotly_modules()[1]
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


def set_fallback(fig: Any, html: str, text: str) -> None:
    """Give `fig` (from `figure()`) what it says for viewers that run no JavaScript: `html`
    goes before the chart's HTML, `text` is its text/plain form."""
    fig._fallback = (html, text)


def fallback_html(fig: Any) -> str | None:
    """The HTML `set_fallback` gave `fig` (None: it has none)."""
    fallback: tuple[str, str] | None = getattr(fig, "_fallback", None)
    return None if fallback is None else fallback[0]


def fallback_text(fig: Any) -> str | None:
    """The text/plain form `set_fallback` gave `fig` (None: it has none)."""
    fallback: tuple[str, str] | None = fig._fallback
    return None if fallback is None else fallback[1]


def figure(**kwargs: Any) -> Any:
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


def figure_text(x: object, limit: int = SHORT_LIMIT) -> str:
    """User text in a figure (a label, a reason, a run's name): shortened, controls escaped."""
    return visible(shorten(safe_str(x), limit))


def error_bars(plus: Sequence[float], minus: Sequence[float]) -> dict[str, Any]:
    """Error bars (`error_x=` or `error_y=`) reaching `plus` above a point and `minus` below it,
    in the line colour both themes read."""
    return {
        "type": "data",
        "symmetric": False,
        "array": list(plus),
        "arrayminus": list(minus),
        "color": LINE_COLOR,
    }


def corner_note(fig: Any, text: str, y: float = 1.08) -> None:
    """A note over the plot's top right corner: what the figure leaves out, or how to read it."""
    fig.add_annotation(
        text=text, xref="paper", yref="paper", x=1, y=y, showarrow=False, xanchor="right"
    )
