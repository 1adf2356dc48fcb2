"""The primitives every figure is built from: plotly (imported here only), the export-safe
`Figure`, its layout, its numbers for viewers without JavaScript, user text in a figure, and
the colours lines and traces take.

The figures are `plotly.graph_objects.Figure`s (not FigureWidgets). Their display bundle
carries plotly's own mimetype (JupyterLab, VS Code) *and* a `text/html` version for
`nbconvert --to html`, GitHub and any viewer without plotly's renderer extension:

- the numbers the chart draws first (`numbers_fallback`, `set_fallback`), which is what a
  viewer without JavaScript shows; the chart's script hides them once it has drawn;
- plotly.js (about 4.8 MB, never a CDN: an export shows its charts offline) in the first
  figure a kernel shows only (`embed_plotly_js`), and again when that cell re-runs; every
  other figure's script waits for it, and leaves its numbers shown when it never comes (that
  output was cleared). Outside a kernel each figure's HTML carries plotly.js.

Run figures (`_run_plots.py`), comparison figures (`_compare_plots.py`) and the cost-vs-score
scatter (`_pareto_plot.py`) import these names; none of them imports another.
"""

from __future__ import annotations

import functools
import hashlib
import json
import uuid
from collections.abc import Sequence
from typing import Any

from .._util._text import safe_str, visible
from ._style import MUTED, SHORT_LIMIT, esc, root, shorten

__all__ = [
    "LINE_COLOR",
    "MAX_FALLBACK_ROWS",
    "PALETTE",
    "PLOT_TEXT_COLOR",
    "corner_note",
    "embed_plotly_js",
    "error_bars",
    "fallback_html",
    "fallback_text",
    "figure",
    "figure_html",
    "figure_text",
    "graph_objects",
    "numbers_fallback",
    "plotly_js",
    "plotly_modules",
    "set_fallback",
]

# Lines the theme does not colour (error bars, zero lines): plotly.js draws an error bar #444
# by default, invisible on a dark theme; a mid grey reads on light and dark backgrounds
LINE_COLOR = "#8c8c8c"
PLOT_TEXT_COLOR = "#7e7e7e"
# trace colours: each has 3:1 contrast (a graphic, WCAG 1.4.11) on white, #111111 and #1e1e1e
PALETTE = ["#d97706", "#dc2626", "#8b5cf6", "#0891b2", "#db2777", "#65a30d", "#ea580c", "#6366f1"]


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


# Where a kernel keeps which output carries plotly.js: (cell id, execution count) of the cell
# that showed it (an attribute of the kernel's shell: a restarted kernel starts without it)
_EMBEDDED_FLAG = "_evalbook_plotly_js_cell"
# How long a figure's script waits for plotly.js (another output's) before it leaves the
# numbers shown: 30 s in 50 ms steps
_WAIT_STEPS = 600


def _kernel_shell() -> Any | None:
    """The shell of the Jupyter kernel this runs in (None: not in a kernel, e.g. a script,
    a terminal IPython or a test): only a kernel's outputs share one page."""
    try:
        from IPython import get_ipython  # optional: only inside IPython
    except ImportError:  # pragma: no cover - depends on the environment
        return None
    shell = get_ipython()
    return shell if getattr(shell, "kernel", None) is not None else None


def embed_plotly_js() -> bool:
    """Whether the next figure's HTML carries plotly.js: the first figure a kernel shows does
    (about 4.8 MB, once per notebook), every later one draws with it; outside a kernel every
    figure's HTML is a page of its own and carries it.

    When the cell whose output carries it runs again (its outputs are replaced), its first
    figure carries plotly.js again: a notebook saved after re-running that cell still has it.
    """
    shell = _kernel_shell()
    if shell is None:
        return True
    here = (_cell_id(shell), getattr(shell, "execution_count", None))
    there: tuple[Any, Any] | None = getattr(shell, _EMBEDDED_FLAG, None)
    if there is not None and (here[0] is None or here[0] != there[0] or here == there):
        return False
    setattr(shell, _EMBEDDED_FLAG, here)
    return True


def _cell_id(shell: Any) -> str | None:
    """Which cell is being run: the id JupyterLab sends, else (nbclient, VS Code, older
    frontends send none) its code (None: unknown). Two cells with the same code count as one:
    the later then carries plotly.js too, which costs size, never a chart."""
    try:
        parent = shell.kernel.get_parent()
    except Exception:  # an older or a foreign kernel: no parent message, plotly.js once
        return None
    if not isinstance(parent, dict):
        return None
    cell = parent.get("metadata", {}).get("cellId")
    if cell:
        return f"id:{cell}"
    code = parent.get("content", {}).get("code")
    if not isinstance(code, str):
        return None
    return "code:" + hashlib.sha256(code.encode("utf-8", "replace")).hexdigest()


def _json(value: Any) -> str:
    """JSON for a script: "<" occurs only inside strings, as \\u003c no text closes the script."""
    from plotly.io.json import to_json_plotly  # optional, as in plotly_modules

    return str(to_json_plotly(value)).replace("<", "\\u003c")


def figure_html(fig: Any, spec: dict[str, Any], with_plotly_js: bool) -> str:
    """The figure's `text/html`: its numbers (the fallback), then the chart.

    The numbers show first, so a viewer without JavaScript (GitHub, an export opened with
    scripts off, an untrusted notebook) reads them. The chart's script waits for `window.Plotly`
    (this output's plotly.js, or the one an earlier output of the notebook loaded), draws, gives
    the plot text the theme's colour and then hides the numbers: with JavaScript they are not
    shown twice. When plotly.js never comes (its output was cleared) the numbers stay.
    """
    key = f"evalbook-figure-{uuid.uuid4().hex}"
    numbers = fallback_html(fig) or root(
        f'<div style="{MUTED}">{esc(fallback_text(fig) or _plain(fig))}</div>', "figure-numbers"
    )
    js = ""
    if with_plotly_js:
        js = (
            "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
            f'<script charset="utf-8">{plotly_js()}</script>'
        )
    script = (
        "(function () {"
        f"var id = {json.dumps(key)}, steps = 0;"
        "function draw() {"
        "var el = document.getElementById(id);"
        "if (!el) { return; }"
        "if (!(window.Plotly && window.Plotly.newPlot)) {"
        f"if (steps++ < {_WAIT_STEPS}) {{ setTimeout(draw, 50); }} return; }}"
        f"window.Plotly.newPlot({json.dumps(key)}, {_json(spec['data'])}, {_json(spec['layout'])}, "
        f"{_json(spec['config'])}).then(function () {{"
        "var color = window.getComputedStyle(el).color;"
        "if (color) { window.Plotly.relayout(el, {'font.color': color}); }"
        "var numbers = document.getElementById(id + '-numbers');"
        "if (numbers) { numbers.style.display = 'none'; }"
        "el.setAttribute('data-drawn', '1');"
        "});"
        "}"
        "draw();"
        "})();"
    )
    return (
        f'<div data-evalbook="figure" style="color: inherit">'
        f'<div id="{key}-numbers" data-evalbook="figure-fallback">{numbers}</div>{js}'
        f'<div id="{key}" class="plotly-graph-div" style="width: 100%"></div>'
        f"<script>{script}</script></div>"
    )


def _plain(fig: Any) -> str:
    return f"<plotly Figure: {fig.layout.title.text or 'untitled'}>"


@functools.cache
def _figure_class() -> Any:
    base: Any = graph_objects().Figure

    class Figure(base):  # type: ignore[misc]
        """A `go.Figure` that renders in exported notebooks too (plotly mimetype + HTML)."""

        # (HTML, text) of what the figure says, for viewers that run no JavaScript: the HTML
        # shows until the chart is drawn, the text replaces the placeholder text
        _fallback: tuple[str, str] | None = None

        def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kw: Any) -> Any:
            spec = self.to_plotly_json()
            spec["config"] = {"displaylogo": False}
            # the HTML's chart follows its output's width; never in the mimetype's config:
            # JupyterLab's plotly renderer redraws a responsive chart at 0 px high when the
            # theme changes (measured in Chromium, tests/display/test_browser.py)
            responsive = {**spec, "config": {**spec["config"], "responsive": True}}
            html = figure_html(self, responsive, embed_plotly_js())
            text = _plain(self) if self._fallback is None else self._fallback[1]
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
    shows until the chart is drawn, `text` is its text/plain form."""
    fig._fallback = (html, text)


def fallback_html(fig: Any) -> str | None:
    """The HTML `set_fallback` gave `fig` (None: it has none)."""
    fallback: tuple[str, str] | None = getattr(fig, "_fallback", None)
    return None if fallback is None else fallback[0]


def fallback_text(fig: Any) -> str | None:
    """The text/plain form `set_fallback` gave `fig` (None: it has none)."""
    fallback: tuple[str, str] | None = getattr(fig, "_fallback", None)
    return None if fallback is None else fallback[1]


def numbers_fallback(
    fig: Any,
    kind: str,
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    note: str = "",
    unit: str = "rows",
) -> None:
    """Give `fig` its numbers as a small table (HTML) and one line of text (`set_fallback`).

    `title`, `columns`, `rows` and `note` are plain text (escaped here); `kind` marks the root.
    At most `MAX_FALLBACK_ROWS` rows are shown, the rest counted (`… 3 more rows`, in `unit`).
    """
    shown_rows, more = list(rows[:MAX_FALLBACK_ROWS]), len(rows) - MAX_FALLBACK_ROWS
    notes = [note] if note else []
    if more > 0:
        notes.insert(0, f"… {more:,} more {unit}")
    head = "".join(f'<td style="{_CELL}; font-weight: 600">{esc(c)}</td>' for c in columns)
    body = "".join(
        "<tr>" + "".join(f'<td style="{_CELL}">{esc(v)}</td>' for v in row) + "</tr>"
        for row in shown_rows
    )
    said = "".join(f'<div style="{MUTED}; font-size: 12px">{esc(n, 2000)}</div>' for n in notes)
    table = (
        f'<table style="border-collapse: collapse; font-size: 12px"><tr>{head}</tr>{body}</table>'
        if shown_rows
        else ""
    )
    html = root(
        f'<div style="margin: 4px 0 8px 0"><div style="font-weight: 600">{esc(title, 400)}</div>'
        f"{table}{said}</div>",
        kind,
    )
    lines = [
        f"{row[0]}: "
        + ", ".join(f"{c} {v}".strip() for c, v in zip(columns[1:], row[1:], strict=False))
        for row in shown_rows
    ]
    set_fallback(fig, html, visible(" · ".join([title, *lines, *notes])))


# Rows a figure's numbers show (a chart of 150 reasons is read in the table, not drawn whole)
MAX_FALLBACK_ROWS = 20
_CELL = "padding: 1px 10px 1px 0; font-variant-numeric: tabular-nums"


def figure(**kwargs: Any) -> Any:
    """A `go.Figure` whose display bundle also holds export-safe HTML."""
    fig = _figure_class()(**kwargs)
    fig.update_layout(
        template="plotly_white",
        paper_bgcolor="rgba(0,0,0,0)",
        plot_bgcolor="rgba(0,0,0,0)",
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        height=360,
        # the grey with the most contrast on white, #111111 and #1e1e1e at once (4.06:1; no
        # colour reaches 4.5:1 on both): what plotly's own renderer draws. The HTML's script
        # gives the text the page's own colour instead.
        font={"color": PLOT_TEXT_COLOR},
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
