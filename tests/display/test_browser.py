"""A real browser: JupyterLab on 127.0.0.1, notebooks run by Chromium via Playwright.

Chromium is Debian's (`/usr/bin/chromium`, installed by `.ci/run`); nothing is downloaded
(never `playwright install`). The notebooks are copied to a temporary folder so that JupyterLab
never writes outputs into the committed ones. Screenshots go to a temporary folder, or to
`docs/img/` (which the README shows) with EVALBOOK_UPDATE_SCREENSHOTS=1. Skipped when chromium,
JupyterLab or Playwright is missing, except under CI=true.

Every notebook is run once and read in the light theme and then the dark one: no visible output
area may be empty (or stuck on "Loading widget..."), and each output kind (headline card, widget
tabs, case table, comparison, its output diff, plots, agreement card, `%eval show`) is shot as
`<kind>.png` and `<kind>-dark.png`. The leaderboard view (`eb.show([...])`) must draw its
scatter below its card.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _chromium import profile_context, require, screenshots
from _jupyter import Server, jupyter_server, wait_for_kernel

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
IMG = screenshots("evalbook-screenshots-")
RUN_ALL_TIMEOUT_S = 240
# eb.show's tab bar: HTML buttons drawn by the kernel (docs/architecture.md, the view protocol)
_TAB = "[data-eb-action='tab']"


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A headless JupyterLab serving a copy of notebooks/."""
    require("jupyterlab")
    home = tmp_path_factory.mktemp("lab")
    work = home / "notebooks"
    shutil.copytree(NOTEBOOKS, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    try:
        with jupyter_server("jupyterlab", work, home) as server:
            yield server
    except RuntimeError as exc:  # it did not start: its log
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser(lab: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with profile_context(tmp_path_factory) as context:
        yield context


def _run_all(context: Any, lab: Server, notebook: str) -> Any:
    """Open `notebook` with `?reset`, run every cell, wait until each has run; return the page."""
    page = context.new_page()
    page.goto(lab.url(f"lab/tree/{notebook}?reset"), wait_until="domcontentloaded")
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=120_000)
    wait_for_kernel(page, lab, notebook)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    script = """() => [...document.querySelectorAll(
        '.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')].map(p => p.textContent.trim())"""
    deadline = time.monotonic() + RUN_ALL_TIMEOUT_S
    prompts: list[str] = []
    while time.monotonic() < deadline:
        prompts = page.evaluate(script)
        if prompts and all(re.fullmatch(r"\[\d+\]:?", p) for p in prompts):
            break
        time.sleep(1)
    else:
        shot = Path(tempfile.gettempdir()) / f"evalbook-failed-{notebook}.png"
        page.screenshot(path=str(shot), full_page=True)
        pytest.fail(f"{notebook}: not every cell ran in {RUN_ALL_TIMEOUT_S} s: {prompts} ({shot})")
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    tracebacks = [t for t in errors.all_inner_texts() if "Traceback" in t or "Error" in t]
    assert not tracebacks, tracebacks
    return page


def test_quickstart_shows_the_headline_card(browser: Any, lab: Server) -> None:
    page = _run_all(browser, lab, "quickstart.ipynb")
    card = page.locator("[data-evalbook='run']").first
    card.scroll_into_view_if_needed()
    headline = card.locator("[data-evalbook='headline']")
    # JupyterLab renders an output once it is scrolled into view (its notebook windowing): wait
    # for the card's text rather than read it at once
    page.wait_for_function(
        "() => { const h = document.querySelector(\"[data-evalbook='run'] "
        "[data-evalbook='headline']\"); return h !== null && h.innerText.includes('completed'); }",
        timeout=30_000,
    )
    assert headline.is_visible()
    text = headline.inner_text()
    assert "Headline · answer.pass" in text and "Pass" in text and "completed" in text
    assert "errored 1" in text
    IMG.mkdir(parents=True, exist_ok=True)
    card.screenshot(path=str(IMG / "headline-card.png"))
    # The interactive view rendered as a live widget (tabs), not only as static HTML.
    tabs = page.locator(f".jp-OutputArea-output {_TAB}")
    tabs.first.wait_for(timeout=30_000)
    assert "Unscored reasons" in " ".join(tabs.all_inner_texts())
    # The case explorer works in the browser: filter to the errored case and read it.
    widget = page.locator(".jp-OutputArea-output", has=page.locator(_TAB)).first
    widget.locator(_TAB, has_text="Cases").click()
    # the kernel draws the tab (its HTML comes by message); then the outcome filter
    outcome = widget.locator("select[data-eb-action='explorer.outcome']")
    outcome.wait_for(timeout=30_000)
    outcome.select_option("errored")
    detail = widget.locator("[data-evalbook='case']")
    detail.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-evalbook=\"case\"]')]"
        ".some(e => e.innerText.includes('ZeroDivisionError'))",
        timeout=30_000,
    )
    widget.scroll_into_view_if_needed()
    widget.screenshot(path=str(IMG / "case-explorer.png"))
    page.close()


def test_comparing_runs_shows_the_comparison(browser: Any, lab: Server) -> None:
    page = _run_all(browser, lab, "comparing-runs.ipynb")
    view = page.locator("[data-evalbook='comparison']").first
    view.scroll_into_view_if_needed()
    text = view.inner_text()
    assert "baseline → candidate" in text and "regressed" in text
    IMG.mkdir(parents=True, exist_ok=True)
    view.screenshot(path=str(IMG / "comparison.png"))
    page.close()


def test_a_transcript_clicks_through_in_the_case_explorer(browser: Any, lab: Server) -> None:
    """The agents notebook's run: open the case whose tool failed, read its turns (the failed
    call marked), open the shared steps of a long message, and shoot it."""
    page = _run_all(browser, lab, "agents.ipynb")
    widget = page.locator(".jp-OutputArea-output", has=page.locator(_TAB)).last
    widget.scroll_into_view_if_needed()
    widget.locator(_TAB, has_text="Cases").click()
    cases = widget.locator("select[data-eb-action='explorer.cases']").first
    cases.wait_for(timeout=30_000)
    labels = cases.locator("option").all_inner_texts()
    cases.select_option(index=next(i for i, t in enumerate(labels) if t.startswith("q3")))
    transcript = widget.locator("[data-evalbook='transcript']")
    transcript.wait_for(timeout=30_000)
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-evalbook=\"transcript\"]')]"
        ".some(e => e.innerText.includes('error: lookup'))",
        timeout=30_000,
    )
    failed = transcript.locator("[data-evalbook='tool-call'][data-failed='true']")
    assert failed.count() == 1 and failed.first.is_visible()
    turns = transcript.locator("[data-evalbook='step']")
    assert turns.count() == 2  # the question, the call (its failed result drawn under it)
    assert "lookup" in failed.first.inner_text()
    # the score records sit beside the transcript (same row, to its right)
    record = widget.locator("[data-evalbook='case'] [data-evalbook='record']").first
    t_box, r_box = transcript.bounding_box(), record.bounding_box()
    assert t_box is not None and r_box is not None
    assert r_box["x"] > t_box["x"] + t_box["width"] / 2, (t_box, r_box)
    IMG.mkdir(parents=True, exist_ok=True)
    widget.locator("[data-evalbook='case']").screenshot(path=str(IMG / "transcript.png"))
    page.close()


_REVIEW_CELLS = [
    """import os
import pandas as pd
import evalbook as eb

STORE = {store!r}
found = sorted(p for p in os.listdir(STORE) if p.startswith("judged-"))

@eb.scorer(eb.define_score("helpful", primary=True))
def judged(question):
    raw = 1 + int(question[1:]) % 5  # a stand-in 1-5 judge, its raw value in the metadata
    return eb.Score((raw - 1) / 4, metadata={{"raw": raw, "scale": [1, 5]}})

data = pd.DataFrame({{"question": [f"q{{i}}" for i in range(30)]}})
run = (eb.load_run(os.path.join(STORE, found[-1])) if found else
       eb.run(data, task=lambda question: question, scorers=[judged], store=STORE,
              name="judged", progress=False))
view = eb.review(run, score="helpful", n=10, labeler="ana")
view""",
    'print("kernel pid", os.getpid())',
]


def _progress(page: Any) -> str:
    found = page.locator("[data-evalbook='review']").first
    found.wait_for(timeout=60_000)
    text: str = found.inner_text()
    return text


def test_a_review_clicked_in_jupyterlab_survives_a_kernel_kill(
    browser: Any, lab: Server, tmp_path: Path, record_property: Any
) -> None:
    """Label 3 samples by clicking, kill the kernel (SIGKILL), run the notebook again: the
    3 labels are in labels.jsonl and the review goes on at the 4th sample."""
    lab.put_notebook("review-kill.ipynb", [c.format(store=str(tmp_path)) for c in _REVIEW_CELLS])
    page = _run_all(browser, lab, "review-kill.ipynb")
    assert "0 of 10 labelled" in _progress(page)
    assert "hidden while you label" in _progress(page)  # blind
    for k in range(1, 4):
        page.locator(".jp-OutputArea-output button[data-eb-action='review.value.4']").first.click()
        page.wait_for_function(
            "(k) => [...document.querySelectorAll('[data-evalbook=\"review\"]')]"
            ".some(e => e.innerText.includes(k + ' of 10 labelled'))",
            arg=k,
            timeout=30_000,
        )
    IMG.mkdir(parents=True, exist_ok=True)
    widget = page.locator(".jp-OutputArea-output", has=page.locator("[data-evalbook='review']"))
    widget.first.screenshot(path=str(IMG / "review.png"))
    pid_text = page.locator(".jp-OutputArea-output", has_text="kernel pid").first.inner_text()
    pid = int(re.search(r"kernel pid (\d+)", pid_text)[1])  # type: ignore[index]
    os.kill(pid, signal.SIGKILL)  # the kernel dies mid-review
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith("judged-")]
    lines = (folder / "labels.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all('"label":4' in line for line in lines)
    # JupyterLab restarts the dead kernel; run the notebook again: the review resumes
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    wait_for_kernel(page, lab, "review-kill.ipynb")
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.wait_for_function(
        "() => [...document.querySelectorAll('[data-evalbook=\"review\"]')]"
        ".some(e => e.innerText.includes('3 of 10 labelled'))",
        timeout=120_000,
    )
    figure = "3 labels clicked in JupyterLab, kernel killed: 3 of 3 kept, the review resumed at 4"
    print(figure)
    record_property("review_kernel_kill", figure)
    page.close()


# Each visible output area of the open notebook: its cell, text and media (plots draw SVG).
_OUTPUTS_JS = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
    const cells = [...panel.querySelectorAll('.jp-CodeCell')];
    return [...panel.querySelectorAll('.jp-OutputArea-output')]
        .filter(e => e.getClientRects().length > 0)
        .map(e => ({cell: cells.indexOf(e.closest('.jp-CodeCell')) + 1,
                    text: e.innerText.trim().slice(0, 200),
                    media: e.querySelectorAll('img, svg, canvas').length,
                    mime: e.dataset.mimeType || '',
                    widget: e.querySelector("[data-eb-action='tab']") !== null}));
}"""
_PENDING = ("Loading widget...",)
_WIDGET = ".jp-OutputArea-output:has([data-eb-action='tab'])"
_PLOT = ".jp-OutputArea-output.js-plotly-plot, .jp-OutputArea-output:has(.js-plotly-plot)"
# eb.show([a, b, c])'s outputs: the board card, then the cost-vs-score scatter below it
_BOARD = ".jp-CodeCell:has([data-evalbook='board']) .jp-Cell-outputArea"
# One screenshot per output kind: (file stem, notebook, element to shoot, tab to open first).
_KINDS = [
    ("headline-card", "quickstart.ipynb", "[data-evalbook='run']", None),
    ("widget-tabs", "quickstart.ipynb", _WIDGET, "Headline"),
    ("case-table", "quickstart.ipynb", _WIDGET, "Case table"),
    ("plot-unscored", "quickstart.ipynb", _PLOT, None),
    ("comparison", "comparing-runs.ipynb", "[data-evalbook='comparison']", None),
    ("comparison-tabs", "comparing-runs.ipynb", _WIDGET, "Summary"),
    ("output-diff", "comparing-runs.ipynb", _WIDGET, "Cases"),
    ("plot-deltas", "comparing-runs.ipynb", _PLOT, None),
    ("leaderboard", "comparing-runs.ipynb", _BOARD, None),
    ("plot-flakiness", "repeats-and-slices.ipynb", _PLOT, None),
    ("judges-agreement", "judges.ipynb", "[data-evalbook='agreement']", None),
    ("magics-show", "magics.ipynb", _WIDGET, "Headline"),
]


def _open_tab(page: Any, target: Any, tab: str) -> None:
    """Open `tab` of the widget `target`; in a comparison's Cases, show the first case's diff."""
    target.locator(_TAB, has_text=tab).first.click()
    target.locator(f"{_TAB}[aria-selected='true']", has_text=tab).first.wait_for(timeout=30_000)
    if tab == "Cases" and target.locator("[data-evalbook='pair-explorer']").count():
        cases = target.locator("select[data-eb-action='pairs.cases']").first
        # a pair in both runs whose value changed (its label ends "(±N pp)"), so that the diff
        # has two outputs; the first pair may be in one run only
        labels = cases.locator("option").all_inner_texts()
        changed = [i for i, label in enumerate(labels) if label.endswith("pp)")]
        cases.select_option(index=changed[0] if changed else 0)
        target.locator("[data-evalbook='output-diff']").first.wait_for(timeout=30_000)
    page.wait_for_timeout(300)  # the tab's content lays out after the click


# The case table's box, its header buttons and first row's cells: where each header sits
# over its column, and whether the last column can be scrolled into view.
_TABLE_JS = """(el, scroll) => {
    const box = el.querySelector('.evalbook-case-table');
    const heads = [...box.children[0].children].slice(1);  // after the blank over "open"
    const row = box.children[1];
    const cells = [...row.querySelector("[data-evalbook='case-row']").children];
    const lefts = (xs) => xs.map(x => x.getBoundingClientRect().left);
    const offsets = lefts(heads).map((x, i) => Math.abs(x - lefts(cells)[i]));
    box.scrollLeft = scroll ? box.scrollWidth : 0;
    const b = box.getBoundingClientRect();
    const last = heads[heads.length - 1].getBoundingClientRect();
    return {scrolls: box.scrollWidth > box.clientWidth, box: b.width, heads: heads.length,
            cells: cells.length, offset: Math.max(...offsets),
            last_in_view: last.left >= b.left - 1 && last.right <= b.right + 1};
}"""
# The first cell (the case id) of each row on the table's page, in the order drawn.
_FIRST_CELLS_JS = """([el, want]) => {
    const got = [...el.querySelectorAll(
        ".evalbook-case-table [data-evalbook='case-row'] > div:first-child")]
        .map(c => c.innerText.trim());
    return want === null ? got : JSON.stringify(got) === JSON.stringify(want);
}"""


def _check_case_table(page: Any, target: Any, theme: str) -> list[str]:
    """The case table: headers over their columns, the last column reachable by scrolling
    its own box (shot as case-table-right), and a header click sorting in the browser."""
    target.locator(".evalbook-case-table").first.wait_for(timeout=30_000)
    layout = target.evaluate(_TABLE_JS, True)
    assert layout["heads"] == layout["cells"] > 0, layout
    assert layout["offset"] <= 1.5, f"a header is not over its column: {layout}"
    # wider than the output area: the table's box scrolls, and its last column comes into view
    assert layout["scrolls"] and layout["last_in_view"], layout
    page.wait_for_timeout(200)
    name = f"case-table-right{theme}.png"
    target.screenshot(path=str(IMG / name))
    target.evaluate(_TABLE_JS, False)
    handle = target.element_handle()
    before = page.evaluate(_FIRST_CELLS_JS, [handle, None])
    assert len(before) > 1, before
    header = target.locator(".evalbook-case-table button", has_text=re.compile(r"^case_id"))
    for _ in range(2):  # ascending, then descending: the kernel redraws the page
        header.first.click()
        page.wait_for_timeout(400)
    descending = sorted(before, reverse=True)
    page.wait_for_function(_FIRST_CELLS_JS, arg=[handle, descending], timeout=30_000)
    header.first.click()  # back to input order for the next shots
    page.wait_for_function(_FIRST_CELLS_JS, arg=[handle, before], timeout=30_000)
    # the search box sends its text once typing pauses; the kernel keeps the matching rows
    search = target.locator("input[data-eb-action='table.search']")
    search.fill("Q1")  # case-insensitive: the case ids q01, q10, q11, q12 hold "q1"
    want = [c for c in before if "q1" in c.lower()]
    page.wait_for_function(_FIRST_CELLS_JS, arg=[handle, want], timeout=30_000)
    search.fill("")
    page.wait_for_function(_FIRST_CELLS_JS, arg=[handle, before], timeout=30_000)
    # a row's "open" shows its case in full under the table
    target.locator("button[data-eb-action='table.open']").first.click()
    target.locator("[data-evalbook='case-table-view'] [data-evalbook='case']").first.wait_for(
        timeout=30_000
    )
    return [name]


def _set_theme(page: Any, dark: bool) -> None:
    """Switch JupyterLab's theme by its command (Settings > Theme); wait until the page has it."""
    name = "JupyterLab Dark" if dark else "JupyterLab Light"
    page.evaluate(
        "name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", name
    )
    page.wait_for_function(
        f"() => document.body.dataset.jpThemeLight === '{str(not dark).lower()}'",
        timeout=30_000,
    )
    page.wait_for_timeout(500)  # the theme's stylesheet applies after the flag flips


def _blank_outputs(page: Any, notebook: str) -> tuple[int, list[str]]:
    """Wait for widgets to render; return (outputs seen, the ones that show nothing)."""
    deadline = time.monotonic() + 60
    while True:
        outputs = page.evaluate(_OUTPUTS_JS)
        pending = [o for o in outputs if o["text"] in _PENDING]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    blank = [
        f"{notebook} cell {o['cell']} ({o['mime'] or 'widget'}): {o['text'] or 'empty'}"
        for o in outputs
        if (not o["text"] and not o["media"])
        or o["text"] in _PENDING
        or o["text"].startswith("Error displaying widget")
    ]
    # eb.show's static view (its own output, for nbconvert) is hidden beside the live widget
    widget_cells = {o["cell"] for o in outputs if o["widget"]}
    twice = [o for o in outputs if o["cell"] in widget_cells and not o["widget"]]
    blank += [f"{notebook} cell {o['cell']}: shown beside its widget: {o['text']}" for o in twice]
    return len(outputs), blank


@pytest.mark.parametrize("notebook", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_every_output_shows_in_light_and_dark(
    browser: Any, lab: Server, notebook: str, record_property: pytest.RecordProperty
) -> None:
    page = _run_all(browser, lab, notebook)
    IMG.mkdir(parents=True, exist_ok=True)
    seen: dict[str, int] = {}
    blank: list[str] = []
    shots: list[str] = []
    try:
        for dark in (False, True):
            _set_theme(page, dark)
            theme = "dark" if dark else "light"
            seen[theme], missing = _blank_outputs(page, notebook)
            blank += [f"{theme}: {m}" for m in missing]
            for stem, where, selector, tab in _KINDS:
                if where != notebook:
                    continue
                target = page.locator(selector).first
                assert target.count(), f"{notebook}: no {selector} to screenshot ({stem})"
                target.scroll_into_view_if_needed()
                if tab:
                    _open_tab(page, target, tab)
                if stem == "leaderboard":  # the scatter is drawn under the card, not only its text
                    target.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=30_000)
                    assert "cost / sample" in target.inner_text()
                name = f"{stem}-dark.png" if dark else f"{stem}.png"
                target.screenshot(path=str(IMG / name))
                shots.append(name)
                if stem == "case-table":
                    shots += _check_case_table(page, target, "-dark" if dark else "")
    finally:
        _set_theme(page, False)  # the theme is a lab-wide setting: later tests expect light
        page.close()
    figure = f"{notebook}: outputs seen light {seen.get('light')}, dark {seen.get('dark')}; "
    figure += f"{len(blank)} blank or shown twice; screenshots {shots}"
    print(figure)
    record_property("browser_outputs", figure)
    assert seen["light"] > 0 and seen["light"] == seen["dark"], seen
    assert not blank, "\n".join(blank)
