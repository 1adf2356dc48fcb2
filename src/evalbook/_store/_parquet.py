"""Parquet files of the run store: written atomically, `schema_version` in their metadata.

The store's own tables are converted column by column with their Arrow types known (no
inference, no pandas metadata); they are built in `_table_files`. Files written by evalbook
0.1.0 may hold text columns as binary (named under `surrogate_text` in the metadata);
`text_list` and `frame_of` still read them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .._util._fs import atomic_write
from .._util._text import clean
from ._layout import PARQUET_CAP, read_regular
from ._log._read import FILE_READ_VERSIONS, SCHEMA_VERSION, version_error

__all__ = [
    "NULL_COLUMNS",
    "column_array",
    "frame_of",
    "parquet_bytes",
    "read_parquet",
    "text_array",
    "text_list",
    "write_arrow",
    "write_parquet",
]

_META_KEY = b"evalbook"
_OLD_BINARY_TEXT = "surrogate_text"  # 0.1.0: the text columns it wrote as binary
_SMALL_DICTIONARY = 1024  # categories a Parquet dictionary page is worth it for
NULL_COLUMNS = "evalbook_null_columns"  # a frame's attrs: its columns known to be all None


class NotStoreTable(Exception):
    """A column the direct conversion does not take: the frame goes through `from_pandas`."""


def text_array(values: Sequence[Any] | np.ndarray, may_be_empty: bool = True) -> Any:
    """Text (None or NaN where missing) as an Arrow string array; all missing: type null."""

    # all null (a set first value rules that out cheaply): type null, as `from_pandas` infers
    if (
        may_be_empty
        and (len(values) == 0 or values[0] is None)
        and pd.isna(np.asarray(values, dtype=object)).all()
    ):
        return pa.nulls(len(values))
    try:
        return pa.array(values, type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:  # not all text
        raise NotStoreTable from exc


def column_array(series: pd.Series[Any]) -> Any:
    """One column as an Arrow array, its type known from its dtype (nothing is inferred)."""

    dtype = series.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        codes = series.array.codes
        missing = codes < 0
        if missing.all():  # type null, as `from_pandas` writes it (cheaper to read back)
            return pa.nulls(len(codes))
        dictionary = text_array(np.asarray(dtype.categories, dtype=object), may_be_empty=False)
        indices = pa.array(codes, mask=missing) if missing.any() else pa.array(codes)
        return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=dtype.ordered)
    if isinstance(dtype, np.dtype) and dtype.kind == "O":
        return text_array(series.to_numpy())
    if isinstance(dtype, np.dtype) and dtype.kind in "biuf":
        return pa.array(series.to_numpy())
    if isinstance(dtype, pd.DatetimeTZDtype) or (isinstance(dtype, np.dtype) and dtype.kind == "M"):
        return pa.array(series)
    raise NotStoreTable(str(dtype))


def _direct_arrow(frame: pd.DataFrame) -> Any:
    """The frame as an Arrow table built column by column, without pandas metadata."""

    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names) or not isinstance(frame.index, pd.RangeIndex):
        raise NotStoreTable("labels")
    null = set(frame.attrs.get(NULL_COLUMNS, ()))  # known to be all None: nothing to scan
    arrays = [
        pa.nulls(len(frame)) if name in null else column_array(series)
        for name, (_, series) in zip(names, frame.items(), strict=True)
    ]
    return pa.Table.from_arrays(arrays, names=names)


def write_parquet(frame: pd.DataFrame, path: Path, table: str, index: bool = False) -> None:
    """Write a table atomically as Parquet, with `schema_version` in the file's metadata.

    The store's tables (text, categorical, numeric and time columns, a plain index) are
    converted column by column with their Arrow types known; any other frame (and the
    input data, whose index and dtypes must come back) goes through `pa.Table.from_pandas`.
    """

    write_arrow(_store_arrow(frame, index), path, table)


def _store_arrow(frame: pd.DataFrame, index: bool) -> Any:
    """The frame as Arrow: column by column for the store's tables, else `from_pandas`."""
    try:
        if index:
            raise NotStoreTable("index")
        return _direct_arrow(frame)
    except NotStoreTable:
        return pa.Table.from_pandas(frame, preserve_index=index)


def parquet_bytes(frame: pd.DataFrame, table: str, index: bool = False) -> bytes:
    """The bytes `write_parquet` would write, in memory (nothing touches the disk).

    A conversion error is raised before any file exists, and equal bytes tell that a stored
    file already holds this table.
    """
    out = pa.BufferOutputStream()
    _write_table(_store_arrow(frame, index), out, table)
    content: bytes = out.getvalue().to_pybytes()
    return content


def write_arrow(arrow: Any, path: Path, table: str) -> None:
    """Write an Arrow table atomically as Parquet, `schema_version` in its metadata."""
    atomic_write(path, lambda tmp: _write_table(arrow, tmp, table))


def _write_table(arrow: Any, where: Any, table: str) -> None:
    """Write Parquet to a path or an Arrow stream, `schema_version` in its metadata."""
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
    meta = dict(arrow.schema.metadata or {})
    meta[_META_KEY] = json.dumps(info).encode()
    arrow = arrow.replace_schema_metadata(meta)
    # a CRC-32 per data page (read back with verification): a damaged value fails the read
    # instead of loading as another value
    pq.write_table(
        arrow, where, write_statistics=False, use_dictionary=cats, write_page_checksum=True
    )


def _old_text(values: Iterable[Any]) -> list[Any]:
    """Text a 0.1.0 file holds as binary (UTF-8, surrogates passed), lone surrogates escaped."""
    return [
        clean(v.decode("utf-8", "surrogatepass")) if isinstance(v, bytes) else v for v in values
    ]


def text_list(column: Any) -> list[Any]:
    """An Arrow text column as Python strings (None where null).

    Takes string, binary (0.1.0), dictionary and null columns, chunked or not.
    """

    kind = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return _old_text(column.cast(kind).to_pylist())
    values: list[Any] = column.cast(pa.string()).to_pylist()
    return values


def frame_of(arrow: Any) -> pd.DataFrame:
    """`arrow.to_pandas()`; the binary text columns of a 0.1.0 file become text again."""
    frame: pd.DataFrame = arrow.to_pandas()
    raw = (arrow.schema.metadata or {}).get(_META_KEY)
    binary = set(json.loads(raw).get(_OLD_BINARY_TEXT) or ()) if raw else set()
    if not binary:
        return frame
    for pos, label in enumerate(frame.columns):
        if str(label) not in binary:
            continue
        column = frame.iloc[:, pos]
        if isinstance(column.dtype, pd.CategoricalDtype):
            categories = _old_text(column.cat.categories)
            frame.isetitem(pos, column.cat.rename_categories(categories).array)
        else:
            frame.isetitem(pos, np.array(_old_text(column), dtype=object))
    name = frame.index.name
    if ("__index_level_0__" if name is None else str(name)) in binary:
        frame.index = pd.Index(_old_text(frame.index), dtype=object, name=name)
    return frame


def read_parquet(path: Path, data: bytes | None = None) -> Any:
    """Read a Parquet file of the store as an Arrow table, checking its `schema_version`.

    `data`: the file's bytes, already read (`_layout.read_regular`), else the file is read
    through `open_regular` (a regular file of its folder, never a FIFO or a link out).
    """
    if data is None:
        data = read_regular(path, PARQUET_CAP)
    source = pa.BufferReader(data)
    arrow = pq.read_table(source, page_checksum_verification=True)  # files without: unchecked
    raw = (arrow.schema.metadata or {}).get(_META_KEY)
    found = json.loads(raw).get("schema_version") if raw else None
    if found not in FILE_READ_VERSIONS:
        raise version_error(str(path), found, f"{SCHEMA_VERSION} (and 2 and 3)")
    return arrow
