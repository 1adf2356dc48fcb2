"""Every notebook in notebooks/, executed and exported with nbconvert, shows every output.

docs/notebooks.md promises that the views still show in `jupyter nbconvert --to html`. This runs
what a user runs (`jupyter nbconvert --to html --execute`, here through nbclient and the
HTMLExporter in one process per notebook) on a copy of each notebook, then reads the exported
page with no JavaScript and no network, as an offline reader sees it: every output must show
text or an image; a widget placeholder (which needs the widget manager from a CDN) must come with
the view's static HTML in the same cell; a plot must carry plotly.js inside the page, not a CDN
link. The number of outputs checked is printed and recorded.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from _page import Page

pytestmark = pytest.mark.slow  # runs and exports every notebook

try:  # nbconvert and nbclient come with jupyterlab (the dev extra)
    import nbclient
    import nbconvert  # noqa: F401
    import nbformat
except ImportError as exc:  # pragma: no cover - the dev extra installs them
    if os.environ.get("CI"):
        raise  # CI must run this test, not skip it
    pytest.skip(f"{exc.name} is not installed (pip install -e '.[dev]')", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT_S = 120


def _export(notebook: Path, work: Path) -> str:
    """Execute a copy of `notebook` in `work` and export it to HTML, as `--execute` does."""
    from nbconvert import HTMLExporter

    copy = work / notebook.name
    shutil.copy(notebook, copy)
    nb = nbformat.read(copy, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": work}}
    )
    client.execute()
    body, _resources = HTMLExporter().from_notebook_node(nb)
    return str(body)


def _problems(page: Page) -> list[str]:
    problems: list[str] = []
    shown_cells = {o.cell for o in page.outputs if o.text.strip() or o.media}
    for o in page.outputs:
        where = f"cell {o.cell + 1}"
        if o.plot:
            if not page.inline_plotly:
                problems.append(f"{where}: a plot whose plotly.js is not in the page (CDN only)")
        elif o.widget:
            if o.cell not in shown_cells:
                problems.append(f"{where}: a widget placeholder with no static view beside it")
        elif not (o.text.strip() or o.media):
            problems.append(f"{where}: an empty output area ({o.classes})")
    cdn = [s for s in page.remote_scripts if "plot" in s.lower()]
    if cdn:
        problems.append(f"plotly.js loaded from a CDN: {cdn}")
    return problems


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Each notebook's exported HTML (executed once for the module)."""
    os.environ.setdefault("EVALBOOK_PROGRESS", "0")
    pages: dict[str, str] = {}
    for notebook in NOTEBOOKS:
        pages[notebook.name] = _export(notebook, tmp_path_factory.mktemp(notebook.stem))
    return pages


def test_the_reader_sees_the_bundled_views_in_the_page() -> None:
    """The checker itself: a blank output, a lone widget and a CDN plot are each caught."""
    blank = (
        '<div class="jp-CodeCell"><div class="jp-OutputArea-output"><script>x</script></div></div>'
    )
    widget = (
        '<div class="jp-CodeCell"><div class="jupyter-widgets jp-OutputArea-output">'
        '<script type="application/vnd.jupyter.widget-view+json">{}</script></div></div>'
    )
    plot = (
        '<script src="https://cdn.plot.ly/plotly-3.0.1.min.js"></script><div class="jp-CodeCell">'
        '<div class="jp-OutputArea-output"><div class="plotly-graph-div"></div></div></div>'
    )
    fine = (
        '<div class="jp-CodeCell"><div class="jp-OutputArea-output"><b>0.75</b></div>'
        '<div class="jupyter-widgets jp-OutputArea-output"></div></div>'
        '<div class="jp-CodeCell"><div class="jp-OutputArea-output"><img src="x.png"></div></div>'
    )
    found = {}
    for name, html in {"blank": blank, "widget": widget, "plot": plot, "fine": fine}.items():
        found[name] = _problems(Page.of(html))
    assert "empty output area" in found["blank"][0]
    assert "widget placeholder" in found["widget"][0]
    assert any("CDN" in p for p in found["plot"])
    assert found["fine"] == []


def test_the_reader_decodes_what_serializers_spell_differently() -> None:
    """The page reader itself: one figure, spelled as plotly's json engine, orjson or an older
    plotly writes it, reads the same; so does text under either entity for a quote."""
    escaped = '"a \\u00b7 \\u003cb\\u003e \\u002f c"', '{"dtype": "f8", "bdata": "AAAAAAAA4D8="}'
    plain = '"a · <b> / c"', "[0.5]"
    read = []
    for title, x in (escaped, plain):
        script = f'Plotly.newPlot("id", [{{"x": {x}}}], {{"title": {{"text": {title}}}}}, {{}})'
        page = Page.of(f"<p>it&#x27;s</p><script>{script}</script><p>it&#39;s</p>")
        assert page.text == "it's it's"  # the script shows nothing
        (figure,) = page.figures
        read.append((figure.title, figure.data))
    assert read[0] == read[1] == ("a · <b> / c", [{"x": [0.5]}])


def test_every_exported_output_shows_something(
    exported: dict[str, str], record_property: pytest.RecordProperty
) -> None:
    assert NOTEBOOKS, "no notebooks found"
    problems: list[str] = []
    counts: dict[str, int] = {}
    for name, html in exported.items():
        page = Page.of(html)
        counts[name] = len(page.outputs)
        problems += [f"{name}: {p}" for p in _problems(page)]
        assert page.outputs, f"{name}: the exported page has no outputs"
    total = sum(counts.values())
    figure = f"nbconvert export: {len(counts)} notebooks, {total} outputs checked, "
    figure += f"{len(problems)} blank ({counts})"
    print(figure)
    record_property("nbconvert_outputs", figure)
    assert not problems, "\n".join(problems)


def test_eb_show_and_eval_show_export_their_static_view(exported: dict[str, str]) -> None:
    """The views of `eb.show(...)` and `%eval show` are in the page as HTML (issue 20)."""
    for name, marker in [
        ("quickstart.ipynb", "run"),
        ("comparing-runs.ipynb", "comparison"),
        ("magics.ipynb", "run"),
    ]:
        page = Page.of(exported[name])
        widget_cells = {o.cell for o in page.outputs if o.widget}
        assert widget_cells, f"{name}: no widget output (eb.show / %eval show)"
        # the view's marker as an attribute of an output's element, however nbconvert quotes it
        shown = [o for o in page.outputs if marker in o.marks]
        assert shown, f"{name}: no data-evalbook={marker} view in the page"
        for cell in widget_cells:
            assert any(o.cell == cell and o.text.strip() for o in page.outputs), (
                f"{name}: cell {cell + 1} shows only the widget placeholder"
            )


def test_each_view_shows_once_and_the_saved_widget_state_holds_no_copy(
    exported: dict[str, str],
) -> None:
    """Issue 35 item 6: an export opened online showed each view twice (the static view, then
    the widget restored from its saved state). The live view's HTML is sent by the kernel,
    never a widget trait, so the saved state holds none of it: restored without a kernel, the
    widget draws nothing and the static view is the one view."""
    for name, marker in [("quickstart.ipynb", "run"), ("comparing-runs.ipynb", "comparison")]:
        html = exported[name]
        states = re.findall(
            r'<script type="application/vnd.jupyter.widget-state\+json">(.*?)</script>',
            html,
            flags=re.S,
        )
        assert states, f"{name}: no saved widget state (nbclient stores it)"
        for live in ("run-cards", "run-header", "case-table-box", "pair-explorer", "Unscored"):
            assert not any(live in state for state in states), f"{name}: {live} in the state"
        page = Page.of(html)
        widget_cells = {o.cell for o in page.outputs if o.widget}
        assert widget_cells
        for cell in widget_cells:
            shown = [o for o in page.outputs if o.cell == cell and marker in o.marks]
            assert len(shown) == 1, f"{name}: cell {cell + 1} shows its view {len(shown)} times"


def test_a_view_publishes_its_static_html_apart_from_the_widget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What makes the export work: the HTML is in an output whose widget view has no model."""
    pytest.importorskip("anywidget")
    import IPython.display

    import evalbook as eb
    from evalbook.display import _widget_base

    published: list[dict[str, object]] = []
    monkeypatch.setattr(IPython.display, "display", lambda b, raw=False: published.append(b))
    df = __import__("pandas").DataFrame({"id": ["a", "b"], "x": ["1", "2"]})
    same = eb.define_score("same", primary=True)

    @eb.scorer(same)
    def check(output: str, x: str) -> float:
        return float(output == x)

    view = eb.show(eb.run(df, task=lambda x: x, scorers=[check], store=None, progress=False))
    view._ipython_display_()
    static, live = published
    mime = _widget_base.WIDGET_VIEW
    assert static[mime]["model_id"] == ""  # type: ignore[index]
    assert static["text/html"] == view._repr_mimebundle_()["text/html"]
    assert 'data-evalbook="run"' in str(static["text/html"])
    assert live[mime]["model_id"] == view.model_id  # type: ignore[index]
    assert "text/html" not in live  # shown once where widgets do not render


def test_the_leaderboard_view_exports_its_card_and_scatter(exported: dict[str, str]) -> None:
    """`eb.show([a, b, c])` in comparing-runs: the board card, then the cost-vs-score scatter
    with its data and plotly.js in the page (issue 20)."""
    page = Page.of(exported["comparing-runs.ipynb"])
    (card,) = [
        o for o in page.outputs if "Leaderboard · 3 runs" in o.text or "cost / sample" in o.text
    ]
    plots = [o for o in page.outputs if o.plot and o.cell == card.cell]
    assert plots, "the leaderboard view's scatter is not in its cell's outputs"
    assert "$0.009" in card.text and "small" in card.text  # each run's cost per sample
    assert page.inline_plotly and not [s for s in page.remote_scripts if "plot" in s.lower()]
    # the figure's own data, as plotly.js reads it from the page (not as plotly's JSON spells it)
    (figure,) = [f for o in plots for f in o.figures]
    assert figure.title == "Cost against Correct answer · Pareto front"
    front_trace, points = figure.data
    assert (front_trace["name"], points["name"]) == ("Pareto front", "runs")
    assert points["text"] == ["small", "medium", "large"]  # every priced run of the sweep
    # the scatter's no-JavaScript text, before the chart
    front = "Pareto front (cost per sample against Correct answer): 'small', 'large'"
    assert any(front in o.text for o in plots), [o.text[:200] for o in plots]
