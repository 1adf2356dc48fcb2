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
from typing import Any

import numpy as np
import pandas as pd

from ._results import Results
from ._transcript import Message, ToolCall, Transcript

__all__ = [
    "STEP_COLUMNS",
    "TOOL_CALL_COLUMNS",
    "StepBlock",
    "blocks_frame",
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
    listed = list(samples)
    placed: list[tuple[StepBlock, int]] = []  # each sample's block: one a run of `BLOCK`
    for start in range(0, len(listed), BLOCK):
        block = StepBlock([found for _, _, found in listed[start : start + BLOCK]])
        placed.extend((block, i) for i in range(len(block)))
    return blocks_frame(
        (cid, epoch, *where) for (cid, epoch, _), where in zip(listed, placed, strict=True)
    )


# the samples a block holds (`steps_frame`, an import's runs of samples): each block's columns
# are made at once, by zip(*rows), which is quick for thousands of rows (for millions it took
# four times as long as one pass a column)
BLOCK = 500


class StepBlock:
    """The steps table rows (`step_rows`) of several samples, column by column.

    An import's worker process hands its samples' rows back so: a few arrays a run of samples
    instead of a tuple a row (3,050,000 of them at 200,000 samples, each pickled, unpickled and
    walked again to make the table). `role`, `tool_name` and `model` are kept as codes of their
    values (-1: None) in first-seen order; the text columns as object arrays; the numbers as
    one float array, a row per column.
    """

    __slots__ = ("categories", "codes", "ends", "numbers", "texts")

    def __init__(self, samples: Sequence[Sequence[tuple[Any, ...]]]) -> None:
        rows = [row for found in samples for row in found]
        width = len(STEP_COLUMNS) - 3
        if rows and set(map(len, rows)) != {width}:
            raise ValueError(f"a steps table row has not {width} columns")
        # where each sample's rows end (its rows start where the one before it ends)
        self.ends = np.cumsum(np.fromiter(map(len, samples), dtype=np.int64, count=len(samples)))
        # a block is a run of samples' rows (thousands): zip(*rows) makes its columns at once
        columns = list(zip(*rows, strict=True)) if rows else [() for _ in range(width)]
        self.codes: list[np.ndarray] = []
        self.categories: list[list[str]] = []
        for j in _CODED:
            codes, values = _coded(columns[j])
            self.codes.append(codes)
            self.categories.append(values)
        self.texts = [_objects(columns[j]) for j in _TEXTS]
        self.numbers = np.array(columns[7:width], dtype=float).reshape(width - 7, len(rows))

    def __len__(self) -> int:
        return len(self.ends)

    def span(self, i: int) -> tuple[int, int]:
        """Where sample `i`'s rows are in the block's columns: [start, stop)."""
        return (0 if i == 0 else int(self.ends[i - 1])), int(self.ends[i])

    def rows(self, i: int) -> list[tuple[Any, ...]]:
        """Sample `i`'s rows again, as `step_rows` gave them."""
        start, stop = self.span(i)
        out = []
        for r in range(start, stop):
            role, tname, model = (
                None if c[r] < 0 else v[c[r]]
                for c, v in zip(self.codes, self.categories, strict=True)
            )
            content, tid, targs, error = (t[r] for t in self.texts)
            numbers = tuple(float(x) for x in self.numbers[:, r])
            out.append((role, content, tname, tid, targs, error, model, *numbers))
        return out


# the row columns kept as codes (role, tool_name, model) and as objects (content, tool_call_id,
# tool_args, error)
_CODED = (0, 2, 6)
_TEXTS = (1, 3, 4, 5)


def _coded(values: Sequence[Any]) -> tuple[np.ndarray, list[Any]]:
    """Codes of `values` (-1: None) and the values coded, in first-seen order."""
    index: dict[Any, int] = {}
    codes = np.fromiter(
        (-1 if v is None else index.setdefault(v, len(index)) for v in values),
        dtype=np.int32,
        count=len(values),
    )
    return codes, list(index)


def _objects(values: Sequence[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def blocks_frame(samples: Iterable[tuple[str, int, StepBlock, int]]) -> pd.DataFrame:
    """The steps table of (case_id, epoch, block, i) of each sample (sample `i` of `block`'s
    rows), in the order given: the table `steps_frame` makes of the same rows."""
    # one entry a sample that has rows: its case id, epoch and row count (the columns are
    # repeated from these by numpy, not built row by row), and where its rows are
    ids: list[str] = []
    epochs: list[int] = []
    counts: list[int] = []
    starts: list[int] = []
    blocks: dict[int, tuple[StepBlock, int]] = {}  # id -> (block, its first row in all)
    total = 0
    for cid, epoch, block, i in samples:
        start, stop = block.span(i)
        if stop == start:
            continue
        found = blocks.get(id(block))
        if found is None:
            found = blocks[id(block)] = (block, total)
            total += int(block.ends[-1])
        ids.append(cid)
        epochs.append(epoch)
        counts.append(stop - start)
        starts.append(found[1] + start)
    n_rows = np.asarray(counts, dtype=np.int64)
    first = np.cumsum(n_rows) - n_rows
    # each row's place in the blocks' columns laid end to end
    where = np.arange(int(n_rows.sum()), dtype=np.int64) + np.repeat(
        np.asarray(starts, dtype=np.int64) - first, n_rows
    )
    kept = [block for block, _ in blocks.values()]
    coded = [_categorical(kept, k, where) for k in range(len(_CODED))]
    texts = [_taken([b.texts[k] for b in kept], where, object) for k in range(len(_TEXTS))]
    numbers = [_taken([b.numbers[k] for b in kept], where, float) for k in range(4)]
    role, tname, model = coded
    content, tid, targs, error = texts
    tin, tout, cost, lat = numbers
    frame: dict[str, Any] = {
        "case_id": _repeated(ids, n_rows),
        "epoch": np.repeat(np.asarray(epochs, dtype=np.int32), n_rows),
        "step": (np.arange(len(where)) - np.repeat(first, n_rows)).astype(np.int32),
        "role": role,
        "content": pd.Series(content, dtype=object, copy=False),
        "tool_name": tname,
        "tool_call_id": pd.Series(tid, dtype=object, copy=False),
        "tool_args": pd.Series(targs, dtype=object, copy=False),
        "error": pd.Series(error, dtype=object, copy=False),
        "model": model,
        "input_tokens": tin,
        "output_tokens": tout,
        "cost": cost,
        "latency_s": lat,
    }
    # the arrays are this frame's own: not copied again (a copy of 3,050,000 rows a column took 1 s)
    return pd.DataFrame(frame, columns=STEP_COLUMNS, copy=False)


def _taken(parts: list[np.ndarray], where: np.ndarray, dtype: Any) -> np.ndarray:
    """The rows at `where` of `parts` laid end to end."""
    if not parts:
        return np.empty(0, dtype=dtype)
    return np.concatenate(parts).take(where)


def _categorical(blocks: list[StepBlock], k: int, where: np.ndarray) -> pd.Categorical:
    """Coded column `k` of the rows at `where`: the `pd.Categorical` of its values themselves
    (categories sorted as pandas sorts them, of the values these rows hold only)."""
    values: list[Any] = []  # every block's values, laid end to end; a block's codes shifted
    shifted = []
    for block in blocks:
        codes = block.codes[k]
        shifted.append(np.where(codes < 0, -1, codes + len(values)).astype(np.int64))
        values.extend(block.categories[k])
    codes = _taken(shifted, where, np.int64)
    used = np.unique(codes)
    present = [values[c] for c in used.tolist() if c >= 0]
    # the categories pandas gives the column's values: None among them if any row has none
    # (an all-None column's categories are not text)
    missing = bool(len(used)) and int(used[0]) < 0
    dtype = pd.Categorical([*present, None] if missing else present).dtype
    lookup = np.full(len(values) + 1, -1, dtype=np.int64)  # the last entry: code -1
    lookup[used[used >= 0]] = dtype.categories.get_indexer(pd.Index(present, dtype=object))
    made: Any = pd.Categorical.from_codes(lookup[codes], dtype=dtype)
    return made  # type: ignore[no-any-return]


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
