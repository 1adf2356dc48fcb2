"""File primitives of the run store: atomic writes, JSON, and Parquet tables.

Parquet files carry `schema_version` in their metadata; text columns holding lone
surrogates are written as binary and decoded back exactly (`encode_text`, `frame_of`).
The store's own tables are built in `_tablefiles`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util import _fs
from .._util._fs import atomic_write, write_text
from ._events import SCHEMA_VERSION, version_error

__all__ = [
    "SURROGATE_TEXT",
    "atomic_write",
    "check_parquet_version",
    "decode_text",
    "encode_text",
    "frame_of",
    "records",
    "surrogate_text_columns",
    "text_list",
    "write_arrow",
    "write_json",
    "write_parquet",
    "write_text",
]

_META_KEY = b"evalbook"
SURROGATE_TEXT = "surrogate_text"
_SMALL_DICTIONARY = 1024  # categories a Parquet dictionary page is worth it for
_NULL_COLUMNS = "evalbook_null_columns"  # a frame's attrs: its columns known to be all None


def _clean(value: Any) -> Any:
    """NaN and numpy scalars become JSON-friendly values."""
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a store JSON file atomically (UTF-8, `schema_version` first)."""
    _fs.write_json(path, {"schema_version": SCHEMA_VERSION, **data})


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON-ready rows (column by column: `to_dict` costs ms even for 3 rows).

    Example:
        >>> records(pd.DataFrame({"a": [1, 2], "b": [0.5, float("nan")]}))
        [{'a': 1, 'b': 0.5}, {'a': 2, 'b': None}]
    """
    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    return [
        {k: _clean(v) for k, v in zip(names, row, strict=True)}
        for row in zip(*columns, strict=True)
    ]


def encode_text(values: Iterable[Any]) -> list[Any]:
    """Strings as UTF-8 bytes with lone surrogates kept (`surrogatepass`); others as they are.

    The encoding of a text column that Parquet cannot hold as text; `decode_text` undoes it.

    Example:
        >>> encode_text(["x\\ud800y", None])
        [b'x\\xed\\xa0\\x80y', None]
    """
    return [v.encode("utf-8", "surrogatepass") if isinstance(v, str) else v for v in values]


def decode_text(values: Iterable[Any]) -> list[Any]:
    """The strings of `encode_text` back, exactly.

    Example:
        >>> decode_text([b"x\\xed\\xa0\\x80y", None]) == ["x\\ud800y", None]
        True
    """
    return [v.decode("utf-8", "surrogatepass") if isinstance(v, bytes) else v for v in values]


def _objects(values: list[Any]) -> np.ndarray:
    """An object array of the values, each stored as it is."""
    return np.fromiter(values, dtype=object, count=len(values))


def _odd(values: Iterable[Any]) -> bool:
    """Whether some string in `values` is not valid UTF-8 (holds a lone surrogate)."""
    return any(isinstance(v, str) and not _utf8(v) for v in values)


class _NotStoreTable(Exception):
    """A column the direct conversion does not take: the frame goes through `from_pandas`."""


def _text_array(values: np.ndarray, may_be_empty: bool = True) -> tuple[Any, bool]:
    """Text as an Arrow string array, or binary (`encode_text`) if it holds lone surrogates."""
    import pyarrow as pa

    # all null (a set first value rules that out cheaply): type null, as `from_pandas` infers
    if may_be_empty and (len(values) == 0 or values[0] is None) and pd.isna(values).all():
        return pa.nulls(len(values)), False
    try:
        return pa.array(values, type=pa.string(), from_pandas=True), False
    except UnicodeEncodeError:
        return pa.array(encode_text(values), type=pa.binary(), from_pandas=True), True
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # not all text
        raise _NotStoreTable from exc


def _column_array(series: pd.Series[Any]) -> tuple[Any, bool]:
    """One column as an Arrow array, its type known from its dtype (nothing is inferred)."""
    import pyarrow as pa

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = series.array.codes
        missing = codes < 0
        if missing.all():  # type null, as `from_pandas` writes it (cheaper to read back)
            return pa.nulls(len(codes)), False
        categories = np.asarray(dtype.categories, dtype=object)
        dictionary, escaped = _text_array(categories, may_be_empty=False)
        indices = pa.array(codes, mask=missing) if missing.any() else pa.array(codes)
        array = pa.DictionaryArray.from_arrays(indices, dictionary, ordered=dtype.ordered)
        return array, escaped
    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        return _text_array(series.to_numpy())
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return pa.array(series.to_numpy()), False
    if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
        return pa.array(series), False
    raise _NotStoreTable(str(dtype))


def _direct_arrow(frame: pd.DataFrame) -> tuple[Any, list[str]]:
    """The frame as an Arrow table built column by column, without pandas metadata."""
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names) or not isinstance(frame.index, pd.RangeIndex):
        raise _NotStoreTable("labels")
    null = set(frame.attrs.get(_NULL_COLUMNS, ()))  # known to be all None: nothing to scan
    return _arrow_table(names, [s for _, s in frame.items()], len(frame), null)


def _arrow_table(
    names: list[str], columns: list[pd.Series[Any]], n: int, null: set[str]
) -> tuple[Any, list[str]]:
    """Named columns as an Arrow table, and the names of the columns written as binary."""
    import pyarrow as pa

    arrays, escaped = [], []
    for name, series in zip(names, columns, strict=True):
        if name in null:
            arrays.append(pa.nulls(n))
            continue
        array, odd = _column_array(series)
        arrays.append(array)
        if odd:
            escaped.append(name)
    return pa.Table.from_arrays(arrays, names=names), escaped


def _pandas_arrow(frame: pd.DataFrame, index: bool) -> tuple[Any, list[str]]:
    """`pa.Table.from_pandas`; text with lone surrogates first becomes `encode_text` bytes."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(frame, preserve_index=index), []
    except UnicodeEncodeError:
        pass
    frame = frame.copy(deep=False)
    escaped: list[str] = []
    for pos, label in enumerate(frame.columns):
        column = frame.iloc[:, pos]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories = list(column.cat.categories)
            if _odd(categories):
                frame.isetitem(pos, column.cat.rename_categories(encode_text(categories)).array)
                escaped.append(str(label))
        elif not pd.api.types.is_numeric_dtype(column.dtype) and _odd(column):
            frame.isetitem(pos, _objects(encode_text(column)))
            escaped.append(str(label))
    if index and not isinstance(frame.index, pd.MultiIndex) and _odd(frame.index):
        name = frame.index.name
        frame.index = pd.Index(encode_text(frame.index), dtype=object, name=name)
        escaped.append("__index_level_0__" if name is None else str(name))
    return pa.Table.from_pandas(frame, preserve_index=index), escaped


def write_parquet(frame: pd.DataFrame, path: Path, table: str, index: bool = False) -> None:
    """Write a table atomically as Parquet, with `schema_version` in the file's metadata.

    The store's tables (text, categorical, numeric and time columns, a plain index) are
    converted column by column with their Arrow types known; any other frame (and the
    input data, whose index and dtypes must come back) goes through `pa.Table.from_pandas`.
    A text column holding a string that is not valid UTF-8 (a lone surrogate) is written as
    binary (`encode_text`) and named under `surrogate_text` in the `evalbook` metadata.
    """
    try:
        if index:
            raise _NotStoreTable("index")
        arrow, escaped = _direct_arrow(frame)
    except _NotStoreTable:
        arrow, escaped = _pandas_arrow(frame, index)
    write_arrow(arrow, escaped, path, table)


def write_arrow(arrow: Any, escaped: list[str], path: Path, table: str) -> None:
    """Write an Arrow table atomically as Parquet, `schema_version` in its metadata.

    `escaped` names the text columns written as `encode_text` bytes.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    # Parquet dictionaries for categorical columns with few categories only: for unique text
    # (ids, outputs), and for scores.case_id, plain pages are faster to write and smaller
    cats = [
        f.name
        for f in arrow.schema
        if pa.types.is_dictionary(f.type)
        and max((len(c.dictionary) for c in arrow.column(f.name).chunks), default=0)
        <= _SMALL_DICTIONARY
    ]
    info: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "table": table}
    if escaped:
        info[SURROGATE_TEXT] = escaped
    meta = dict(arrow.schema.metadata or {})
    meta[_META_KEY] = json.dumps(info).encode()
    arrow = arrow.replace_schema_metadata(meta)

    def write(tmp: Path) -> None:
        pq.write_table(arrow, tmp, write_statistics=False, use_dictionary=cats)

    atomic_write(path, write)


def surrogate_text_columns(arrow: Any) -> list[str]:
    """The columns of a table file written as `encode_text` bytes (see `write_parquet`)."""
    raw = (arrow.schema.metadata or {}).get(_META_KEY)
    found = json.loads(raw).get(SURROGATE_TEXT) if raw else None
    return [str(c) for c in found or []]


def text_list(column: Any) -> list[Any]:
    """An Arrow text column as Python strings (None where null), `encode_text` bytes decoded.

    Takes string, binary, dictionary and null columns, chunked or not.
    """
    import pyarrow as pa

    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return decode_text(column.cast(kind).to_pylist())
    values: list[Any] = column.cast(pa.string()).to_pylist()
    return values


def frame_of(arrow: Any) -> pd.DataFrame:
    """`arrow.to_pandas()`, with the columns and index written by `encode_text` decoded."""
    frame: pd.DataFrame = arrow.to_pandas()
    escaped = set(surrogate_text_columns(arrow))
    if not escaped:
        return frame
    for pos, label in enumerate(frame.columns):
        if str(label) not in escaped:
            continue
        column = frame.iloc[:, pos]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories = decode_text(column.cat.categories)
            frame.isetitem(pos, column.cat.rename_categories(categories).array)
        else:
            # a Series: an array would be inferred as pandas' str, which cannot hold them
            decoded = pd.Series(decode_text(column), index=frame.index, dtype=object)
            frame.isetitem(pos, decoded)  # type: ignore[arg-type]  # a Series is fine
    name = frame.index.name
    if ("__index_level_0__" if name is None else str(name)) in escaped:
        frame.index = pd.Index(decode_text(frame.index), dtype=object, name=name)
    return frame


def check_parquet_version(path: Path) -> Any:
    """Read a Parquet file of the store as an Arrow table, checking its `schema_version`."""
    import pyarrow.parquet as pq

    arrow = pq.read_table(path)
    raw = (arrow.schema.metadata or {}).get(_META_KEY)
    found = json.loads(raw).get("schema_version") if raw else None
    if found != SCHEMA_VERSION:
        raise version_error(str(path), found)
    return arrow


def _utf8(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: Parquet and CSV hold UTF-8 only
        return False
    return True
