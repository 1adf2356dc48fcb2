"""The case table: one row per sample, sorted and filtered on the tables, a row opens its
case; the static table (first rows and a note) where widgets don't run."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED, demo_run, evil_run

pytest.importorskip("anywidget")

STATIC_ROWS = 25  # rows of the static table (and of a page of the widget)
# the table's controls, each set after those it depends on (a score's reasons, a slice's values)
CONTROLS = ("score", "status", "reason", "range", "outcome", "origin", "slice_by", "slice_value",
            "sort", "descending")  # fmt: skip


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return demo_run()


def _ids(run: eb.Run, **controls: Any) -> list[str]:
    """The case ids of the rows the Case table tab lists with its controls set."""
    table = eb.show(run).table
    for name in CONTROLS:
        if name in controls:
            getattr(table, name).value = controls[name]
    return [str(table.frame["case_id"].iloc[int(i)]) for i in table.positions]


def _static(run: eb.Run) -> str:
    """The static table (the Case table tab's HTML where widgets don't run)."""
    return str(eb.show(run).table._static_html)


def test_the_columns_are_the_outcome_each_score_origin_inputs_and_output(run: eb.Run) -> None:
    table = eb.show(run).table
    # the `id` column the case ids come from is not shown twice
    assert table.labels == [
        "case_id", "outcome", "answer.correct", "answer.concise", "answer.pass", "origin",
        "question", "expected", "output",
    ]  # fmt: skip
    frame = table.frame
    assert len(frame) == len(run.cases)
    assert frame["answer.correct"].tolist() == pytest.approx(
        run.wide()["answer.correct"].tolist(), nan_ok=True
    )


def test_sorting_by_a_score_puts_missing_values_last(run: eb.Run) -> None:
    ids = _ids(run, sort="answer.correct")
    values = run.wide().set_index("case_id")["answer.correct"]
    got = [values[i] for i in ids]
    assert got[:2] == [0.0, 0.0] and pd.isna(got[-1]) and got[-2] == 1.0
    down = _ids(run, sort="answer.correct", descending=True)
    assert values[down[0]] == 1.0 and down[-1] == ids[-1]


def test_filters_by_outcome_status_reason_range_and_slice(run: eb.Run) -> None:
    assert _ids(run, outcome="errored") == ["q09"]
    assert _ids(run, score="answer.concise", status="unscored") == ["q12"]
    assert _ids(run, score="answer.concise", reason="empty_output") == ["q12"]
    wrong = _ids(run, score="answer.correct", range=(0.0, 0.5))
    assert wrong == ["q05", "q10"]
    assert _ids(run, slice_by="expected", slice_value="42") == ["q02", "q07"]


def test_the_static_table_shows_the_first_rows_and_says_how_many() -> None:
    df = pd.DataFrame({"q": [f"x{i}" for i in range(STATIC_ROWS + 30)]})
    big = eb.run(df, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    html = _static(big)
    assert html.count('data-evalbook="case-row"') == STATIC_ROWS
    assert f"the first {STATIC_ROWS:,} of {STATIC_ROWS + 30:,} rows" in html


def test_every_cell_is_escaped_and_long_output_is_shortened() -> None:
    html = _static(evil_run())
    assert "<script" not in html and EVIL_ESCAPED in html
    df = pd.DataFrame({"q": ["a"]})
    long = eb.run(df, task=lambda q: "w" * 100_000, scorers=[lambda output: 1.0],
                  store=None, progress=False)  # fmt: skip
    cell = _static(long)
    assert "show all 100,000 characters" in cell and "w" * 2_001 not in cell
    assert long.cases["output"][0] == "w" * 100_000


def test_the_widget_sorts_filters_pages_and_opens_a_row(run: eb.Run) -> None:
    view = eb.show(run)
    assert view.tabs.get_title(4) == "Case table"
    table = view.table
    assert len(table.shown) == 12 and "12 of 12 rows" in table.count.value
    view.act("table.outcome", "3")  # as the front end sends it: the option's position
    assert table.outcome.value == "errored" and len(table.shown) == 1
    assert table.outcome.label == "errored"
    view.act("table.open", table.shown[0])  # the row's "open" button

    assert "ZeroDivisionError" in table.detail.value and "q09" in table.detail.value
    table.outcome.value = "all"
    table.sort.value = "answer.correct"
    table.descending.value = True
    # the headers are buttons (a click sorts): the sorted one carries the mark
    assert "answer.correct ▼" in [b.description for b in table.header_buttons]
    table.slice_by.value = "expected"
    table.slice_value.value = "42"
    assert len(table.shown) == 2
    assert table._static_html == _static(run)  # the static table: not the widget's state


def test_the_widget_pages_a_long_run() -> None:
    df = pd.DataFrame({"q": [f"x{i}" for i in range(60)], EVIL: [EVIL] * 60})
    big = eb.run(df, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    table = eb.show(big).table
    assert len(table.shown) == 25 and "page 1 of 3" in table.page_label.value
    for _ in range(3):  # past the last page: stays on it
        table.pager.receive("next")
    assert len(table.shown) == 10 and "page 3 of 3" in table.page_label.value
    assert "rows 51–60 of 60" in table.page_label.value
    assert all("<script" not in line for line in table.row_lines())


def test_a_run_with_epochs_has_a_row_per_sample_and_a_row_opens_its_case() -> None:
    df = pd.DataFrame({"q": ["a", "b"]})
    second = [lambda output: float(output.endswith("2"))]
    flaky = eb.run(df, task=lambda q, epoch: f"{q}{epoch}", epochs=3, store=None,
                   scorers=second, progress=False)  # fmt: skip
    table = eb.show(flaky).table
    assert table.labels[:2] == ["case_id", "epoch"]
    frame = table.frame
    assert frame["output"].tolist() == ["a1", "a2", "a3", "b1", "b2", "b3"]
    assert frame["q"].tolist() == ["a", "a", "a", "b", "b", "b"]
    table.open_row(table.shown[4])  # b's second epoch
    assert "3 epochs" in table.detail.value and "b2" in table.detail.value


def test_control_characters_in_cells_are_shown_escaped() -> None:
    df = pd.DataFrame({"q": ["\x1b[31mred\u202e"]})
    run = eb.run(df, task=lambda q: q + "\x00", scorers=[lambda output: 1.0],
                 store=None, progress=False)  # fmt: skip
    html = _static(run)
    assert "\\x1b[31mred\\u202e" in html and "\\x00" in html
    assert "\x1b" not in html and "\u202e" not in html and "\x00" not in html


def test_filters_by_origin() -> None:
    def task(x: str) -> str:
        if x == "env":
            raise eb.EnvironmentFailure("sandbox down")
        if x == "bug":
            raise KeyError(x)
        return x

    def score(output: str) -> float:
        if output == "bad":
            raise ValueError("scorer bug")
        return 1.0

    df = pd.DataFrame({"id": ["a", "e", "b", "s"], "x": ["ok", "env", "bug", "bad"]})
    with pytest.warns(RuntimeWarning, match="may reflect infrastructure"):
        run = eb.run(df, task=task, scorers=[score], store=None, progress=False)
    table = eb.show(run).table
    assert list(table.origin.options) == ["all", "task", "environment", "grader"]
    assert _ids(run, origin="environment") == ["e"]
    assert _ids(run, origin="task") == ["b"]
    assert _ids(run, origin="grader") == ["s"]  # a scorer's error: its record's origin
    assert _ids(run, origin="all") == ["a", "e", "b", "s"]
