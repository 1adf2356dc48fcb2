"""`eb.report`: one self-contained page — its parts, escaping, no network, plotly.js once,
and its size bound (docs/cli.md)."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _report_runs import EVIL, hostile_runs
from evalbook._render import _report_html
from evalbook._render._figure import plotly_js


class Page(HTMLParser):
    """Every element's tag and attributes, each script's text, and the visible text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in: list[str] = []
        self.feed(text)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)
        if tag == "script":
            self.scripts.append("")

    def handle_endtag(self, tag: str) -> None:
        while self._in and self._in.pop() != tag:
            pass

    def handle_data(self, data: str) -> None:
        if self._in and self._in[-1] == "script":
            self.scripts[-1] += data
        else:
            self.text.append(data)

    def markers(self) -> list[str]:
        return [a["data-evalbook"] or "" for _, a in self.tags if "data-evalbook" in a]

    def visible(self) -> str:
        return " ".join(self.text)


@pytest.fixture(scope="module")
def runs() -> tuple[eb.Run, eb.Run]:
    return hostile_runs()


@pytest.fixture(scope="module")
def page(runs: tuple[eb.Run, eb.Run]) -> str:
    base, new = runs
    return eb.report(new, base, by="topic")


def test_report_has_headline_summary_breakdown_comparison_and_regressions(page: str) -> None:
    parsed = Page(page)
    markers = parsed.markers()
    for part in ("headline", "summary", "unscored", "slices", "comparison", "warnings"):
        assert part in markers, part
    assert markers.count("regression") == 13  # every regressed case (fewer than the cap)
    assert markers.count("output-diff") == 13
    assert "transcript" in markers  # the regressed samples have steps
    text = parsed.visible()
    assert "67%" in text  # the headline value
    assert "showing 13 of 13 regressed cases" in text
    assert "check passed" not in text and "check FAILED" in text  # a case errored: incomplete


def test_untrusted_text_is_escaped_everywhere(page: str) -> None:
    parsed = Page(page)
    # the only scripts: plotly.js and the two charts' calls, whose JSON holds no "<" (so no
    # user text closes them); no user text became an element
    assert len(parsed.scripts) == 3
    assert all("<" not in s for s in parsed.scripts[1:])
    assert EVIL not in page
    assert not [t for t, _ in parsed.tags if t not in _OURS]
    # and the text is there, shown as text: names, labels, ids, reasons, errors, transcripts
    text = parsed.visible()
    for what in (f"base{EVIL}", f"{EVIL} question 0", f"{EVIL} reason", f"{EVIL} answer 0",
                 f"{EVIL}|`0`", f"{EVIL} ok, relabelled", f"topic = {EVIL}1"):  # fmt: skip
        assert what in text, what


_OURS = {"html", "head", "meta", "title", "script", "body", "div", "span", "section", "h1",
         "h2", "b", "br", "details", "summary", "noscript", "table", "tr", "td"}  # fmt: skip


def test_report_fetches_nothing(page: str) -> None:
    parsed = Page(page)
    for tag, attrs in parsed.tags:
        for key in ("src", "href", "action", "data", "poster"):
            value = attrs.get(key)
            assert value is None or not re.match(r"\s*(https?:)?//", value), (tag, key, value)
    assert not [t for t, a in parsed.tags if t in ("link", "iframe", "img", "object")]
    csp = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv")]
    assert csp and "default-src 'none'" in (csp[0]["content"] or "")


def test_plotly_js_is_embedded_once(page: str) -> None:
    js = plotly_js()
    assert page.count(js[:200]) == 1 and js in page
    big = [s for s in Page(page).scripts if len(s) > 100_000]
    assert len(big) == 1
    calls = sum(s.count("Plotly.newPlot(") for s in Page(page).scripts[1:])
    assert calls == 2  # the unscored reasons and the deltas
    assert Page(page).markers().count("chart-numbers") == 2  # each chart's noscript numbers


def test_report_without_baseline_or_charts(runs: tuple[eb.Run, eb.Run]) -> None:
    _, new = runs
    page = _report_html.report_html(new, charts=False)
    parsed = Page(page)
    assert parsed.scripts == []
    assert "headline" in parsed.markers() and "regressions" not in parsed.markers()


def test_report_writes_the_file_and_returns_its_path(
    runs: tuple[eb.Run, eb.Run], tmp_path: Path
) -> None:
    base, new = runs
    path = eb.report(new, base, tmp_path / "r.html")
    assert path == tmp_path / "r.html"
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_report_refuses_what_is_not_a_run() -> None:
    with pytest.raises(eb.ConfigurationError, match="takes a run"):
        eb.report("runs/x")  # type: ignore[call-overload]


def test_report_stays_within_its_bound_whatever_the_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # long, entirely different outputs for every case: the regressions alone would exceed
    # the bound, so the page stops adding them and says how many it shows
    base, new = hostile_runs(150, output_chars=5_000)
    js = len(plotly_js().encode())
    bound = js + 400_000
    monkeypatch.setattr(_report_html, "MAX_BYTES", bound)
    page = eb.report(new, base)
    size = len(page.encode())
    assert size <= bound
    shown = re.search(r"showing (\d+) of (\d+) regressed cases", Page(page).visible())
    assert shown is not None and 0 < int(shown[1]) < int(shown[2]) == 50
    # and under the real bound, the page is the figure the note gives (about plotly.js + a
    # few hundred kB for a 150-case comparison)
    monkeypatch.undo()
    assert len(eb.report(new, base).encode()) <= _report_html.MAX_BYTES


def test_figure_numbers_table_lists_each_trace() -> None:
    df = pd.DataFrame({"x": range(4)})
    ok = eb.define_score("ok", primary=True)
    run = eb.run(
        df,
        task=lambda x: x,
        scorers=[eb.scorer(ok)(lambda x: eb.Unscored("r") if x else 1.0)],
        store=None,
        progress=False,
    )
    html = _report_html.figure_numbers_html(run.plot.unscored())
    assert "scored" in html and "unscored: r" in html


def test_report_bounds_what_grows_with_distinct_values(monkeypatch: pytest.MonkeyPatch) -> None:
    df = pd.DataFrame({"x": range(300)})
    ok = eb.define_score("ok", primary=True)
    run = eb.run(
        df,
        task=lambda x: x,
        scorers=[eb.scorer(ok)(lambda x: eb.Unscored(f"reason {x}") if x % 2 else 1.0)],
        store=None,
        progress=False,
    )
    with pytest.raises(eb.ConfigurationError, match="at most 50 slices"):
        eb.report(run, by="x")
    monkeypatch.setattr(_report_html, "CHART_LIMIT", 10_000)  # 150 reasons: 150 series
    parsed = Page(eb.report(run))
    assert len(parsed.scripts) == 1  # plotly.js, and no chart: its numbers instead
    assert "… 131 more series" in parsed.visible()  # "scored" and 150 reasons: 20 shown
