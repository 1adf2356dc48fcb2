"""The Case table tab: headers that sort when clicked, and a table box that scrolls
sideways to its last column (issue 20: the right columns were cut at an 848 px output)."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, demo_run

pytest.importorskip("anywidget")


@pytest.fixture()
def table() -> Any:
    return eb.show(demo_run()).table


def _shown_ids(table: Any) -> list[str]:
    """The case ids of the page's rows, in the order they are drawn."""
    return [str(table.frame["case_id"].iloc[int(i)]) for i in table.shown]


def _header(table: Any, label: str) -> Any:
    return table.header_buttons[table.labels.index(label)]


def _tracks(table: Any) -> dict[str, int]:
    """Each column's width in px, as a row of the table lays its cells out (its grid)."""
    cells = table.row_lines()[0]
    found = re.search(r"grid-template-columns: ([\d px]+);", cells)
    assert found is not None, cells[:300]
    widths = [int(w) for w in found[1].split("px") if w.strip()]
    assert len(widths) == len(table.labels)
    return dict(zip(table.labels, widths, strict=True))


def test_a_header_click_sorts_ascending_then_descending_then_input_order(table: Any) -> None:
    values = table.run.wide().set_index("case_id")["answer.correct"]
    order = _shown_ids(table)
    assert order == sorted(order)  # input order: q01 … q12
    _header(table, "answer.correct").click()
    up = [values[i] for i in _shown_ids(table)]
    assert up[:2] == [0.0, 0.0] and up[-2] == 1.0 and pd.isna(up[-1])  # missing last
    assert (table.sort.value, table.descending.value) == ("answer.correct", False)
    assert _header(table, "answer.correct").description == "answer.correct ▲"
    _header(table, "answer.correct").click()
    down = [values[i] for i in _shown_ids(table)]
    assert down[0] == 1.0 and down[-3:-1] == [0.0, 0.0] and pd.isna(down[-1])
    assert table.descending.value and _header(table, "answer.correct").description.endswith("▼")
    _header(table, "answer.correct").click()
    assert _shown_ids(table) == order and table.sort.value is None
    assert [b.description for b in table.header_buttons] == table.labels  # no mark left


def test_a_click_on_another_header_starts_ascending_and_the_dropdown_agrees(table: Any) -> None:
    _header(table, "answer.correct").click()
    _header(table, "answer.correct").click()  # descending on one column ...
    _header(table, "output").click()  # ... another column starts ascending
    outputs = [str(table.frame["output"].iloc[int(i)]) for i in table.positions[:12]]
    assert table.sort.value == "output" and not table.descending.value
    assert outputs == sorted(outputs, key=lambda x: (x == "None", x))
    table.sort.value = "case_id"  # the dropdown still sorts, and the header shows it
    table.descending.value = True
    assert _shown_ids(table) == sorted(_shown_ids(table), reverse=True)
    assert _header(table, "case_id").description == "case_id ▼"


def test_a_header_click_filters_and_pages_as_before(table: Any) -> None:
    table.outcome.value = "passed"
    passed = set(_shown_ids(table))
    _header(table, "answer.correct").click()
    assert set(_shown_ids(table)) == passed and table.page == 0


def test_the_table_box_scrolls_sideways_and_each_line_is_as_wide_as_its_columns(
    table: Any,
) -> None:
    html = table.value
    box = re.search(r'<div data-evalbook="case-table-box"[^>]*style="([^"]*)"', html)
    assert box is not None and "overflow: auto" in box[1] and "width: 100%" in box[1]
    lines = re.findall(r'data-evalbook="(?:table-head|table-line)" style="([^"]*)"', html)
    assert len(lines) == 1 + len(table.shown)
    for line in lines:
        # a line neither shrinks to the box nor clips: the box is the one that scrolls
        assert "width: max-content" in line and "overflow: visible" in line
        assert "flex: 0 0 auto" in line
    cells = table.row_lines()[0]
    assert "width: max-content" in cells and "max-width" not in cells
    # the header's buttons have their columns' widths, and no margin to shift them
    tracks = _tracks(table)
    for label, button in zip(table.labels, table.header_buttons, strict=True):
        assert f"width: {tracks[label]}px; flex: 0 0 {tracks[label]}px" in button.html()
        assert "margin: 0" in button.html()
    blank = re.search(r'data-evalbook="table-head"[^>]*><div style="width: (\d+)px', html)
    opener = re.search(r">open</button>", cells)
    assert blank is not None and opener is not None
    assert f"width: {blank[1]}px" in cells  # the header's blank is as wide as "open"
    # a column is wide enough for its label on one button line (score columns: 120 px at least)
    assert tracks["answer.concise"] > 120 and tracks["answer.correct"] > 120


def test_header_labels_are_shown_escaped() -> None:
    df = pd.DataFrame({EVIL: ["a", "b"]})
    run = eb.run(df, task=lambda **kw: "x", scorers=[lambda output: 1.0], store=None,
                 progress=False)  # fmt: skip
    table = eb.show(run).table
    assert EVIL in table.labels  # an input column named with markup
    button = _header(table, EVIL)
    assert button.description == EVIL  # a button's text is text, never markup
    button.click()
    assert table.sort.value == EVIL
    assert all(EVIL not in line for line in table.row_lines())
    assert EVIL not in table.value and EVIL_ESCAPED in table.value
    assert "<script" not in table._static_html and EVIL_ESCAPED in table._static_html
