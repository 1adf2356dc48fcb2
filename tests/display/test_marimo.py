"""The same notebooks in marimo: converted from notebooks/*.ipynb, served headless on 127.0.0.1.

marimo (PyPI) converts each committed notebook with `marimo convert` into a temporary folder and
serves it with `marimo run --headless --no-token` on loopback; Debian's Chromium opens it through
Playwright, in marimo's light theme and its dark one (set in a marimo.toml of a temporary
config home). `eb.show(run)` is one anywidget, which marimo draws natively (as a cell's last
expression, no `mo.ui.anywidget` needed): its tabs, sort and "open" work live there too.
Nothing is fetched from the network (marimo's update check is off). Screenshots go
to a temporary folder, or to `docs/img/` with EVALBOOK_UPDATE_SCREENSHOTS=1. Skipped when
chromium, marimo or Playwright is missing, except under CI=true.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from _chromium import chromium as chromium_browser
from _chromium import screenshots
from _jupyter import free_port

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
IMG = screenshots("evalbook-marimo-shots-")
START_TIMEOUT_S = 90
RUN_TIMEOUT_S = 180


class Marimo:
    """A `marimo run` server of one converted notebook, in one theme."""

    def __init__(self, home: Path, notebook: str, theme: str) -> None:
        self.home = home
        source = home / f"{Path(notebook).stem}.py"
        subprocess.run(
            [sys.executable, "-m", "marimo", "convert", str(NOTEBOOKS / notebook), "-o",
             str(source)],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        config = home / f"config-{theme}" / "marimo"
        config.mkdir(parents=True)
        (config / "marimo.toml").write_text(f'[display]\ntheme = "{theme}"\n')
        self.port = free_port()
        env = {
            **os.environ,
            "EVALBOOK_PROGRESS": "0",
            "MARIMO_SKIP_UPDATE_CHECK": "1",
            "XDG_CONFIG_HOME": str(config.parent),
        }
        self.log_path = home / f"marimo-{theme}.log"
        self.log = self.log_path.open("w")
        self.server = subprocess.Popen(
            [sys.executable, "-m", "marimo", "run", str(source), "--headless", "--no-token",
             "--host", "127.0.0.1", "--port", str(self.port)],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, cwd=home,
        )  # fmt: skip
        self.url = f"http://127.0.0.1:{self.port}/"
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=2):
                    break
            except OSError:
                if self.server.poll() is not None or time.monotonic() > deadline:
                    self.close()
                    pytest.fail("marimo did not start:\n" + self.log_path.read_text())
                time.sleep(0.5)

    def close(self) -> None:
        self.server.terminate()
        try:
            self.server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.server.kill()
        self.log.close()


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser("marimo") as browser:
        yield browser


def _open(chromium: Any, app: Marimo) -> Any:
    """The app's page once every cell has run (marimo marks a running cell; wait for none)."""
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(app.url, wait_until="domcontentloaded")
    page.wait_for_selector("[data-evalbook='run']", timeout=RUN_TIMEOUT_S * 1000)
    return page


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_quickstart_shows_its_run_in_marimo(chromium: Any, tmp_path: Path, theme: str) -> None:
    app = Marimo(tmp_path, "quickstart.ipynb", theme)
    try:
        page = _open(chromium, app)
        card = page.locator("[data-evalbook='run']").first
        card.scroll_into_view_if_needed()
        text = card.inner_text()
        assert "Headline · answer.pass" in text and "completed" in text, text[:500]
        assert "errored 1" in text
        # the theme took: marimo's dark page behind the card, and the card's text reads on it
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        color = card.evaluate("e => getComputedStyle(e).color")
        dark = _luminance(background) < 0.2
        assert dark == (theme == "dark"), background
        assert abs(_luminance(color) - _luminance(background)) > 0.4, (color, background)
        IMG.mkdir(parents=True, exist_ok=True)
        suffix = "-dark" if theme == "dark" else ""
        card.screenshot(path=str(IMG / f"marimo-headline{suffix}.png"))
        page.close()
    finally:
        app.close()


# eb.show's tab bar (HTML buttons the kernel draws; the anywidget's front end sends the clicks)
_TAB = "[data-eb-action='tab']"
# The case ids of the case table's page, in the order drawn
_FIRST_CELLS_JS = """(el) => [...el.querySelectorAll(
    "[data-evalbook='case-table-box'] [data-evalbook='case-row'] > div:first-child")]
    .map(c => c.innerText.trim())"""


def _select_tab(view: Any, title: str) -> None:
    view.locator(_TAB, has_text=title).first.click()
    view.locator(f"{_TAB}[aria-selected='true']", has_text=title).first.wait_for(timeout=30_000)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_live_view_clicks_sorts_and_opens_a_case_in_marimo(
    chromium: Any, tmp_path: Path, theme: str, record_property: pytest.RecordProperty
) -> None:
    app = Marimo(tmp_path, "quickstart.ipynb", theme)
    try:
        page = _open(chromium, app)
        view = page.locator("[data-evalbook='live']", has=page.locator(_TAB)).first
        view.wait_for(timeout=RUN_TIMEOUT_S * 1000)  # the kernel answered the view's hello
        view.scroll_into_view_if_needed()
        assert "Headline" in view.inner_text()
        _select_tab(view, "Case table")
        view.locator("[data-evalbook='case-table-box']").wait_for(timeout=30_000)
        before = view.evaluate(_FIRST_CELLS_JS)
        assert len(before) > 1, before
        header = view.locator("[data-evalbook='table-head'] button", has_text="case_id")
        header.first.click()
        view.locator("[data-evalbook='table-head'] button", has_text="case_id ▲").wait_for(
            timeout=30_000
        )
        header.first.click()  # a second click: descending, redrawn by the kernel
        view.locator("[data-evalbook='table-head'] button", has_text="case_id ▼").wait_for(
            timeout=30_000
        )
        after = view.evaluate(_FIRST_CELLS_JS)
        assert after == sorted(after, reverse=True) and after[0] == max(before), after
        # the case id cell, which rows scroll under sideways, is opaque in marimo's own page
        # colour (the browser's Canvas colour was a darker band in its dark theme)
        sticky = view.evaluate(
            "(el) => getComputedStyle(el.querySelector(\"[data-evalbook='case-table-box'] "
            "[data-evalbook='case-row'] > div:first-child\")).backgroundColor"
        )
        page_colour = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        same = all(abs(a - b) < 1 for a, b in zip(_rgb(sticky), _rgb(page_colour), strict=True))
        assert same and "rgba" not in sticky, (sticky, page_colour)
        view.locator("button[data-eb-action='table.open']").first.click()
        case = view.locator("[data-evalbook='case-table-view'] [data-evalbook='case']").first
        case.wait_for(timeout=30_000)
        assert after[0] in case.inner_text()
        IMG.mkdir(parents=True, exist_ok=True)
        suffix = "-dark" if theme == "dark" else ""
        view.screenshot(path=str(IMG / f"marimo-case-table{suffix}.png"))
        _select_tab(view, "Cases")
        view.locator("select[data-eb-action='explorer.outcome']").select_option("errored")
        page.wait_for_function(
            "(el) => el.innerText.includes('ZeroDivisionError')", arg=view.element_handle(),
            timeout=30_000,
        )  # fmt: skip
        # the view's text reads on marimo's theme (it inherits the page's colour)
        background = page.evaluate("() => getComputedStyle(document.body).backgroundColor")
        color = view.evaluate("e => getComputedStyle(e).color")
        assert abs(_luminance(color) - _luminance(background)) > 0.4, (color, background)
        view.screenshot(path=str(IMG / f"marimo-cases{suffix}.png"))
        figure = f"marimo {theme}: tab, sort (asc, desc), open and filter worked live"
        print(figure)
        record_property("marimo_live", figure)
        page.close()
    finally:
        app.close()


def _rgb(css: str) -> list[float]:
    """A computed colour's red, green and blue (0-255): `rgb(r, g, b)`, `rgba(...)` (0-255) or
    `color(srgb r g b)` (0-1), as Chromium writes them."""
    inside = css[css.index("(") + 1 : css.index(")")]
    if inside.startswith("srgb"):
        return [255 * float(p) for p in inside.split()[1:4]]
    return [float(p) for p in inside.split(",")[:3]]


def _luminance(css: str) -> float:
    """The relative luminance (WCAG) of a computed colour (`_rgb`)."""
    parts = _rgb(css)

    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in parts)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b
