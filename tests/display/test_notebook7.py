"""Notebook 7 (`notebook` from PyPI) in Chromium: `eb.show(run)` is live there too.

A Notebook 7 server (tests/_jupyter.py: headless on 127.0.0.1, its own config) serves a
temporary folder; a notebook written there runs a small run and `eb.show(run)`; Debian's Chromium
(tests/_chromium.py) opens it, runs it and clicks: a tab, a header sort, a row's "open". The view
shows exactly once (its static HTML, the output beside the widget for nbconvert and GitHub, is
hidden). Screenshots go to a temporary folder, or to `docs/img/` with
EVALBOOK_UPDATE_SCREENSHOTS=1. Skipped when chromium, notebook or Playwright is missing, except
under CI=true.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from _chromium import profile_context, require, screenshots
from _jupyter import Server, jupyter_server, wait_for_kernel

pytestmark = pytest.mark.browser

IMG = screenshots("evalbook-nb7-shots-")
NOTEBOOK = "show.ipynb"
# 30 cases q00..q29 (the table's first page holds 25); q07 errors
_CELLS = [
    """import pandas as pd
import evalbook as eb

data = pd.DataFrame({"id": [f"q{i:02d}" for i in range(30)],
                     "question": [f"{i} + {i}" for i in range(30)]})

def model(question):
    if question == "7 + 7":
        raise ZeroDivisionError("division by zero")
    return str(eval(question))

@eb.scorer(eb.define_score("exact", primary=True))
def exact(output, question):
    return 1.0 if output == str(eval(question)) else 0.0

run = eb.run(data, task=model, scorers=[exact], name="nb7", store=None, progress=False)
eb.show(run)""",
]
_TAB = "[data-eb-action='tab']"
_LIVE = "[data-evalbook='live']"
# The visible output areas of the first code cell: does each hold the live view, its text.
_OUTPUTS_JS = """() => {
    const cell = document.querySelector('.jp-CodeCell');
    return [...cell.querySelectorAll('.jp-OutputArea-output')]
        .filter(e => e.getClientRects().length > 0)
        .map(e => ({live: e.querySelector("[data-evalbook='live']") !== null,
                    text: e.innerText.trim().slice(0, 200)}));
}"""
# The case ids of the case table's page, in the order drawn.
_FIRST_CELLS_JS = """(el) => [...el.querySelectorAll(
    "[data-evalbook='case-table-box'] [data-evalbook='case-row'] > div:first-child")]
    .map(c => c.innerText.trim())"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    require("notebook")
    home = tmp_path_factory.mktemp("nb7")
    (home / "work").mkdir()
    try:
        with jupyter_server("notebook", home / "work", home) as found:
            yield found
    except RuntimeError as exc:  # it did not start: its log
        pytest.fail(str(exc))


@pytest.fixture(scope="module")
def browser(server: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with profile_context(tmp_path_factory) as context:
        yield context


def _run_notebook(context: Any, server: Server) -> Any:
    """Open the notebook in Notebook 7, run all its cells (Run menu); the page once the live
    view has drawn its tabs."""
    server.put_notebook(NOTEBOOK, _CELLS)
    page = context.new_page()
    page.goto(server.url(f"notebooks/{NOTEBOOK}"), wait_until="domcontentloaded")
    page.wait_for_selector(".jp-Notebook .jp-CodeCell", timeout=120_000)
    wait_for_kernel(page, server, NOTEBOOK)
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    page.locator(f".jp-OutputArea-output {_LIVE} {_TAB}").first.wait_for(timeout=180_000)
    return page


def _select_tab(view: Any, title: str) -> None:
    view.locator(_TAB, has_text=title).first.click()
    view.locator(f"{_TAB}[aria-selected='true']", has_text=title).first.wait_for(timeout=30_000)


def test_the_view_is_live_in_notebook_7_and_shows_once(
    browser: Any, server: Server, record_property: pytest.RecordProperty
) -> None:
    page = _run_notebook(browser, server)
    try:
        # once: one visible output in the cell, the live view (the static HTML beside it,
        # whose widget view names no model, is hidden), and no widget error
        outputs = page.evaluate(_OUTPUTS_JS)
        assert [o["live"] for o in outputs] == [True], outputs
        assert "Error displaying widget" not in page.inner_text("body")
        assert page.locator(f"{_LIVE} {_TAB}", has_text="Case table").count() == 1
        view = page.locator(_LIVE).first
        view.scroll_into_view_if_needed()
        assert "Headline" in view.inner_text()
        # a tab: the kernel draws the Case table
        _select_tab(view, "Case table")
        view.locator("[data-evalbook='case-table-box']").wait_for(timeout=30_000)
        before = view.evaluate(_FIRST_CELLS_JS)
        assert before == [f"q{i:02d}" for i in range(25)], before
        # a header sort: ascending, then descending, drawn again by the kernel
        header = view.locator(
            "[data-evalbook='table-head'] button", has_text=re.compile("^case_id")
        )
        header.first.click()
        view.locator("[data-evalbook='table-head'] button", has_text="case_id ▲").wait_for(
            timeout=30_000
        )
        header.first.click()
        view.locator("[data-evalbook='table-head'] button", has_text="case_id ▼").wait_for(
            timeout=30_000
        )
        after = view.evaluate(_FIRST_CELLS_JS)
        assert after == [f"q{i:02d}" for i in range(29, 4, -1)], after
        # open a case: the errored one, in full under the table
        errored = after.index("q07")
        view.locator("button[data-eb-action='table.open']").nth(errored).click()
        case = view.locator("[data-evalbook='case-table-view'] [data-evalbook='case']").first
        case.wait_for(timeout=30_000)
        page.wait_for_function(
            "(el) => el.innerText.includes('ZeroDivisionError')", arg=case.element_handle(),
            timeout=30_000,
        )  # fmt: skip
        assert "q07" in case.inner_text()
        # still once after the clicks (a redraw replaces the view, never adds one)
        assert [o["live"] for o in page.evaluate(_OUTPUTS_JS)] == [True]
        IMG.mkdir(parents=True, exist_ok=True)
        # the whole page (Notebook 7's own header and toolbar above), the tab bar at its top
        view.evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(300)
        page.screenshot(path=str(IMG / "notebook7-case-table.png"))
        from notebook import __version__ as version  # the server's (require: installed)

        figure = f"Notebook {version}: one view; tab, sort (asc, desc) and open worked live"
        print(figure)
        record_property("notebook7_live", figure)
    finally:
        page.close()
