"""The Case table widget: a table box that scrolls sideways to its last column (issue 20: the
right columns were cut at an 848 px output)."""

from __future__ import annotations

import re
from typing import Any

import pytest

import evalbook as eb
from display_fixtures import demo_run
from evalbook.display._case_table import column_width

pytest.importorskip("ipywidgets")


@pytest.fixture()
def table() -> Any:
    return eb.show(demo_run()).table


def test_the_table_box_scrolls_sideways_and_each_line_is_as_wide_as_its_columns(
    table: Any,
) -> None:
    box = table.box
    assert box.layout.overflow == "auto" and box.layout.width == "100%"
    assert "evalbook-case-table" in box._dom_classes  # the browser test finds it by this
    head, rows = box.children
    for line in (head, table.header, rows, *rows.children):
        # a line neither shrinks to the box nor clips (a widget box scrolls by itself)
        assert line.layout.width == "max-content" and line.layout.overflow == "visible"
        assert line.layout.flex == "0 0 auto"
    cells = rows.children[0].children[1]
    for html in (cells.value, table.header.value):
        assert "width: max-content" in html and "max-width" not in html
    # no margin to shift a header off its column: the blank over "open" is its width
    assert head.children[0].layout.width == rows.children[0].children[0].layout.width
    assert head.children[0].layout.margin == rows.children[0].children[0].layout.margin == "0"
    assert [f"{column_width(c, table.names)}px" for c in table.labels] == re.findall(
        r"(\d+px)", table.header.value.split("grid-template-columns: ")[1].split(";")[0]
    )
