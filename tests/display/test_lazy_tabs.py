"""`eb.show(run)` makes its Unscored reasons, Cases and Case table tabs when they are first shown
or acted on (on a million samples they cost seconds a reader of the headline need not wait
for); the static table is built from its own rows only, and reads as the full table's first."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._render._case_table import case_table_html, table_frame

pytest.importorskip("anywidget")


def _run(n: int, epochs: int = 1) -> eb.Run:
    data = pd.DataFrame({"id": [f"c{i:03d}" for i in range(n)], "q": [f"<q{i}>" for i in range(n)],
                         "topic": [["a", "b", None][i % 3] for i in range(n)]})  # fmt: skip

    def task(q: str) -> str:
        if q.endswith("7>"):
            raise KeyError(q)
        return q.upper()

    def length(output: str) -> float:
        if output.endswith("5>"):
            raise eb.SkipScore("too_long")
        return float(len(output) % 2)

    return eb.run(data, task=task, scorers=[length], epochs=epochs, store=None, progress=False)


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return _run(60)


def test_the_case_tabs_are_made_when_first_shown_or_acted_on(run: eb.Run) -> None:
    view = eb.show(run)
    lazy = view.tabs.children[2:]
    assert [tab.made for tab in lazy] == [False, False, False]
    first = view.act("hello")
    assert 'data-evalbook="run-cards"' in first and "case-table" not in first
    # an action of the Case table before its tab was opened (a stale front end): made, done
    paged = view.act("table.page", "next")
    assert [tab.made for tab in lazy] == [False, False, True]
    assert "case-table" not in paged  # the Headline tab is still the one shown
    shown = view.act("tab", "4")
    assert "rows 26–50 of 60" in shown  # the page the action turned to
    assert "too_long" in view.act("tab", "2") and lazy[0].made
    assert view.explorer is view.tabs.children[3].pane and lazy[1].made


def test_the_static_table_is_the_full_tables_first_rows(run: eb.Run) -> None:
    static = eb.show(run)._static_html
    assert "the first 25 of 60 rows" in static
    assert static.endswith(case_table_html(run)) and "&lt;q24&gt;" in static
    assert "&lt;q25&gt;" not in static and "<q" not in static  # escaped, and only its rows


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 30), rows=st.integers(0, 35), epochs=st.integers(1, 3))
def test_a_frame_of_the_first_rows_equals_the_full_frames_head(
    n: int, rows: int, epochs: int
) -> None:
    run = _run(n, epochs)
    head, full = table_frame(run, rows), table_frame(run).iloc[:rows]
    assert list(head.columns) == list(full.columns) and len(head) == min(rows, n * epochs)
    for column in full.columns:  # as values: a category the head does not hold is no matter
        a = head[column].to_numpy(dtype=object)
        b = full[column].to_numpy(dtype=object)
        same = [x == y or (pd.isna(x) and pd.isna(y)) for x, y in zip(a, b, strict=True)]
        assert all(same), column
    assert np.array_equal(head["_case"], full["_case"])
    # each case's input, once for each of its epochs
    expected = np.repeat(run.data["q"].to_numpy(dtype=object), epochs)[:rows]
    assert list(full["q"]) == list(expected)


def test_input_columns_of_several_arrow_chunks_repeat_per_epoch() -> None:
    # as load_run reads them: Arrow text in one chunk per Parquet row group
    run = _run(9, epochs=2)
    chunked = pa.chunked_array([[f"t{i}" for i in range(4)], [f"t{i}" for i in range(4, 9)]])
    run.data["topic"] = pd.Series(pd.arrays.ArrowStringArray(chunked))
    assert run.data["topic"].array._pa_array.num_chunks == 2
    for rows in (None, 3, 8, 18):
        frame = table_frame(run, rows)
        want = [f"t{i // 2}" for i in range(18)][:rows]
        assert list(frame["topic"]) == want, rows
