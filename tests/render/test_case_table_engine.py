"""The case table engine: vectorised filters and sorts equal naive per-row ones."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._render._case_table import CaseTableFilter, table_rows

_TEXT = st.sampled_from(["a", "B", "ab", "Ba", "c", ""]) | st.none()
_ROWS = st.lists(
    st.tuples(_TEXT, st.floats(0, 1) | st.none(), st.sampled_from(["ran", "errored"])),
    max_size=30,
)


def _frame(rows: list[tuple[str | None, float | None, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "case_id": [f"c{i}" for i in range(len(rows))],
            "prompt": pd.Series([r[0] for r in rows], dtype=object),
            "output": pd.Series([r[0] for r in rows], dtype=object),
            "outcome": [r[2] for r in rows],
            "s": np.array([np.nan if r[1] is None else r[1] for r in rows], dtype=float),
        }
    )


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.sampled_from(["a", "B", "c0", "x"]), st.sampled_from(["ran", "errored"]))
def test_search_and_outcome_equal_a_naive_filter(rows, word, outcome) -> None:  # type: ignore[no-untyped-def]
    frame = _frame(rows)
    got = table_rows(frame, CaseTableFilter(search=word, outcome=outcome)).tolist()
    want = [
        i
        for i, r in enumerate(rows)
        if r[2] == outcome
        and (word.lower() in f"c{i}".lower() or word.lower() in (r[0] or "").lower())
    ]
    assert got == want


@settings(max_examples=60, deadline=None)
@given(_ROWS, st.sampled_from(["s", "prompt"]), st.booleans())
def test_sort_is_a_stable_permutation_missing_last(rows, column, descending) -> None:  # type: ignore[no-untyped-def]
    frame = _frame(rows)
    got = table_rows(frame, CaseTableFilter(sort=column, descending=descending)).tolist()
    assert sorted(got) == list(range(len(rows)))
    keys = [r[1] if column == "s" else r[0] for r in rows]
    present = [i for i in range(len(rows)) if keys[i] is not None]
    want = sorted(present, key=lambda i: keys[i], reverse=descending)  # type: ignore[arg-type,return-value]
    # sorted(reverse=True) keeps equal keys in input order too: both stable
    assert got == want + [i for i in range(len(rows)) if keys[i] is None]
