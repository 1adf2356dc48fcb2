"""`eb.show`'s one anywidget: its message protocol (docs/architecture.md), its controls drawn as
HTML, the case table's pager and search, and escaping in every pane (issue 35)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, FakeComparison, demo_run, evil_run
from evalbook.display._controls import Pager

pytest.importorskip("anywidget")

VIEW_JS = Path(eb.__file__).parent / "display" / "_static" / "view.js"


class Wire:
    """The front end's side of the widget's comm: what it sends, what the kernel answered."""

    def __init__(self, view: Any) -> None:
        self.view = view
        self.received: list[dict[str, Any]] = []
        view.send = lambda content, buffers=None: self.received.append(content)

    def send(self, action: str, value: str = "") -> str:
        self.view._handle_custom_msg({"action": action, "value": value}, [])
        html = self.received[-1]["html"]
        assert isinstance(html, str)
        return html


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return demo_run()


def test_hello_is_answered_with_the_views_html_and_an_action_with_the_new_html(
    run: eb.Run,
) -> None:
    view = eb.show(run)
    wire = Wire(view)
    first = wire.send("hello")
    assert 'data-eb-action="tab"' in first and "Headline" in first
    assert 'data-evalbook="run-cards"' in first  # the Headline tab, shown first
    cases = wire.send("tab", "3")
    assert 'data-eb-action="explorer.outcome"' in cases and "run-cards" not in cases
    errored = wire.send("explorer.outcome", "3")  # the option's position: "errored"
    assert "1 of 12 cases match" in errored and "ZeroDivisionError" in errored
    assert len(wire.received) == 3 and view.sent == 3
    assert wire.send("no.such.control", "1") == view.html()  # a stale action: redrawn as is


def test_an_action_that_fails_shows_its_error_in_the_view(run: eb.Run) -> None:
    view = eb.show(run)
    wire = Wire(view)

    def broken(_value: str) -> None:
        raise RuntimeError("<script>boom</script>")

    view.handlers["broken"] = broken
    html = wire.send("broken")
    assert "could not do" in html and "&lt;script&gt;boom" in html and "<script>" not in html


def test_the_widget_state_holds_no_html_of_the_view(run: eb.Run) -> None:
    """Item 6: a notebook saved with its widget state restores no frozen copy of the view."""
    view = eb.show(run)
    Wire(view).send("hello")
    state = json.dumps(view.get_state(), default=str)
    for marker in ("run-cards", "run-header", "case-table", "Headline"):
        assert marker not in state
    assert view._esm == VIEW_JS.read_text(encoding="utf-8")  # the module, as shipped


def test_the_front_end_module_is_thin_and_sends_what_the_protocol_says() -> None:
    js = VIEW_JS.read_text(encoding="utf-8")
    assert "export default" in js and "import " not in js  # a plain ES module, no build
    assert len(js.splitlines()) <= 200
    for needle in ('send("hello"', "msg:custom", "data-eb-action", "data-eb-value", "250"):
        assert needle in js


def test_a_script_in_every_field_is_escaped_in_every_pane() -> None:
    view = eb.show(evil_run())
    wire = Wire(view)
    shown = [wire.send("hello")]
    for i in range(len(view.tabs.titles)):
        shown.append(wire.send("tab", str(i)))
    shown.append(wire.send("tab", "3"))
    for _, pos in view.explorer.cases.options:
        shown.append(wire.send("explorer.cases", str(pos)))
    shown.append(wire.send("tab", "4"))
    for row in list(view.table.shown):
        shown.append(wire.send("table.open", str(row)))
    shown.append(wire.send(f"table.head.{view.table.labels.index(EVIL)}"))
    shown.append(wire.send("table.search", EVIL))
    assert view.table.shown  # the search finds the case whose id is the script, as text
    for html in shown:
        assert "<script" not in html.lower()
    assert any(EVIL_ESCAPED in html for html in shown)


def test_a_comparison_answers_tabs_and_pairs() -> None:
    view = eb.show(FakeComparison(demo_run(), demo_run("candidate"), text=EVIL))
    wire = Wire(view)
    assert "Summary" in wire.send("hello")
    html = wire.send("tab", "1")
    assert "3 of 3 pairs match" in html and 'data-eb-action="pairs.search"' in html
    html = wire.send("pairs.cases", "2")  # the third pair: the case id with the script
    assert "<script" not in html.lower() and EVIL_ESCAPED in html
    html = wire.send("pairs.change", "3")  # "regressed"
    assert view.change.value == "regressed" and "2 of 3 pairs match" in html
    html = wire.send("tab", "2")
    assert "Warnings (1)" in html and "<script" not in html.lower()


def _big(n: int) -> eb.Run:
    data = pd.DataFrame({"q": [f"Row{i}" for i in range(n)], "note": ["x"] * n})
    return eb.run(data, task=lambda q, note: q.lower(), scorers=[lambda output: 1.0],
                  store=None, progress=False)  # fmt: skip


def test_the_case_table_pager_goes_first_last_and_jumps_and_never_sends_over_100_rows() -> None:
    view = eb.show(_big(260))
    table = view.table
    wire = Wire(view)
    wire.send("tab", "4")
    assert table.pager.page.label == "page 1 of 11 · rows 1–25 of 260"
    html = wire.send("table.page", "last")
    assert "page 11 of 11 · rows 251–260 of 260" in html and len(table.shown) == 10
    assert html.count('data-evalbook="table-line"') == 10
    wire.send("table.page", "prev")
    assert table.page == 9
    html = wire.send("table.page", "5")  # a page number typed in (1-based)
    assert table.page == 4 and "rows 101–125 of 260" in html
    assert wire.send("table.page", "999").count("page 11 of 11") == 1  # past the end: the last
    wire.send("table.page", "first")
    assert table.page == 0 and len(table.shown) == 25
    for size in (table.pager.size, view.explorer.pager.size, view.explorer.pager.size):
        assert size <= 100
    # a filter goes back to the first page
    wire.send("table.page", "next")
    wire.send("table.sort", str(1 + table.labels.index("q")))
    assert table.page == 0


def test_the_case_table_search_is_a_case_insensitive_substring_of_id_inputs_and_output() -> None:
    view = eb.show(_big(260))
    table = view.table
    view.act("tab", "4")
    html = view.act("table.search", "ROW25")  # the input "Row25", "Row250" … "Row259"
    ids = sorted(str(table.frame["q"].iloc[i]) for i in table.shown)
    assert ids == sorted(["Row25", *(f"Row{250 + i}" for i in range(10))])
    assert "11 of 260 rows" in str(table.count.value) and 'value="ROW25"' in html
    view.act("table.search", "")
    assert len(table.positions) == 260


def test_no_dropdown_starts_blank(run: eb.Run) -> None:
    """Item 8: every dropdown shows its value (a `<select>` with no option selected is blank)."""
    view = eb.show(run)
    for i in range(len(view.tabs.titles)):
        html = view.act("tab", str(i))
        for select in re.findall(r"<select[^>]*>.*?</select>", html, flags=re.S):
            if "<option" in select:
                assert select.count(" selected>") == 1, select[:300]
    view.table.slice_by.value = "expected"
    assert "selected>expected</option>" in view.table.html()


def test_the_header_click_sorts_through_the_message(run: eb.Run) -> None:
    view = eb.show(run)
    table = view.table
    i = table.labels.index("answer.correct")
    view.act("tab", "4")
    html = view.act(f"table.head.{i}")
    assert table.sort.value == "answer.correct" and "answer.correct ▲" in html
    assert "selected>answer.correct</option>" in html  # the sort dropdown follows
    view.act(f"table.head.{i}")
    view.act(f"table.head.{i}")
    assert table.sort.value is None and not table.descending.value


def test_the_outcome_passed_reads_ran(run: eb.Run) -> None:
    view = eb.show(run)
    html = view.act("tab", "3")
    assert "q01 · ran · 1" in html and "· passed ·" not in html
    assert '<option value="1">ran</option>' in html  # the outcome filter's word


def test_review_buttons_label_through_the_message() -> None:
    run = demo_run()
    review = eb.review(run, score="answer.correct", labeler="t")
    wire = Wire(review)
    html = wire.send("hello")
    assert 'data-eb-action="review.value.1"' in html and "0 of" in html
    wire.send("review.note", "<b>checked</b>")
    html = wire.send("review.value.1")
    assert "1 of" in html and review.note.value == ""
    labels = run.labels()
    assert labels["label"].tolist() == [1.0] and labels["note"].tolist() == ["<b>checked</b>"]
    assert "<b>checked" not in html


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(0, 5_000),
    size=st.integers(1, 100),
    clicks=st.lists(
        st.one_of(
            st.sampled_from(["first", "prev", "next", "last", "", "x", "-3"]),
            st.integers(-10, 10_000).map(str),
        ),
        max_size=12,
    ),
)
def test_any_clicks_leave_the_pager_on_a_page_that_exists(
    total: int, size: int, clicks: list[str]
) -> None:
    pager = Pager("p", size, total)
    for click in clicks:
        pager.receive(click)
        page = pager.page
        assert 0 <= pager.value < page.n_pages and page.stop - page.start <= size
        assert page.start < page.stop or total == 0
        assert f'value="{pager.value + 1}"' in pager.html()
    if total:
        pager.receive("last")
        assert pager.page.stop == total


def test_the_slice_filter_offers_input_columns_and_a_row_opens_by_a_click_on_it(
    run: eb.Run,
) -> None:
    table = eb.show(run).table
    assert table.slice_by.values == [None, "question", "expected"]  # not outcome or origin
    line = table.row_lines()[0]
    # the "open" button and the row's cells both send "open" for the row
    assert line.count(f'data-eb-action="table.open" data-eb-value="{table.shown[0]}"') == 2
