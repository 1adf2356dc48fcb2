"""The report of a 10,000-case comparison in a real browser, offline, JavaScript on and off.

Chromium is Debian's (`/usr/bin/chromium`); nothing is downloaded (never `playwright
install`). The page is opened from its file with the network cut (`offline=True`, and every
request that is not the file itself is refused and recorded): it must fetch nothing. With
JavaScript on both charts draw and the console has no error (a blocked fetch or a
Content-Security-Policy violation would be one); with it off the headline, the verdict, the
regressions and each chart's numbers show. Screenshots go to a temporary folder, or to
`docs/img/` with EVALBOOK_UPDATE_SCREENSHOTS=1. Skipped when chromium or Playwright is
missing, except under CI=true.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _chromium import chromium as chromium_browser
from _chromium import screenshots

pytestmark = pytest.mark.browser

IMG = screenshots("evalbook-screenshots-")
N = 10_000


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    frame = pd.DataFrame(
        {"id": [f"q{i:05d}" for i in range(N)], "topic": [f"topic {i % 8}" for i in range(N)]}
    )
    ok = eb.define_score("ok", label="Answer correct", primary=True)

    def make(name: str, worse: bool) -> eb.Run:
        def task(id: str, ctx: Any) -> str:
            ctx.step(role="user", content=f"What is the answer to {id}?")
            answer = "no" if worse and hash(id) % 9 == 0 else "yes"
            ctx.step(role="assistant", content=f"The answer to {id} is {answer}.")
            return f"The answer to {id} is {answer}, because the question says so."

        def score(output: str, id: str) -> object:
            if hash(id) % 50 == 0:
                return eb.Unscored("no reference answer")
            return float(" yes," in output)

        return eb.run(
            frame,
            task=task,
            scorers=[eb.scorer(ok)(score)],
            name=name,
            store=None,
            progress=False,
        )

    base, new = make("main", False), make("pr-123", True)
    target = tmp_path_factory.mktemp("report") / "report.html"
    path = eb.report(new, base, target, by="topic", max_drop=0.02)
    size = path.stat().st_size
    print(f"report of a {N:,}-case comparison: {size:,} bytes")
    assert size <= 8_000_000
    return path


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser() as browser:
        yield browser


def _open(
    chromium: Any, report: Path, *, javascript: bool
) -> tuple[Any, Any, list[str], list[str]]:
    context = chromium.new_context(
        java_script_enabled=javascript, offline=True, viewport={"width": 1100, "height": 1300}
    )
    fetched: list[str] = []
    errors: list[str] = []
    url = report.as_uri()

    def route(r: Any) -> None:
        if r.request.url == url:
            r.continue_()
        else:
            fetched.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url, wait_until="load")
    return context, page, fetched, errors


def test_report_with_javascript_draws_its_charts_offline(chromium: Any, report: Path) -> None:
    context, page, fetched, errors = _open(chromium, report, javascript=True)
    try:
        page.wait_for_function(
            "document.querySelectorAll('[data-evalbook=chart] .main-svg').length >= 2",
            timeout=60_000,
        )
        assert fetched == [] and errors == []
        assert page.locator("[data-evalbook=headline]").first.is_visible()
        page.screenshot(path=str(IMG / "report.png"))
    finally:
        context.close()


def test_report_without_javascript_shows_headline_and_regressions(
    chromium: Any, report: Path
) -> None:
    context, page, fetched, _ = _open(chromium, report, javascript=False)
    try:
        assert fetched == []
        headline = page.locator("[data-evalbook=headline]").first
        assert headline.is_visible() and "Answer correct" in headline.inner_text()
        verdict = page.locator("[data-evalbook=verdict]")
        assert verdict.is_visible() and "check FAILED" in verdict.inner_text()
        shown = page.locator("[data-evalbook=shown]")
        assert shown.is_visible() and "showing 50 of" in shown.inner_text()
        first = page.locator("[data-evalbook=regression]").first
        assert first.is_visible() and "is yes, because" in first.inner_text()  # the diff
        numbers = page.locator("[data-evalbook=chart-numbers]")
        assert numbers.count() == 2 and numbers.first.is_visible()
        page.screenshot(path=str(IMG / "report-nojs.png"))
        first.screenshot(path=str(IMG / "report-nojs-regression.png"))
    finally:
        context.close()
