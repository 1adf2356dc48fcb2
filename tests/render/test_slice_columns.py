"""`slice_columns`: exactly the columns with at most `MAX_SLICES` distinct values (missing counts
as one), however many rows and wherever in the column the values first appear."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._render._run_slices import MAX_SLICES, slice_columns


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(1, 700))
    columns = {}
    for j in range(draw(st.integers(1, 4))):
        k = draw(st.integers(1, MAX_SLICES + 5))  # distinct values around the bound
        late = draw(st.booleans())  # the column's variety only at its end
        codes = np.zeros(n, dtype=int) if late else np.arange(n) % k
        if late:
            codes[-min(k, n) :] = np.arange(min(k, n))
        values = pd.Series(
            [f"v{c}" for c in codes], dtype=draw(st.sampled_from(["object", "string[pyarrow]"]))
        )
        if draw(st.booleans()):
            values.iloc[draw(st.integers(0, n - 1))] = None
        columns[f"c{j}"] = values
    return pd.DataFrame(columns)


@settings(max_examples=60, deadline=None)
@given(frames())
def test_slice_columns_are_those_with_few_values(frame: pd.DataFrame) -> None:
    naive = [c for c in frame.columns if frame[c].nunique(dropna=False) <= MAX_SLICES]
    assert slice_columns(frame) == naive


def test_a_column_of_lists_is_left_out() -> None:
    frame = pd.DataFrame({"tags": [["a"], ["b"]] * 300, "topic": ["x", "y"] * 300})
    assert slice_columns(frame) == ["topic"]
