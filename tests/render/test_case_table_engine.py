"""The case table engine: vectorised filters and sorts equal naive per-row ones, for text held
as Python objects and as Arrow text, and again on the same frame (each column's codes, text and
sort orders are computed once per frame and reused)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._render._case_table import (
    ORIGINS_COLUMN,
    CaseTableFilter,
    _text_arrow,
    reasons,
    table_rows,
)
from evalbook._render._style import is_missing
from evalbook._util._text import clean

# text with cased non-ASCII letters and regex characters (a search is a plain substring)
_TEXT = (
    st.sampled_from(["a", "B", "ab", "Ba", "c", "", "é", "xÉ", ".*", "a(b", "10", "9"]) | st.none()
)
_ORIGINS = st.sampled_from([frozenset(), frozenset({"task"}), frozenset({"grader", "task"})])
_ROW = st.tuples(
    _TEXT,  # prompt
    st.floats(0, 1) | st.none(),  # the score s
    st.sampled_from(["passed", "errored"]),  # outcome
    _TEXT,  # output
    st.integers(-3, 12),  # level
    _ORIGINS,
)
_ROWS = st.lists(_ROW, max_size=30)
_WORDS = st.sampled_from(["a", "B", "c0", "x", "É", "é", ".", "(", "1", "9"])
_SORTS = st.sampled_from([None, "s", "prompt", "output", "case_id", "level", "outcome"])
_FILTERS = st.builds(
    CaseTableFilter,
    outcome=st.sampled_from(["all", "passed", "errored"]),
    origin=st.sampled_from(["all", "task", "grader"]),
    slice_by=st.sampled_from([None, "prompt"]),
    slice_value=st.sampled_from(["all", "a", "B", "—", "é"]),
    search=st.sampled_from(["", "a", "B", "c1", "É", ".", "(", "1"]),
    sort=_SORTS,
    descending=st.booleans(),
)

Row = tuple[str | None, float | None, str, str | None, int, frozenset[str]]


def _frame(rows: list[Row], arrow: bool) -> pd.DataFrame:
    """A table frame of `rows`; `arrow`: its text columns as Arrow text (pandas' `str`), else
    as Python objects."""
    kind: Any = "str" if arrow else object
    return pd.DataFrame(
        {
            "case_id": pd.Series([f"c{i}" for i in range(len(rows))], dtype=kind),
            "outcome": pd.Series([r[2] for r in rows], dtype=kind),
            "s": np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float),
            "s status": ["unscored" if r[1] is None else "scored" for r in rows],
            "prompt": pd.Series([r[0] for r in rows], dtype=kind),
            "output": pd.Series([r[3] for r in rows], dtype=kind),
            "level": np.array([r[4] for r in rows], dtype=np.int64),
            ORIGINS_COLUMN: pd.Series([r[5] for r in rows], dtype=object),
        }
    )


def _key(rows: list[Row], i: int, column: str) -> Any:
    """Row i's value in `column` as the naive sort reads it (None: missing)."""
    r = rows[i]
    return {"s": r[1], "prompt": r[0], "output": r[3], "case_id": f"c{i}", "level": r[4],
            "outcome": r[2]}[column]  # fmt: skip


def _naive(rows: list[Row], f: CaseTableFilter) -> list[int]:
    """`f` applied row by row: text compared as text (`—`: missing), a search in the case id,
    prompt, output and level ignoring case, a stable sort with missing values last."""
    kept = []
    for i, r in enumerate(rows):
        texts = [f"c{i}", r[0], r[3], str(r[4])]
        if f.outcome != "all" and r[2] != f.outcome:
            continue
        if f.origin != "all" and f.origin not in r[5]:
            continue
        sliced = f.slice_by is not None and f.slice_value != "all"
        if sliced and (r[0] if r[0] is not None else "—") != f.slice_value:
            continue
        if f.search and not any(t is not None and f.search.lower() in t.lower() for t in texts):
            continue
        kept.append(i)
    if f.sort is None:
        return kept
    present = [i for i in kept if _key(rows, i, f.sort) is not None]
    missing = [i for i in kept if _key(rows, i, f.sort) is None]
    # sorted(reverse=True) keeps equal keys in input order too: both stable
    ordered = sorted(present, key=lambda i: _key(rows, i, f.sort), reverse=f.descending)  # type: ignore[arg-type]
    return ordered + missing


@settings(max_examples=150, deadline=None)
@given(_ROWS, st.booleans(), st.lists(_FILTERS, min_size=1, max_size=4))
def test_filters_and_sorts_equal_naive_ones_again_and_again(rows, arrow, filters) -> None:  # type: ignore[no-untyped-def]
    frame = _frame(rows, arrow)
    for f in filters:  # one frame: later filters reuse what earlier ones computed
        assert table_rows(frame, f).tolist() == _naive(rows, f), f


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.booleans(), _WORDS, st.sampled_from(["passed", "errored"]))
def test_search_and_outcome_equal_a_naive_filter(rows, arrow, word, outcome) -> None:  # type: ignore[no-untyped-def]
    frame = _frame(rows, arrow)
    got = table_rows(frame, CaseTableFilter(search=word, outcome=outcome)).tolist()
    assert got == _naive(rows, CaseTableFilter(search=word, outcome=outcome))


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.booleans(), _SORTS, st.booleans())
def test_sort_is_a_stable_permutation_missing_last(rows, arrow, column, descending) -> None:  # type: ignore[no-untyped-def]
    frame = _frame(rows, arrow)
    got = table_rows(frame, CaseTableFilter(sort=column, descending=descending)).tolist()
    assert sorted(got) == list(range(len(rows)))
    assert got == _naive(rows, CaseTableFilter(sort=column, descending=descending))


def test_a_level_sorts_as_a_number_and_text_by_code_point() -> None:
    rows: list[Row] = [("9", 0.5, "passed", "b", 10, frozenset()),
                       ("10", 0.5, "passed", "B", 9, frozenset()),
                       (None, None, "passed", "é", 9, frozenset())]  # fmt: skip
    frame = _frame(rows, arrow=True)
    assert table_rows(frame, CaseTableFilter(sort="level")).tolist() == [1, 2, 0]
    assert table_rows(frame, CaseTableFilter(sort="prompt")).tolist() == [1, 0, 2]
    assert table_rows(frame, CaseTableFilter(sort="output", descending=True)).tolist() == [2, 0, 1]
    # a score (a column with a status beside it) is not searched; the level, as text, is
    assert table_rows(frame, CaseTableFilter(search="0.5")).tolist() == []
    assert table_rows(frame, CaseTableFilter(search="10")).tolist() == [0, 1]


def test_values_without_a_hash_filter_and_sort_by_their_text() -> None:
    frame = pd.DataFrame(
        {
            "case_id": ["a", "b", "c"],
            "tags": pd.Series([["x", "y"], {"k": 1}, None], dtype=object),
            "output": pd.Series([1, "two", 3.5], dtype=object),
        }
    )
    assert table_rows(frame, CaseTableFilter(search='"k"')).tolist() == [1]
    assert table_rows(frame, CaseTableFilter(slice_by="tags", slice_value="—")).tolist() == [2]
    assert table_rows(frame, CaseTableFilter(sort="tags")).tolist() == [0, 1, 2]  # "[" < "{"
    assert table_rows(frame, CaseTableFilter(sort="output")).tolist() == [0, 2, 1]
    assert table_rows(frame, CaseTableFilter(search="TWO")).tolist() == [1]


def test_a_lone_surrogate_is_searched_and_sorted_as_the_run_would_store_it() -> None:
    frame = pd.DataFrame(
        {"case_id": ["a", "b"], "output": pd.Series(["x\ud800", "y"], dtype=object)}
    )
    assert table_rows(frame, CaseTableFilter(search="\\ud800")).tolist() == [0]
    assert table_rows(frame, CaseTableFilter(sort="output", descending=True)).tolist() == [1, 0]


def test_an_input_of_numbers_is_searched_as_text_and_sorted_as_numbers() -> None:
    frame = pd.DataFrame(
        {
            "case_id": ["a", "b", "c"],
            "t": [0.75, 10.0, np.nan],
            "s": [0.75, 0.1, 0.2],
            "s status": ["scored"] * 3,
            "output": ["x", "y", "z"],
        }
    )
    assert table_rows(frame, CaseTableFilter(search="0.75")).tolist() == [0]  # not the score s
    assert table_rows(frame, CaseTableFilter(search="10")).tolist() == [1]
    assert table_rows(frame, CaseTableFilter(sort="t", descending=True)).tolist() == [1, 0, 2]


def test_reasons_are_those_some_row_has() -> None:
    reason = pd.Categorical(
        ["empty", None, "empty", "late"], categories=["unused", "empty", "late"]
    )
    frame = pd.DataFrame({"case_id": list("abcd"), "s": [np.nan] * 4, "s reason": reason})
    assert reasons(frame, "s") == ["empty", "late"]
    assert reasons(frame, "other") == []


# every missing value pandas knows, beside text (with a lone surrogate and non-ASCII)
_MISSING = st.sampled_from(
    [None, float("nan"), pd.NA, pd.NaT, Decimal("NaN"), np.float32("nan"), np.datetime64("NaT")]
)
_TEXTS = st.lists(st.sampled_from(["a", "", "é", "x\ud800y", "日本", "10"]) | _MISSING, max_size=20)


@given(_TEXTS)
def test_text_as_arrow_is_each_value_null_where_pandas_sees_it_missing(values) -> None:  # type: ignore[no-untyped-def]
    column = pd.Series(values, dtype=object)
    arrow = _text_arrow(column)
    if arrow is None:  # read value by value (`text_of`): no text, or a missing pandas
        # does not infer as text's (NaT, Decimal NaN); text with None is always Arrow
        assert not any(isinstance(v, str) for v in values if v is not None) or any(
            is_missing(v) and v is not None for v in values
        )
        return
    expected = [None if is_missing(v) else clean(v) for v in values]
    assert arrow.to_pylist() == expected
