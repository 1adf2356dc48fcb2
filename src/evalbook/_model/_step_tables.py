"""The transcript tables: `run.steps()` (one row per step) and `run.tool_calls()` (one per call).

Both are built from the samples' transcripts, in slot order (input order, then epoch) and step
order; a sample without a transcript has no rows. The columns are pinned in docs/transcripts.md.

A step's `tool_name`, `tool_call_id` and `tool_args` say which call it is about: on a tool
result, the call it answers; on an assistant message that makes one call, that call; an
assistant message that makes several has their names joined by ", " in `tool_name` (each call
is a row of `run.tool_calls()`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd

from ._results import Results
from ._transcript import Message, ToolCall, Transcript

__all__ = [
    "STEP_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "step_rows",
    "steps_frame",
    "steps_table",
    "tool_calls_table",
]

STEP_COLUMNS = [
    "case_id",
    "epoch",
    "step",
    "role",
    "content",
    "tool_name",
    "tool_call_id",
    "tool_args",
    "error",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_s",
]
TOOL_CALL_COLUMNS = [
    "case_id",
    "epoch",
    "step",
    "call_id",
    "tool_name",
    "tool_args",
    "result_step",
    "ok",
    "error",
    "latency_s",
]
_NAN = math.nan


def _present(results: Results) -> list[tuple[int, Transcript]]:
    """The samples that have a transcript, as (slot, transcript), in slot order."""
    if not results.has_transcripts:
        return []
    found = results.read_transcripts()
    return [(i, t) for i, t in enumerate(found) if t is not None and results.steps[i, 0] >= 0]


def _num(value: float | None) -> float:
    return _NAN if value is None else float(value)


def _category(values: list[str | None]) -> pd.Categorical:
    return pd.Categorical(values)


def steps_table(results: Results) -> pd.DataFrame:
    """One row per (case_id, epoch, step), `step` 0-based; no rows for a sample without one."""
    return steps_frame(
        (results.case_id_of(pos), results.epoch_of(pos), step_rows(t.messages))
        for pos, t in _present(results)
    )


def step_rows(messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    """The steps table's rows of one transcript's messages: the columns after `step`, in order."""
    calls: dict[str, ToolCall] = {}
    rows: list[tuple[Any, ...]] = []
    for m in messages:
        name, call_id, args = _about(m, calls)
        rows.append(
            (
                m.role,
                m.content,
                name,
                call_id,
                args,
                m.error,
                m.model,
                _num(m.input_tokens),
                _num(m.output_tokens),
                _num(m.cost),
                _num(m.latency_s),
            )
        )
    return rows


def steps_frame(samples: Iterable[tuple[str, int, Sequence[tuple[Any, ...]]]]) -> pd.DataFrame:
    """The steps table of (case_id, epoch, `step_rows`) of each sample, in the order given."""
    # one entry a sample that has rows: its case id, epoch and row count (the columns are
    # repeated from these by numpy, not built row by row)
    ids: list[str] = []
    epochs: list[int] = []
    counts: list[int] = []
    rows: list[tuple[Any, ...]] = []
    for cid, epoch, found in samples:
        if found:
            ids.append(cid)
            epochs.append(epoch)
            counts.append(len(found))
            rows.extend(found)
    n_rows = np.asarray(counts, dtype=np.int64)
    starts = np.cumsum(n_rows) - n_rows
    width = len(STEP_COLUMNS) - 3
    if rows and set(map(len, rows)) != {width}:
        raise ValueError(f"a steps table row has not {width} columns")
    # each column by one pass over the rows (a zip(*rows) of millions of rows took four times
    # as long), the numbers straight into arrays
    texts = [list(map(itemgetter(j), rows)) for j in range(7)]
    tin, tout, cost, lat = (
        np.fromiter(map(itemgetter(j), rows), dtype=float, count=len(rows)) for j in range(7, width)
    )
    del rows
    role, content, tname, tid, targs, error, model = texts
    frame: dict[str, Any] = {
        "case_id": _repeated(ids, n_rows),
        "epoch": np.repeat(np.asarray(epochs, dtype=np.int32), n_rows),
        "step": (np.arange(len(role)) - np.repeat(starts, n_rows)).astype(np.int32),
        "role": _category(role),
        "content": pd.Series(content, dtype=object),
        "tool_name": _category(tname),
        "tool_call_id": pd.Series(tid, dtype=object),
        "tool_args": pd.Series(targs, dtype=object),
        "error": pd.Series(error, dtype=object),
        "model": _category(model),
        "input_tokens": tin,
        "output_tokens": tout,
        "cost": cost,
        "latency_s": lat,
    }
    # the arrays are this frame's own: not copied again (a copy of 3,050,000 rows a column took 1 s)
    return pd.DataFrame(frame, columns=STEP_COLUMNS, copy=False)


def _repeated(ids: list[str], n_rows: np.ndarray) -> pd.Categorical:
    """`pd.Categorical` of each id repeated its count of times, made of the ids once each:
    the same categories (sorted) and codes as of the repeated list itself."""
    if not ids:
        return pd.Categorical([], categories=[])
    once = pd.Categorical(ids)
    dtype: Any = once.dtype  # pandas-stubs type from_codes' dtype by its codes
    repeated: pd.Categorical = pd.Categorical.from_codes(np.repeat(once.codes, n_rows), dtype=dtype)
    return repeated


def _about(m: Message, calls: dict[str, ToolCall]) -> tuple[str | None, str | None, str | None]:
    """(tool_name, tool_call_id, tool_args) of a step (see the module docstring)."""
    if m.tool_calls:
        for c in m.tool_calls:
            calls[c.id] = c
        if len(m.tool_calls) == 1:
            c = m.tool_calls[0]
            return c.function.name, c.id, c.function.arguments
        return ", ".join(c.function.name for c in m.tool_calls), None, None
    if m.role == "tool" and m.tool_call_id is not None:
        answered = calls.get(m.tool_call_id)
        if answered is None:
            return m.name, m.tool_call_id, None
        return answered.function.name, m.tool_call_id, answered.function.arguments
    return None, None, None


def tool_calls_table(results: Results) -> pd.DataFrame:
    """One row per tool call, in the order the calls were made.

    `result_step` is the step holding the call's result (NaN: none came); `ok` is True when a
    result came without an error; `error` and `latency_s` are the result's.
    """
    rows: list[tuple[Any, ...]] = []
    for pos, transcript in _present(results):
        cid, epoch = results.case_id_of(pos), results.epoch_of(pos)
        rows.extend(_calls_of(cid, epoch, transcript.messages))
    columns: list[Sequence[Any]] = (
        list(zip(*rows, strict=True)) if rows else [[] for _ in TOOL_CALL_COLUMNS]
    )
    frame: dict[str, Any] = {
        "case_id": pd.Categorical(list(columns[0])),
        "epoch": np.asarray(columns[1], dtype=np.int32),
        "step": np.asarray(columns[2], dtype=np.int32),
        "call_id": pd.Series(list(columns[3]), dtype=object),
        "tool_name": pd.Categorical(list(columns[4])),
        "tool_args": pd.Series(list(columns[5]), dtype=object),
        "result_step": np.asarray(columns[6], dtype=float),
        "ok": np.asarray(columns[7], dtype=bool),
        "error": pd.Series(list(columns[8]), dtype=object),
        "latency_s": np.asarray(columns[9], dtype=float),
    }
    return pd.DataFrame(frame, columns=TOOL_CALL_COLUMNS)


def _calls_of(cid: str, epoch: int, messages: Sequence[Message]) -> list[tuple[Any, ...]]:
    results: dict[str, tuple[int, Message]] = {}
    for k, m in enumerate(messages):
        # the first result of a call is its result (a second one answers nothing new)
        if m.role == "tool" and m.tool_call_id is not None:
            results.setdefault(m.tool_call_id, (k, m))
    rows: list[tuple[Any, ...]] = []
    for k, m in enumerate(messages):
        for c in m.tool_calls or ():
            got = results.get(c.id)
            if got is not None and got[0] < k:
                got = None  # a result before its call answers another call of that id
            if got is None:
                rows.append((cid, epoch, k, c.id, c.function.name, c.function.arguments,
                             _NAN, False, None, _NAN))  # fmt: skip
            else:
                step, r = got
                rows.append((cid, epoch, k, c.id, c.function.name, c.function.arguments,
                             float(step), r.error is None, r.error, _num(r.latency_s)))  # fmt: skip
    return rows
