"""A notebook of seven charts, executed in a kernel (nbclient), saved and exported (nbconvert),
then opened offline in Chromium with JavaScript off and on (issue 35 items 4, 5, 8).

- plotly.js is embedded once (the kernel's first figure): the saved notebook and its export
  each stay ≤ 6 MB (seven embeddings were 37 MB);
- without JavaScript every chart shows its numbers; with it all seven charts draw and their
  numbers are hidden (not shown twice), the plot text in the page's own text colour;
- cells re-run out of order (a later chart, then the first) still leave plotly.js in one output;
- with the first chart's output cleared (and with it plotly.js), no chart is blank: each shows
  its numbers.
The sizes and contrast ratios are printed and recorded.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _chromium import chromium as chromium_browser

pytestmark = pytest.mark.slow

try:  # the dev extra installs them
    import nbclient
    import nbformat
    from nbconvert import HTMLExporter
except ImportError as exc:  # pragma: no cover
    if os.environ.get("CI"):
        raise
    pytest.skip(f"{exc.name} is not installed (pip install -e '.[dev]')", allow_module_level=True)

pytest.importorskip("plotly")

LIMIT = 6_000_000
SETUP = """
import pandas as pd
import evalbook as eb
data = pd.DataFrame({"q": [f"q{i}" for i in range(12)], "kind": ["a", "b"] * 6})
hit = eb.scorer(eb.define_score("hit", primary=True))
def task(q, ctx):
    ctx.record_usage(input_tokens=10, output_tokens=2, cost=0.001 * (1 + int(q[1:]) % 2))
    return q
def score_a(output):
    return eb.Unscored("no answer") if output == "q11" else float(int(output[1:]) % 2)
a = eb.run(data, task=task, scorers=[hit(score_a)], name="a", store=None, progress=False)
b = eb.run(data, task=task, scorers=[hit(lambda output: float(int(output[1:]) < 9))], name="b",
           store=None, progress=False)
flaky = eb.run(data, task=lambda q, epoch: f"{q}{epoch}", epochs=3, name="flaky", store=None,
               scorers=[hit(lambda output: float(int(output[1:-1]) < 4 or output[-1] == "1"))],
               progress=False)
comp = eb.compare(a, b, by="kind")
"""
CHARTS = [
    "a.plot.unscored()",
    "a.plot.distribution()",
    "flaky.plot.flakiness()",
    "flaky.plot.consistency()",
    "comp.plot.deltas()",
    "comp.plot.forest()",
    "eb.show([a, b])",  # the leaderboard's card, then its cost-vs-score scatter
]
# a number each chart's fallback shows (what it draws)
NUMBERS = ["scored 11", "0.00: 6", "always 4 (33%)", "cases by mean", " pp [", " pp [", "a $0.0015"]


@pytest.fixture(scope="module")
def notebook(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Path]:
    """The seven-chart notebook, executed in a kernel and saved."""
    os.environ.setdefault("EVALBOOK_PROGRESS", "0")
    work = tmp_path_factory.mktemp("charts")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)] + [nbformat.v4.new_code_cell(c) for c in CHARTS]
    client = nbclient.NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": work}}
    )
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            client.execute_cell(cell, i)
        # cells re-run out of order: a later chart, then the one that carried plotly.js
        for i in (3, 1, 2):
            client.execute_cell(nb.cells[i], i)
    path = work / "charts.ipynb"
    nbformat.write(nb, path)
    return nb, path


def _export(nb: Any, path: Path) -> Path:
    body, _ = HTMLExporter().from_notebook_node(nb)
    path.write_text(body, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser() as browser:
        yield browser


def _open(browser: Any, page_file: Path, javascript: bool) -> Any:
    context = browser.new_context(java_script_enabled=javascript)
    context.route("http*://**", lambda route: route.abort())  # offline: no CDN ever
    page = context.new_page()
    page.goto(page_file.as_uri(), wait_until="load")
    return page


def test_a_seven_chart_notebook_and_its_export_embed_plotly_js_once(
    notebook: tuple[Any, Path], tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    nb, path = notebook
    html = _export(nb, tmp_path / "charts.html")
    from _page import Page

    page = Page.of(html.read_text(encoding="utf-8"))
    saved, exported = path.stat().st_size, html.stat().st_size
    figure = f"7-chart notebook: saved {saved / 1e6:.2f} MB, nbconvert HTML {exported / 1e6:.2f} MB"
    print(figure)
    record_property("seven_charts", figure)
    # plotly.js inline once; no plotly from a CDN (nbconvert's own template links require.js)
    assert page.plotly_bundles == 1 and not [s for s in page.remote_scripts if "plot" in s]
    carriers = [o.cell for o in page.outputs if "plotly.js v" in str(o.figures) or False]
    assert carriers == []  # (the bundle is no figure) ...
    holding = [i for i, c in enumerate(nb.cells) if "* plotly.js v" in str(c.get("outputs", ""))]
    assert holding == [1]  # ... it is in the first chart's output, re-run after the others
    assert len(page.figures) == 7
    assert saved <= LIMIT and exported <= LIMIT, figure


def test_without_javascript_every_chart_shows_its_numbers(
    notebook: tuple[Any, Path], tmp_path: Path, chromium: Any
) -> None:
    page = _open(chromium, _export(notebook[0], tmp_path / "charts.html"), javascript=False)
    numbers = page.locator("[data-evalbook='figure-fallback']")
    assert numbers.count() == 7
    for i, expected in enumerate(NUMBERS):
        shown = numbers.nth(i)
        text = " ".join(shown.inner_text().split())
        assert shown.is_visible() and expected in text, (i, text)


def _rgb(css: str) -> tuple[float, ...]:
    inner = css[css.index("(") + 1 : css.index(")")]
    parts = [float(x) for x in inner.replace("/", ",").split(",")]
    return tuple(parts) if len(parts) == 4 else (*parts, 1.0)


def _ratio(fg: tuple[float, ...], bg: tuple[float, ...]) -> float:
    """WCAG 2 contrast of `fg` (with its alpha blended over `bg`) against `bg`."""

    def lum(rgb: tuple[float, ...]) -> float:
        c = [v / 255 for v in rgb[:3]]
        r, g, b = (x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4 for x in c)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    alpha = fg[3]
    blended = tuple(fg[i] * alpha + bg[i] * (1 - alpha) for i in range(3))
    hi, lo = sorted((lum(blended), lum(bg)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


_BACKGROUND = """el => { for (let n = el; n; n = n.parentElement) {
  const c = getComputedStyle(n).backgroundColor;
  if (c && c !== 'rgba(0, 0, 0, 0)' && c !== 'transparent') return c; }
  return 'rgb(255, 255, 255)'; }"""


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_with_javascript_all_seven_draw_once_in_the_page_text_colour(
    notebook: tuple[Any, Path],
    tmp_path: Path,
    chromium: Any,
    theme: str,
    record_property: pytest.RecordProperty,
) -> None:
    body, _ = HTMLExporter(theme=theme).from_notebook_node(notebook[0])
    page_file = tmp_path / f"charts-{theme}.html"
    page_file.write_text(body, encoding="utf-8")
    page = _open(chromium, page_file, javascript=True)
    page.wait_for_function(
        "document.querySelectorAll('.plotly-graph-div[data-drawn]').length == 7", timeout=60_000
    )
    numbers = page.locator("[data-evalbook='figure-fallback']")
    assert [numbers.nth(i).is_visible() for i in range(7)] == [False] * 7  # not shown twice
    plot = page.locator(".plotly-graph-div").first
    title = plot.locator(".gtitle").first
    fill = title.evaluate("el => getComputedStyle(el).fill")
    opacity = float(title.evaluate("el => getComputedStyle(el).fillOpacity"))
    text = plot.evaluate("el => getComputedStyle(el).color")
    ratios = {}
    drawn = (*_rgb(fill)[:3], _rgb(fill)[3] * opacity)  # plotly writes the alpha apart
    for what, colour in {"plot text": drawn, "page text": _rgb(text)}.items():
        ratios[what] = round(_ratio(colour, _rgb(plot.evaluate(_BACKGROUND))), 2)
    badge = page.locator("[data-evalbook='flakiness'] span[data-status]").first
    badge_text = badge.evaluate("el => getComputedStyle(el).color")
    ratios["badge text"] = round(_ratio(_rgb(badge_text), _rgb(badge.evaluate(_BACKGROUND))), 2)
    figure = f"{theme}: contrast {ratios} (plot text {fill} at {opacity}, badge {badge_text})"
    print(figure)
    record_property(f"contrast_{theme}", figure)
    assert _rgb(fill)[:3] == _rgb(text)[:3]  # the plot text takes the page's text colour
    assert min(ratios.values()) >= 4.5, figure


def test_with_the_first_chart_cleared_no_chart_is_blank(
    notebook: tuple[Any, Path], tmp_path: Path, chromium: Any
) -> None:
    nb = nbformat.from_dict(notebook[0])
    nb.cells[1].outputs = []  # the output that carried plotly.js
    page = _open(chromium, _export(nb, tmp_path / "cleared.html"), javascript=True)
    page.wait_for_timeout(1500)
    numbers = page.locator("[data-evalbook='figure-fallback']")
    drawn = page.locator(".plotly-graph-div[data-drawn]").count()
    assert numbers.count() == 6
    shown = [numbers.nth(i).is_visible() for i in range(6)]
    # each chart either drawn or its numbers shown: here plotly.js is gone, so the numbers
    assert drawn == 0 and shown == [True] * 6
