"""The case table: one row per sample, sortable and filterable, computed on the run's tables.

Columns: the case id (and the epoch, with epochs > 1), the outcome, each score's value (its
status where it has none), the failure origin, the input fields (`run.data`, but one that
repeats the case id), the output (its start, the rest behind a `<details>`), and with
transcripts their counts. `table_rows` filters (outcome, origin, one score's status, reason
and value range, one slice of an input column, a text search) and sorts, on whole columns:
each sort order and each column's codes and text are computed once per frame, so that a
million-sample table answers every action well under a second (benchmarks/bench_case_table.py).
`case_table_html` draws rows as `<div>`s with inline styles, every cell escaped, the case id
cell kept in view when the table scrolls sideways. The widget (`eb.show(run)`, Case table tab)
pages through these rows; where widgets don't run, the static table shows the first
`STATIC_ROWS` rows and says so.
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._util._fmt import format_num
from .._util._text import clean
from ._budget import expandable
from ._cases import ALL, epochs_of, text_of
from ._protocols import RunLike
from ._style import (
    BORDER,
    FONT,
    MUTED,
    OPAQUE_BG,
    STATUS_COLORS,
    esc,
    is_missing,
    outcome_label,
    root,
    shorten,
)
from ._transcript_html import (
    sample_transcript,
    transcript_budget,
    transcript_html,
    transcript_summary,
)

__all__ = [
    "STATIC_ROWS",
    "CaseTableFilter",
    "CellBudget",
    "case_table_html",
    "column_labels",
    "column_width",
    "input_labels",
    "slice_values",
    "table_frame",
    "table_root",
    "table_rows",
    "with_tools",
]

# Rows of the static table (nbconvert, GitHub, no kernel) and of a widget page: a screenful,
# which keeps the static view of a run with megabyte texts under 100 kB; the tables hold
# every row.
STATIC_ROWS = 25
# Characters of a cell shown before its "show all" control, and shown in all (a row's detail
# view shows more, its "whole texts" toggle all of it).
CELL_START = 80
CELL_LIMIT = 2_000
# Cell text a whole table shows (the static table, a widget page): 25 rows of 1 MB outputs
# and inputs stay a table of starts, not megabytes of HTML.
TABLE_TEXT_LIMIT = 20_000
_WIDTHS = {"case": 110, "epoch": 50, "input": 160, "output": 240, "outcome": 90, "score": 120,
           "origin": 110, "count": 70}  # fmt: skip
# a transcript's counts (`run.cases` has them when some sample has a transcript)
STEP_LABELS = ("n_steps", "n_tool_calls", "n_tool_errors")
_FIXED = ("case_id", "epoch", "output", "outcome", "origin", *STEP_LABELS)
# A header's width for its label: about a bold 13 px character each, the button's padding, and
# a cap (a longer label ends in "…", its tooltip is whole)
_LABEL_PX, _LABEL_PAD, _LABEL_PX_MAX = 8, 28, 260


@dataclass(frozen=True)
class CaseTableFilter:
    """What the case table shows, and in which order.

    `score` is the score that `status`, `reason`, `low`/`high` look at; records without a
    value pass the range only when it is the full [0, 1]. `slice_by`/`slice_value` keep the
    samples whose input column `slice_by` reads `slice_value` (as text). `origin` keeps the
    samples that failed with that origin, or have an error record of it (`task`, `provider`,
    `environment`, `grader`, `harness`). `sort` is a column label (`column_labels`), None for
    input order. With transcripts, `tool_errors` keeps the samples with `"none"` or `"some"`
    failed tool results, and `tool` those that called the tool of that name (the frame's
    `_tools` column, `with_tools`). `search` keeps the rows whose case id, input fields or
    output contain it (case-insensitive, as text).
    """

    outcome: str = ALL
    origin: str = ALL
    score: str | None = None
    status: str = ALL
    reason: str = ALL
    low: float = 0.0
    high: float = 1.0
    slice_by: Any = None
    slice_value: str = ALL
    tool_errors: str = ALL
    tool: str = ALL
    search: str = ""
    sort: str | None = None
    descending: bool = False


def _input_label(col: Any, taken: set[str]) -> str:
    label = str(col)
    return f"input.{label}" if label in taken else label


class _RunText:
    """What the table reads of a run's tables once (kept per run, `_read`): the input columns
    it shows and, when first asked, the case ids as Arrow text (the frame's `case_id` column,
    and what an input column is compared with to find the one that repeats them)."""

    def __init__(self, data: pd.DataFrame, cases: pd.DataFrame) -> None:
        self.data, self.cases, self.columns = data, cases, [*data]
        self.inputs: list[tuple[int, str]] = []

    def fits(self, data: pd.DataFrame, cases: pd.DataFrame) -> bool:
        """Whether these are still the run's tables (a column added to `run.data` is seen)."""
        return self.data is data and self.cases is cases and self.columns == [*data]

    @functools.cached_property
    def ids(self) -> pa.ChunkedArray | None:
        """Every sample's case id as Arrow text (None: ids that are not all text)."""
        return _text_arrow(self.cases["case_id"])


def _read(run: RunLike) -> _RunText:
    """The run's `_RunText`, made once per run and tables (the widget, its frame and its
    static table ask)."""
    data = run.data if isinstance(run.data, pd.DataFrame) else pd.DataFrame()
    cases = run.cases
    found = _RUNS.get(id(run))
    if found is not None and found.fits(data, cases):
        return found
    read = _RunText(data, cases)
    names = [d.name for d in run.definitions]
    taken = set(_FIXED) | {f"{n}{end}" for n in names for end in ("", " status", " reason")}
    k = epochs_of(run)
    read.inputs = [
        (j, _input_label(c, taken))
        for j, c in enumerate(data.columns)
        if not _repeats_ids(data.iloc[:, j], read, k)
    ]
    try:
        if id(run) not in _RUNS:
            weakref.finalize(run, _RUNS.pop, id(run), None)
        _RUNS[id(run)] = read
    except TypeError:  # a run object that takes no weak reference: not kept
        pass
    return read


def _inputs(run: RunLike) -> list[tuple[int, str]]:
    """The input columns the table shows: (position in `run.data`, label), without a column
    that holds the case ids (the `id` column the run takes them from: `case_id` shows it)."""
    return list(_read(run).inputs)


# Per run (by id, dropped with the run): what the table read of its tables
_RUNS: dict[int, _RunText] = {}


def _repeats_ids(column: pd.Series, read: _RunText, k: int) -> bool:
    """Whether each case's value in `column` reads as its case id (`read.cases`: one row per
    sample, case then epoch)."""
    n = len(column)
    ids = read.cases["case_id"]
    if n == 0 or n * k != len(ids) or text_of(column.iloc[0]) != str(ids.iloc[0]):
        return False  # the first value settles most columns without reading the rest
    texts, every = _text_arrow(column), read.ids
    if texts is not None and every is not None:  # text both: compared in Arrow
        wanted = every if k == 1 else every.take(pa.array(np.arange(0, n * k, k)))
        same = pc.all(pc.equal(texts, wanted), skip_nulls=False).as_py()  # null: a missing one
        return same is True
    per_case = ids.iloc[::k]  # may be a categorical over the run's ids
    return bool(np.array_equal(_texts(column), per_case.astype(str).to_numpy(dtype=object)))


def input_labels(run: RunLike) -> list[str]:
    """The labels of the input columns the table shows, in order (the slice filter's
    choices)."""
    return [label for _, label in _inputs(run)]


def column_labels(run: RunLike) -> list[str]:
    """The table's column labels, in order: case_id, epoch (epochs > 1), outcome, each score's
    value (`name`), origin, the input fields (`input_labels`), output, and with transcripts
    `n_steps`, `n_tool_calls`, `n_tool_errors`. The first columns fit a narrow output area."""
    names = [d.name for d in run.definitions]
    epoch = ["epoch"] if epochs_of(run) > 1 else []
    steps = [c for c in STEP_LABELS if c in run.cases.columns]  # some sample has a transcript
    return ["case_id", *epoch, "outcome", *names, "origin", *input_labels(run), "output", *steps]


def table_frame(run: RunLike, rows: int | None = None) -> pd.DataFrame:
    """One row per sample (input order, then epoch), the columns of `column_labels`, plus
    `_case` (the case's position), `_origins` (each row's origins, a frozenset) and, per
    score, `name status` and `name reason`; with `rows`, of the first `rows` samples only (the
    static table's). Built from whole columns, each kept in the type it has (text as Arrow
    text, statuses as categories), so that nothing is converted twice."""
    cases = run.cases if rows is None else run.cases.iloc[:rows]
    k = epochs_of(run)
    n = len(cases)
    ids = _read(run).ids  # the run's, made once (the static table's 25 take a slice)
    out: dict[str, Any] = {
        "case_id": cases["case_id"].to_numpy(dtype=object) if ids is None else _str(ids.slice(0, n))
    }
    if k > 1:
        out["epoch"] = _column(cases["epoch"])
    out["outcome"] = _column(_filled(cases["outcome"], "pending"))
    names = [d.name for d in run.definitions]
    s = len(names)
    scores = run.scores.iloc[: n * s]  # one record per (sample, score), in the cases' order
    for j, name in enumerate(names):
        records = scores.iloc[j::s]
        out[name] = records["value"].to_numpy(dtype=float)
        out[f"{name} status"] = _column(records["status"])
        out[f"{name} reason"] = _column(records["reason"])
    origins, out["origin"] = _row_origins(cases, scores, s)
    data = run.data if isinstance(run.data, pd.DataFrame) else pd.DataFrame()
    for j, label in _inputs(run):
        column = data.iloc[:, j]
        # each case's input repeated for its epochs (rows: case, then epoch); data of another
        # length (a user's object) has no values here
        fits = len(column) * k == len(run.cases)
        out[label] = _column(_per_sample(column, n, k)) if fits else np.full(n, None)
    out["output"] = _text_column(cases["output"])
    for label in STEP_LABELS:
        if label in cases.columns:  # nullable Int64: <NA> for a sample without a transcript
            out[label] = cases[label].to_numpy(dtype=float, na_value=np.nan)
    try:
        frame = pd.DataFrame(out)
    except Exception:  # inferring a dtype asked a user's value its class, and that raised
        frame = pd.DataFrame(
            {
                c: pd.Series(v.to_numpy(dtype=object) if isinstance(v, pd.Series) else v,
                             dtype=object, copy=False)
                for c, v in out.items()
            }
        )  # fmt: skip
    frame["_case"] = np.arange(n) // k
    frame[ORIGINS_COLUMN] = origins
    return frame


def _text_column(values: pd.Series) -> pd.Series | np.ndarray:
    """A column of text as Arrow text (what sorts and searches read: made here once, straight
    from the values, which is several times quicker on a million than pandas' own inference),
    any other as its objects."""
    arrow = _text_arrow(values)
    return values.to_numpy(dtype=object) if arrow is None else _str(arrow)


def _str(arrow: pa.ChunkedArray) -> pd.Series:
    """Arrow text as pandas' own `str` column (missing: NaN), as its inference makes it,
    without a copy."""
    return pd.Series(pd.array(arrow, dtype=pd.StringDtype("pyarrow", na_value=np.nan)))


def _per_sample(column: pd.Series, n: int, k: int) -> pd.Series:
    """The first `n` samples' values of a column of one value a case (each case's for its `k`
    epochs): the cases' rows sliced first (no copy; a take over a whole Arrow column of a
    parquet file's chunks copies every text of it), then each repeated for its epochs (one
    epoch: the slice is the column)."""
    rows = column.iloc[: -(-n // k)]
    return rows if k == 1 else rows.take(np.arange(n) // k)


def _column(values: pd.Series) -> pd.Series:
    """A column of the frame: its values in its own type, indexed 0..n-1 (no copy)."""
    return values.reset_index(drop=True)


def _filled(values: pd.Series, missing: str) -> pd.Series:
    """A column with `missing` where it has no value (a categorical keeps its codes)."""
    if not values.isna().any():
        return values
    if isinstance(values.dtype, pd.CategoricalDtype):
        if missing not in values.cat.categories:
            values = values.cat.add_categories([missing])
        return values.fillna(missing)
    return values.astype(object).where(values.notna(), missing)


def with_tools(frame: pd.DataFrame, run: Any) -> list[str]:
    """Add `_tools` (the names of the tools each sample called) to `frame` from
    `run.tool_calls()`; the names any sample called, sorted. Reads the transcripts: the
    case table asks for it once, when it first filters by tool."""
    calls = run.tool_calls()
    key = list(zip(frame["case_id"], frame["epoch"] if "epoch" in frame.columns else
                   np.ones(len(frame), dtype=int), strict=True))  # fmt: skip
    names: dict[tuple[str, int], set[str]] = {}
    for cid, epoch, tool in zip(
        calls["case_id"].astype(str), calls["epoch"], calls["tool_name"], strict=True
    ):
        if not is_missing(tool):
            names.setdefault((cid, int(epoch)), set()).add(str(tool))
    tools = [frozenset(names.get((str(c), int(e)), ())) for c, e in key]
    frame["_tools"] = pd.Series(tools, index=frame.index, dtype=object)
    _cache(frame).pop(("sets", "_tools"), None)  # a column of its own: computed again
    return sorted(set().union(*names.values())) if names else []


# the table frame's column of each row's failure origins (the sample's and its records')
ORIGINS_COLUMN = "_origins"


_ORIGIN_NAMES = ("task", "provider", "environment", "grader", "harness")


def _origin_bits(values: pd.Series) -> np.ndarray:
    """Each value's origin as a bit (`_ORIGIN_NAMES` order; another origin: the next bit)."""
    # the tables' origin columns are categories: their codes read, no million objects made
    column = values if isinstance(values.dtype, pd.CategoricalDtype) else values.astype("category")
    codes, uniques = column.cat.codes.to_numpy(), list(column.cat.categories)
    bit_of = np.zeros(len(uniques) + 1, dtype=np.int64)  # the last slot: missing (code -1)
    for k, u in enumerate(uniques):
        text = str(u)
        at = _ORIGIN_NAMES.index(text) if text in _ORIGIN_NAMES else len(_ORIGIN_NAMES)
        bit_of[k] = 1 << at
    result: np.ndarray = bit_of[codes]
    return result


def _row_origins(cases: pd.DataFrame, scores: pd.DataFrame, s: int) -> tuple[pd.Series, pd.Series]:
    """Each sample's origins (a row of `cases`, its `s` records in `scores`): its own
    (errored, timed out) and those of its error records, as a frozenset and as text
    (`"task, grader"`; missing when none: the origin column).

    Whole columns: each origin a bit, or-ed per sample, and one frozenset per distinct mix."""
    n = len(cases)
    bits = np.zeros(n, dtype=np.int64)
    if "origin" in cases.columns:
        bits |= _origin_bits(cases["origin"])
    if s and "origin" in scores.columns and len(scores) == n * s:
        bits |= np.bitwise_or.reduce(_origin_bits(scores["origin"]).reshape(n, s), axis=1)
    many = bits.max(initial=0) >= 1 << len(_ORIGIN_NAMES)
    extra = _extra_origins(cases, scores, s) if many else {}
    # each row's mix of bits, numbered (bits < 2 ** 6: a count per possible mix, no sort)
    mixes = np.flatnonzero(np.bincount(bits, minlength=1 << (len(_ORIGIN_NAMES) + 1)))
    number = np.zeros(1 << (len(_ORIGIN_NAMES) + 1), dtype=np.int64)
    number[mixes] = np.arange(len(mixes))
    inverse = number[bits]
    sets = np.empty(len(mixes), dtype=object)
    for k, m in enumerate(mixes.tolist()):
        sets[k] = frozenset(o for j, o in enumerate(_ORIGIN_NAMES) if m >> j & 1)
    rows = sets[inverse.reshape(-1)]
    labels = [_origin_text(o) for o in sets.tolist()]
    categories = sorted({t for t in labels if t is not None})
    text_codes = np.array([-1 if t is None else categories.index(t) for t in labels], np.int64)[
        inverse.reshape(-1)
    ]
    for i, more in extra.items():
        rows[i] = frozenset(rows[i]) | more
        t = str(_origin_text(rows[i]))
        if t not in categories:
            categories.append(t)
        text_codes[i] = categories.index(t)
    text = pd.Categorical.from_codes(text_codes, categories=pd.Index(categories, dtype=object))
    return pd.Series(rows, dtype=object), pd.Series(text)


def _origin_text(origins: frozenset[str]) -> str | None:
    """A row's origins as the origin column shows them: `_ORIGIN_NAMES` order, then others."""
    known = [o for o in _ORIGIN_NAMES if o in origins]
    return ", ".join(known + sorted(origins - set(known))) or None


def _extra_origins(cases: pd.DataFrame, scores: pd.DataFrame, s: int) -> dict[int, frozenset[str]]:
    """Origins outside `_ORIGIN_NAMES` (rare), per row, read row by row."""
    found: dict[int, set[str]] = {}
    if "origin" in cases.columns:
        for i, o in enumerate(cases["origin"].tolist()):
            if not is_missing(o) and str(o) not in _ORIGIN_NAMES:
                found.setdefault(i, set()).add(str(o))
    if s and "origin" in scores.columns:
        for i, o in enumerate(scores["origin"].tolist()):
            if not is_missing(o) and str(o) not in _ORIGIN_NAMES:
                found.setdefault(i // s, set()).add(str(o))
    return {i: frozenset(v) for i, v in found.items()}


def origins_of(frame: pd.DataFrame) -> list[str]:
    """The origins any row of the table has, in `ORIGINS` order (the filter's choices)."""
    present: set[str] = set()
    if ORIGINS_COLUMN in frame.columns:
        for row in set(frame[ORIGINS_COLUMN].tolist()):  # a few distinct sets
            present.update(row)
    return [o for o in ("task", "provider", "environment", "grader", "harness") if o in present]


def reasons(frame: pd.DataFrame, score: str) -> list[str]:
    """The distinct reasons of `score`'s records (unscored and error), as text, sorted."""
    label = f"{score} reason"
    if label not in frame.columns:
        return []
    codes, texts = _codes(frame, label)
    present = np.bincount(codes, minlength=len(texts))[:-1] > 0  # the last text: missing
    return sorted(set(texts[:-1][present].tolist()))


def slice_values(frame: pd.DataFrame, by: str) -> list[str]:
    """Input column `by` of each row as the slice filter reads it (its text; `—` missing)."""
    texts: list[str] = _texts(frame[by]).tolist()
    return texts


def _texts(column: pd.Series) -> np.ndarray:
    """Each value's text (`text_of`; `—` missing), an object array: computed once per
    distinct value where the values hash, else per row."""
    values = column.to_numpy(dtype=object)
    if pd.api.types.infer_dtype(values, skipna=True) == "string":  # all str: as they are
        missing = pd.isna(values)
        if not missing.any():
            return values
        fast = values.copy()
        fast[missing] = "—"
        return fast
    try:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
    except TypeError:  # unhashable values (lists, dicts): row by row
        return np.array([("—" if is_missing(x) else text_of(x)) for x in values], dtype=object)
    texts = np.empty(len(uniques) + 1, dtype=object)
    for k, u in enumerate(uniques):
        texts[k] = "—" if is_missing(u) else text_of(u)
    texts[-1] = "—"
    result: np.ndarray = texts[codes]
    return result


# Per frame (by id, dropped with the frame), what actions reuse: each column's codes, its
# text as Arrow, and each sort order. Bounded: a few entries per column.
_CACHE: dict[int, dict[Any, Any]] = {}


def _cache(frame: pd.DataFrame) -> dict[Any, Any]:
    key = id(frame)
    found = _CACHE.get(key)
    if found is None:
        found = _CACHE[key] = {}
        weakref.finalize(frame, _CACHE.pop, key, None)
    return found


def _is_number(column: pd.Series) -> bool:
    """Whether a column sorts as numbers (anything else sorts by its text)."""
    dtype = column.dtype
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def _arrow_text(frame: pd.DataFrame, label: str) -> pa.ChunkedArray:
    """Column `label`'s text (`text_of`) as Arrow, null where missing; computed once per
    frame and column (no copy for a column Arrow already holds)."""
    cache = _cache(frame)
    key = ("arrow", label)
    if key not in cache:
        arrow = _text_arrow(frame[label])
        if arrow is None:  # each distinct value's text once, taken for its rows (missing: null)
            codes, texts = _codes(frame, label)
            words = _utf8(texts, np.arange(len(texts)) == len(texts) - 1)
            arrow = pa.chunked_array([words.take(pa.array(codes))]).cast(pa.large_string())
        cache[key] = arrow
    found: pa.ChunkedArray = cache[key]
    return found


def _text_arrow(column: pd.Series) -> pa.ChunkedArray | None:
    """A column of text (null where missing) as Arrow large strings, its own buffers where Arrow
    holds it; None when it holds anything but text (its text is then `text_of` each value)."""
    dtype = column.dtype
    if isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow":
        arrow = pa.chunked_array(pa.array(column.array))
    else:
        values = column.to_numpy(dtype=object)
        if pd.api.types.infer_dtype(values, skipna=True) != "string":
            return None
        arrow = pa.chunked_array([_utf8(values)])
    return arrow if pa.types.is_large_string(arrow.type) else arrow.cast(pa.large_string())


def _utf8(texts: np.ndarray, missing: np.ndarray | None = None) -> pa.Array:
    """Texts as an Arrow array, null where `missing` (None: where pandas sees a missing
    value, which Arrow finds as it copies, without a pass of `pd.isna`: 38 ms of 90 ms for a
    million texts); a lone surrogate (text from outside a run's gate: a run's own text never
    has one) is spelled out as the run's gate would store it.

    Made in the system allocator's memory: it reuses the pages pandas and numpy freed, where
    Arrow's own pool maps new ones, each touched for the first time (on a virtual machine that
    backs memory lazily, 1,000,000 outputs took 0.26-0.42 s so, 0.035 s in reused pages)."""
    pool = pa.system_memory_pool()
    if missing is None:
        try:
            return pa.array(texts, type=pa.large_string(), from_pandas=True, memory_pool=pool)
        except (UnicodeEncodeError, pa.ArrowException):  # a lone surrogate, or a missing
            missing = np.asarray(pd.isna(texts), bool)  # value Arrow does not know (NaT)
    try:
        return pa.array(texts, type=pa.large_string(), mask=missing, memory_pool=pool)
    except (UnicodeEncodeError, pa.ArrowException):
        cleaned = np.array([clean(t) for t in texts.tolist()], dtype=object)
        return pa.array(cleaned, type=pa.large_string(), mask=missing, memory_pool=pool)


def _codes(frame: pd.DataFrame, label: str) -> tuple[np.ndarray, np.ndarray]:
    """Column `label` as codes into its distinct values' texts (`_texts`; the last text is a
    missing value's), computed once per frame and column: equality filters compare codes."""
    cache = _cache(frame)
    key = ("codes", label)
    if key not in cache:
        column = frame[label]
        if isinstance(column.dtype, pd.CategoricalDtype):
            codes = column.cat.codes.to_numpy()
            uniques = column.cat.categories.to_numpy(dtype=object)
        else:
            pair: Any
            try:  # Arrow text is factorized by Arrow, other values by their hash
                pair = pd.factorize(column, use_na_sentinel=True)
            except TypeError:  # unhashable values (lists, dicts): by their text
                pair = pd.factorize(_texts(column), use_na_sentinel=True)
            codes, uniques = np.asarray(pair[0]), np.asarray(pair[1], dtype=object)
        texts = np.empty(len(uniques) + 1, dtype=object)
        texts[:-1] = _texts(pd.Series(uniques, dtype=object))
        texts[-1] = "—"
        cache[key] = (np.where(codes < 0, len(uniques), codes), texts)
    found: tuple[np.ndarray, np.ndarray] = cache[key]
    return found


def _equal(frame: pd.DataFrame, label: str, text: str) -> np.ndarray:
    """Rows whose value in column `label` reads `text` (`_texts`: `—` is a missing value)."""
    codes, texts = _codes(frame, label)
    hit: np.ndarray = (texts == text)[codes]
    return hit


def _member(frame: pd.DataFrame, label: str, item: str) -> np.ndarray:
    """Rows whose set (of origins, of tools) in column `label` holds `item`: tested once per
    distinct set."""
    cache = _cache(frame)
    key = ("sets", label)
    if key not in cache:
        values = frame[label].to_numpy(dtype=object)
        cache[key] = pd.factorize(values, use_na_sentinel=True)
    codes, uniques = cache[key]
    hit = np.array([item in u for u in uniques] + [False], dtype=bool)
    result: np.ndarray = hit[codes]
    return result


def _order(frame: pd.DataFrame, label: str, descending: bool) -> np.ndarray:
    """Every row of `frame` in column `label`'s order: stable (equal values keep input order,
    in either direction), missing values last; numbers as numbers, anything else by its text
    (code point order). Computed once per frame, column and direction."""
    cache = _cache(frame)
    key = ("order", label, descending)
    if key not in cache:
        column = frame[label]
        if _is_number(column):
            values = column.to_numpy(dtype=float, na_value=np.nan)
            # NaN sorts last either way; negating keeps equal values equal (stable ties)
            order = np.argsort(-values if descending else values, kind="stable")
        else:
            indices = pc.array_sort_indices(
                _arrow_text(frame, label),
                order="descending" if descending else "ascending",
                null_placement="at_end",
            )  # Arrow's sort is stable; UTF-8 byte order is code point order
            order = indices.to_numpy()
        # kept per column and direction: 4 bytes a row where positions fit (half of intp's)
        small = len(order) < np.iinfo(np.int32).max
        cache[key] = order.astype(np.int32 if small else np.intp, copy=False)
    found: np.ndarray = cache[key]
    return found


def _searched(frame: pd.DataFrame) -> list[str]:
    """The columns a search reads: case id, the input fields and output (not the epoch,
    outcome, origin, counts, nor a score: a column with its `name status` beside it)."""
    skip = {"epoch", "outcome", "origin", *STEP_LABELS, "_case", ORIGINS_COLUMN, "_tools"}
    columns = [c for c in frame.columns if isinstance(c, str)]
    scores = {c[: -len(" status")] for c in columns if c.endswith(" status")}
    return [
        c
        for c in columns
        if c not in skip and c not in scores and not c.endswith((" status", " reason"))
    ]


def _search(frame: pd.DataFrame, word: str) -> np.ndarray:
    """Rows where some searched column's text holds `word`, ignoring case (Unicode case
    folding); a missing value holds nothing."""
    hit = np.zeros(len(frame), dtype=bool)
    pattern = clean(word)
    texts = [_arrow_text(frame, label) for label in _searched(frame)]  # made once a frame

    def match(text: pa.ChunkedArray) -> pa.ChunkedArray:
        return pc.match_substring(text, pattern, ignore_case=True)

    # Arrow matches without the GIL: the columns side by side (a million rows: 0.27-0.34 s
    # one after the other, 0.18-0.25 s on two cores)
    with ThreadPoolExecutor(max(1, min(len(texts), os.cpu_count() or 1))) as pool:
        for found in pool.map(match, texts):
            hit |= found.fill_null(False).to_numpy()
    return hit


def table_rows(frame: pd.DataFrame, f: CaseTableFilter) -> np.ndarray:
    """Positions (rows of `frame`) matching `f`, in `f.sort` order (stable; missing last)."""
    keep = np.ones(len(frame), dtype=bool)
    if f.outcome != ALL:
        keep &= _equal(frame, "outcome", f.outcome)
    if f.origin != ALL:
        if ORIGINS_COLUMN in frame.columns:
            keep &= _member(frame, ORIGINS_COLUMN, f.origin)
        else:
            keep[:] = False
    if f.score is not None:
        if f.score not in frame.columns:
            raise ValueError(f"unknown score {f.score!r}")
        if f.status != ALL:
            keep &= _equal(frame, f"{f.score} status", f.status)
        if f.reason != ALL:
            keep &= _equal(frame, f"{f.score} reason", f.reason)
        if f.low > 0.0 or f.high < 1.0:
            value = frame[f.score].to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                keep &= (value >= f.low) & (value <= f.high)
    if f.slice_by is not None and f.slice_value != ALL:
        keep &= _equal(frame, f.slice_by, f.slice_value)
    if f.tool_errors != ALL:
        if "n_tool_errors" not in frame.columns:
            raise ValueError("no sample of this run has a transcript: no tool errors to filter")
        errors = frame["n_tool_errors"].to_numpy(dtype=float)
        if f.tool_errors == "none":
            keep &= errors == 0
        elif f.tool_errors == "some":
            keep &= errors > 0
        else:
            raise ValueError(f"tool_errors is 'all', 'none' or 'some', not {f.tool_errors!r}")
    if f.tool != ALL:
        if "_tools" not in frame.columns:
            raise ValueError("the table has no tool names: build it with with_tools(frame, run)")
        keep &= _member(frame, "_tools", f.tool)
    if f.search:
        keep &= _search(frame, f.search)
    if f.sort is None:
        return np.flatnonzero(keep)
    if f.sort not in frame.columns:
        raise ValueError(f"unknown column {f.sort!r}; columns are {list(frame.columns)}")
    order = _order(frame, f.sort, f.descending)
    ordered: np.ndarray = order[keep[order]]  # the sorted rows that pass, in sorted order
    return ordered


def column_width(label: str, names: Sequence[str]) -> int:
    """A column's width in px (the static table's grid tracks and the widget's header): its
    kind's, or wider for a longer label (up to `_LABEL_PX_MAX`), so that a header button, one
    line, shows its label whole."""
    if label in STEP_LABELS:
        base = _WIDTHS["count"]
    elif label in ("case_id", "epoch", "output", "outcome", "origin"):
        base = _WIDTHS["case" if label == "case_id" else label]
    elif label in names or (label.endswith(" status") and label[: -len(" status")] in names):
        base = _WIDTHS["score"]
    else:
        base = _WIDTHS["input"]
    return max(base, min(_LABEL_PX * len(label) + _LABEL_PAD, _LABEL_PX_MAX))


class CellBudget:
    """The characters of cell text a table may still show behind its "show all" controls
    (`TABLE_TEXT_LIMIT` in all); once spent, a long cell shows only its start."""

    def __init__(self, total: int = TABLE_TEXT_LIMIT) -> None:
        self.left = total

    def text(self, text: str) -> str:
        """`text` escaped: its start, and as much of the rest as the budget allows."""
        limit = min(CELL_LIMIT, self.left)
        if len(text) > CELL_START and limit <= 2 * CELL_START:
            self.left -= CELL_START
            return esc(text, CELL_START)  # "… (N more characters)": the tables keep it
        # a long text's start is shown twice (before the control and in it): both are paid
        self.left -= min(len(text), limit) + (CELL_START if len(text) > CELL_START else 0)
        return expandable(text, limit, start=CELL_START, lines=1)


def _cell(label: str, r: pd.Series, names: Sequence[str], budget: CellBudget) -> str:
    """One cell's escaped HTML: a score's value (its status where it has none), an outcome or
    status in its colour, text cut."""
    value = r[label]
    if label in names and is_missing(value):
        status = r.get(f"{label} status")  # unscored or an error: say which, in its colour
        if is_missing(status):
            return ""
        color = STATUS_COLORS.get(str(status), "inherit")
        return f'<span style="color: {color}">{esc(str(status).replace("_", " "))}</span>'
    if is_missing(value):
        return ""
    if label in names or label in STEP_LABELS:
        return esc(format_num(value))
    if label == "outcome":
        # the task's outcome in a view's words ("ran", never green: it is not a verdict)
        color = "inherit" if value == "passed" else STATUS_COLORS.get(str(value), "inherit")
        return f'<span style="color: {color}">{esc(outcome_label(str(value)))}</span>'
    if label.endswith(" status"):
        # coloured text, not a badge: a status in every row of every score column
        color = STATUS_COLORS.get(str(value), "inherit")
        return f'<span style="color: {color}">{esc(str(value).replace("_", " "))}</span>'
    return budget.text(text_of(value))


# The first cell of a line (the case id) stays at the table box's left edge when the box
# scrolls sideways; opaque, so that the cells scrolled under it do not show through.
_CELL = "padding: 2px 6px"
_STICKY = f"{_CELL}; position: sticky; left: 0; z-index: 1; background: {OPAQUE_BG}"


def _cell_style(k: int) -> str:
    return _STICKY if k == 0 else _CELL


def row_html(
    frame: pd.DataFrame,
    i: int,
    labels: Sequence[str],
    names: Sequence[str],
    budget: CellBudget | None = None,
) -> str:
    """Row `i` of `frame` as a grid line of fixed-width cells, the first (the case id) kept
    in view when the table scrolls sideways (`budget`: shared by a table's rows; a row on
    its own has a budget of its own)."""
    budget = CellBudget() if budget is None else budget
    r = frame.iloc[int(i)]
    # the row lays its cells out (a grid of fixed tracks; wrapping inherited): a cell is a
    # bare <div>, which keeps a 50-row table of markup small
    cells = "".join(
        f'<div style="{_cell_style(k)}">{_cell(c, r, names, budget)}</div>'
        for k, c in enumerate(labels)
    )
    return (
        f'<div data-evalbook="case-row" style="{_grid(labels, names)}; border-top: {BORDER}; '
        f'white-space: pre-wrap; overflow-wrap: anywhere">{cells}</div>'
    )


def _grid(labels: Sequence[str], names: Sequence[str]) -> str:
    tracks = " ".join(f"{column_width(c, names)}px" for c in labels)
    return f"display: grid; grid-template-columns: {tracks}"


def table_root(inner: str, kind: str) -> str:
    """`root` for a line of the widget's table: as wide as its columns, not the views' 980 px
    (the table box scrolls sideways to its last column; a capped line would be cut there)."""
    return f'<div data-evalbook="{esc(kind)}" style="{FONT}; width: max-content">{inner}</div>'


def header_html(labels: Sequence[str], names: Sequence[str], f: CaseTableFilter) -> str:
    """The header line; the sorted column carries ▲ (ascending) or ▼ (descending); the first
    label stays in view when the table scrolls sideways, as its column does."""
    cells: list[str] = []
    for c in labels:
        mark = "" if c != f.sort else (" ▼" if f.descending else " ▲")
        style = _cell_style(len(cells))
        cells.append(f'<div style="{style}">{esc(shorten(c, 80))}{mark}</div>')
    grid = _grid(labels, names)
    return f'<div style="{grid}; font-weight: 600; overflow-wrap: anywhere">{"".join(cells)}</div>'


def case_table_html(run: RunLike, limit: int = STATIC_ROWS) -> str:
    """The static case table: the first `limit` samples in input order, and a note saying how
    many there are and where to see them all (built from those rows only: a million-sample
    run's static table costs what a small run's does)."""
    frame = table_frame(run, limit)
    total = len(run.cases)
    labels = column_labels(run)
    names = [d.name for d in run.definitions]
    shown = np.arange(len(frame))
    budget = CellBudget()
    body = "".join(row_html(frame, int(i), labels, names, budget) for i in shown)
    more = (
        f"the first {len(shown):,} of {total:,} rows; eb.show(run) (the Case table tab) "
        "sorts, filters and pages them all, and run.cases and run.scores hold them"
        if total > len(shown)
        else f"{total:,} rows"
    )
    note = f'<div style="{MUTED}; font-size: 12px; margin: 4px 0">{more}</div>'
    table = (
        f'<div style="overflow-x: auto"><div style="display: inline-block; min-width: 100%">'
        f"{header_html(labels, names, CaseTableFilter())}{body}</div></div>"
    )
    return root(note + table + _transcripts_html(run, frame, shown), "case-table")


def _transcripts_html(run: RunLike, frame: pd.DataFrame, rows: np.ndarray) -> str:
    """The transcripts of the rows shown, each behind its summary line, sharing one budget
    (`TRANSCRIPT_TEXT_LIMIT`): where no kernel runs, the static table still shows them."""
    if "n_steps" not in frame.columns:
        return ""
    words = transcript_budget()
    parts = []
    for i in rows:
        r = frame.iloc[int(i)]
        if not r["n_steps"] > 0:  # NaN (no transcript) or none
            continue
        epoch = int(r["epoch"]) if "epoch" in frame.columns else 1
        transcript = sample_transcript(run, str(r["case_id"]), epoch)
        if transcript is None:
            continue
        at = f", epoch {epoch}" if "epoch" in frame.columns else ""
        parts.append(
            f'<details data-evalbook="static-transcript" style="margin: 2px 0"><summary '
            f'style="cursor: pointer">{esc(r["case_id"])}{at} · '
            f"{esc(transcript_summary(transcript))}</summary>"
            f"{transcript_html(transcript, budget=words)}</details>"
        )
    if not parts:
        return ""
    return (
        '<div style="margin-top: 8px; font-weight: 600">Transcripts of these rows</div>'
        + "".join(parts)
    )
