"""`steps_frame` (the steps table of many samples' rows) is the table built row by row: its
columns are repeated from one entry a sample by numpy (issue 31), never a different table; so
is `blocks_frame`, the table of rows pooled into column blocks (an import's worker processes)."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._model import _step_tables
from evalbook._model._step_tables import STEP_COLUMNS, StepBlock, blocks_frame, steps_frame

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
@given(samples=_samples, block=st.integers(1, 7))
def test_the_steps_table_is_the_rows_one_by_one(
    samples: list[tuple[str, int, list[tuple[Any, ...]]]], block: int
) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_step_tables, "BLOCK", block)  # the samples in runs of `block`
        pd.testing.assert_frame_equal(steps_frame(samples), _row_by_row(samples))


def test_a_row_of_another_width_is_refused() -> None:
    row = ("user", "hi", None, None, None, None, None, 1.0, 1.0, 0.0, 0.0)
    with pytest.raises(ValueError, match="columns"):
        steps_frame([("a", 1, [row, row[:-1]])])


@settings(max_examples=200, deadline=None)
@given(samples=_samples, data=st.data())
def test_the_table_of_column_blocks_is_the_rows_one_by_one(
    samples: list[tuple[str, int, list[tuple[Any, ...]]]], data: st.DataObject
) -> None:
    # the samples cut into blocks anywhere, then some of them taken in any order: a block
    # also holds rows the table leaves out (a sample read twice, a slot not in the run)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(samples)))) | {0, len(samples)})
    blocks = [
        (StepBlock([rows for _, _, rows in samples[a:b]]), a) for a, b in itertools.pairwise(cuts)
    ]
    placed = [(block, i - a) for block, a in blocks for i in range(a, a + len(block))]
    order = data.draw(st.permutations(range(len(samples))))
    taken = [k for k in order if data.draw(st.booleans())]
    chosen = [samples[k] for k in taken]
    for k in taken:  # each block gives its rows back as they were
        block, i = placed[k]
        assert _same_rows(block.rows(i), samples[k][2])
    made = blocks_frame((samples[k][0], samples[k][1], *placed[k]) for k in taken)
    pd.testing.assert_frame_equal(made, _row_by_row(chosen))


def _same_rows(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> bool:
    """The same rows, NaN equal to NaN."""

    def same(x: Any, y: Any) -> bool:
        nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        return nan or (type(x) is type(y) and x == y)

    return len(got) == len(want) and all(
        len(a) == len(b) and all(map(same, a, b)) for a, b in zip(got, want, strict=True)
    )
