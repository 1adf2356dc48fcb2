"""Long text: its start in every case view, a control that shows it whole, all of it in the
tables (a 100 kB output)."""

from __future__ import annotations

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, case_view

BIG = "start " + "z" * 100_000  # a 100 kB output
PREVIEW_LIMIT = 400  # characters of a long text shown before its expand control
TEXT_LIMIT = 10_000  # characters of one value in a case view (the start, then "show all")


def _run(outputs: dict[str, str] | None = None) -> eb.Run:
    outputs = outputs or {"big": BIG, "small": "tiny"}
    df = pd.DataFrame({"id": list(outputs), "q": list(outputs)})
    return eb.run(df, task=lambda q: outputs[q], scorers=[lambda output: 1.0],
                  store=None, progress=False)  # fmt: skip


def test_a_long_text_shows_its_start_and_a_details_with_more() -> None:
    html = case_view(_run(), 0)
    start, rest = html.split("<details", 1)
    assert "z" * (PREVIEW_LIMIT - 6) in start and "z" * PREVIEW_LIMIT not in start
    assert "show all 100,006 characters (the first 10,000 here, all in the tables)" in rest
    assert "z" * (TEXT_LIMIT - 6) in rest and "z" * TEXT_LIMIT not in rest


def test_a_short_text_has_no_expand_control() -> None:
    assert "<details" not in case_view(_run(), 1)


def test_the_expanded_text_is_escaped() -> None:
    html = case_view(_run({"evil": EVIL * 100}), 0)
    rest = html.split("<details", 1)[1]
    assert "<script" not in html and rest.count(EVIL_ESCAPED) == 100  # the whole output


def test_the_widgets_show_the_whole_text_on_demand_and_the_table_keeps_it() -> None:
    pytest.importorskip("anywidget")
    run = _run()
    explorer = eb.show(run).explorer
    explorer.cases.value = 0
    assert "z" * TEXT_LIMIT not in explorer.detail.value
    explorer.whole.value = True
    assert "z" * 100_000 in explorer.detail.value
    assert run.cases["output"][0] == BIG
    view = eb.show(eb.compare(run, run))
    view.change.value = "all"
    view.whole.value = True
    assert view.detail.value.count("z" * 100_000) == 2  # both runs' case, whole
