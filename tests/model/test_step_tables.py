"""`steps_frame` (the steps table of many samples' rows) is the table built row by row: its
columns are repeated from one entry a sample by numpy (issue 31), never a different table."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._model._step_tables import STEP_COLUMNS, steps_frame

_maybe = st.none() | st.sampled_from(["a", "b", "é"])
_rows = st.lists(
    st.tuples(
        st.sampled_from(["user", "assistant", "tool", "system"]),
        _maybe, _maybe, _maybe, _maybe, _maybe, _maybe,
        st.floats(0, 9), st.floats(0, 9) | st.just(math.nan), st.just(math.nan), st.floats(0, 1),
    ),
    max_size=4,
)  # fmt: skip
_samples = st.lists(
    st.tuples(st.sampled_from(["c2", "c10", "b", "é", "c1"]), st.integers(1, 3), _rows),
    max_size=6,
)


def _row_by_row(samples: list[tuple[str, int, list[tuple[Any, ...]]]]) -> pd.DataFrame:
    """The table as the definition says: one row per step, `step` 0-based within its sample."""
    rows = [(cid, epoch, k, *row) for cid, epoch, found in samples for k, row in enumerate(found)]
    cols = list(zip(*rows, strict=True)) if rows else [[] for _ in STEP_COLUMNS]
    frame: dict[str, Any] = {}
    for name, col in zip(STEP_COLUMNS, cols, strict=True):
        values = list(col)
        if name in ("case_id", "role", "tool_name", "model"):
            frame[name] = (
                pd.Categorical(values)
                if values or name != "case_id"
                else (pd.Categorical([], categories=[]))
            )
        elif name in ("epoch", "step"):
            frame[name] = np.asarray(values, dtype=np.int32)
        elif name in ("input_tokens", "output_tokens", "cost", "latency_s"):
            frame[name] = np.asarray(values, dtype=float)
        else:
            frame[name] = pd.Series(values, dtype=object)
    return pd.DataFrame(frame, columns=STEP_COLUMNS)


@settings(max_examples=200, deadline=None)
@given(samples=_samples)
def test_the_steps_table_is_the_rows_one_by_one(
    samples: list[tuple[str, int, list[tuple[Any, ...]]]],
) -> None:
    pd.testing.assert_frame_equal(steps_frame(samples), _row_by_row(samples))


def test_a_row_of_another_width_is_refused() -> None:
    row = ("user", "hi", None, None, None, None, None, 1.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="columns"):
        steps_frame([("a", 1, [row, row[:-1]])])
