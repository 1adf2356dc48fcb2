"""The table files of the run store and of exports: Parquet and CSV, written atomically.

The stored tables are the tables of DESIGN §5 plus two storage columns that make them
lossless: `output_kind` in cases (how `output` is encoded) and `record_grader` in scores
(the record's own grader as JSON, when it has one).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._events import SCHEMA_VERSION, encode_output, version_error
from ._tables import case_columns

if TYPE_CHECKING:
    from ._results import Results
    from ._run import Run

__all__ = [
    "OUTPUT_KINDS",
    "SURROGATE_TEXT",
    "atomic_write",
    "cases_file_arrow",
    "cases_file_table",
    "check_parquet_version",
    "decode_file_output",
    "decode_text",
    "encode_text",
    "export",
    "frame_of",
    "scores_file_table",
    "surrogate_text_columns",
    "text_list",
    "write_arrow",
    "write_json",
    "write_parquet",
    "write_text",
]

OUTPUT_KINDS = ("none", "text", "json", "literal", "repr")
_META_KEY = b"evalbook"
SURROGATE_TEXT = "surrogate_text"
_SMALL_DICTIONARY = 1024  # categories a Parquet dictionary page is worth it for
_NULL_COLUMNS = "evalbook_null_columns"  # a frame's attrs: its columns known to be all None


def atomic_write(path: Path, write: Callable[[Path], None], *, sync: bool = False) -> None:
    """Write `path` through a temporary file in the same folder, then rename it into place.

    Readers see the old file or the new one, never a partial one. `sync=True` also fsyncs
    the data before the rename (costly); the store's tables do not need it, because the
    event log (fsync'ed) can always rebuild them.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        if sync:
            with tmp_path.open("rb+") as f:
                os.fsync(f.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write a UTF-8 text file atomically."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8", errors="surrogatepass")

    atomic_write(path, write)


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
    """Write a JSON file atomically (UTF-8, `schema_version` first)."""
    body = {"schema_version": SCHEMA_VERSION, **data}
    text = json.dumps(body, ensure_ascii=False, indent=2, default=repr)
    if not _utf8(text):  # lone surrogates: as JSON escapes (\ud800), so the file is UTF-8
        text = json.dumps(body, indent=2, default=repr)

    def write(tmp: Path) -> None:
        tmp.write_text(text + "\n", encoding="utf-8")

    atomic_write(path, write)


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


def _literal(value: Any) -> str | None:
    """`repr(value)` when `ast.literal_eval` gives back an equal value of the same type."""
    import ast

    text = repr(value)
    try:
        back = ast.literal_eval(text)
    except Exception:  # not a literal (nan, objects)
        return None
    return text if type(back) is type(value) and bool(back == value) else None


def _file_output(output: Any) -> tuple[str | None, str]:
    if output is None:
        return None, "none"
    if type(output) is str:
        if _utf8(output):
            return output, "text"
        # a Python literal, not JSON: JSON reads a high and a low surrogate escape as one
        # character, a literal keeps them apart ("\ud83d\ude00" stays two code points)
        return repr(output), "literal"
    value, kind = encode_output(output)
    if kind is None:
        text = json.dumps(value, ensure_ascii=False)
        if _utf8(text):
            return text, "json"
        text = json.dumps(value)
        if json.loads(text) == value:
            return text, "json"
        literal = _literal(value)
        if literal is not None:
            return literal, "literal"
        return text, "json"
    return (value if _utf8(value) else value.encode("utf-8", "backslashreplace").decode()), kind


def _float_texts(outputs: list[Any]) -> list[str]:
    """JSON texts of floats (`repr`, or NaN / Infinity / -Infinity as Python's json writes)."""
    texts = list(map(float.__repr__, outputs))
    if not np.isfinite(np.array(outputs, dtype=np.float64)).all():
        texts = [
            t if math.isfinite(o) else json.dumps(o) for t, o in zip(texts, outputs, strict=True)
        ]
    return texts


def decode_file_output(text: str | None, kind: str | None) -> Any:
    """The output stored in a table file's `output` and `output_kind` columns."""
    if kind == "json" and text is not None:
        return json.loads(text)
    if kind == "literal" and text is not None:
        import ast

        return ast.literal_eval(text)
    if kind == "none":
        return None
    return text


def _output_columns(outputs: list[Any]) -> tuple[np.ndarray, pd.Categorical[Any]]:
    """The `output` texts and their `output_kind` of the table files."""
    texts = np.empty(len(outputs), dtype=object)
    kind = OUTPUT_KINDS.index("text")
    types = set(map(type, outputs))
    if types <= {str} and _utf8("".join(outputs)):  # the common case
        texts[:] = outputs
    elif types <= {float}:  # numbers, e.g. scores of stored outputs
        texts[:] = _float_texts(outputs)
        kind = OUTPUT_KINDS.index("json")
    else:
        kind = -1
        encoded = [_file_output(o) for o in outputs]
        texts[:] = [t for t, _ in encoded]
        codes = np.array([OUTPUT_KINDS.index(k) for _, k in encoded], dtype=np.int8)
    if kind >= 0:
        codes = np.full(len(outputs), kind, dtype=np.int8)
    kinds = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(OUTPUT_KINDS)))
    return texts, kinds


def cases_file_table(run: Run) -> pd.DataFrame:
    """`run.cases` with `output` as text and its `output_kind` next to it."""
    table = run.cases.copy(deep=False)
    texts, kinds = _output_columns(run._results.output)
    table["output"] = pd.Series(texts, index=table.index, dtype=object, copy=False)
    at = list(table.columns).index("output") + 1
    table.insert(at, "output_kind", pd.Series(kinds, index=table.index))
    return table


def cases_file_arrow(results: Results) -> tuple[Any, list[str]]:
    """`cases_file_table` as Arrow (and its binary columns), built without any DataFrame.

    The store writes `cases.parquet` at the end of every run; a run that nobody asks for
    its `cases` table then does not pay for one.
    """
    columns = case_columns(results)
    texts, kinds = _output_columns(results.output)
    columns["output"] = pd.Series(texts, dtype=object, copy=False)  # not inferred as `str`
    names = list(columns)
    names.insert(names.index("output") + 1, "output_kind")
    columns["output_kind"] = kinds
    series = [pd.Series(columns[name], copy=False) for name in names]
    return _arrow_table(names, series, results.n_cases, set())


def scores_file_table(run: Run) -> pd.DataFrame:
    """`run.scores` with `record_grader`: the record's own grader as JSON (else empty)."""
    table = run.scores.copy(deep=False)
    results = run._results
    graders = np.full(len(table), None, dtype=object)
    # only the records that hold anything in their sparse columns can have a grader
    where = range(len(table)) if results.touched is None else results.touched
    for i in where:
        g = results.grader[i]
        if g is not None:
            graders[i] = json.dumps(g.model_dump(mode="json", exclude_none=True))
    table["record_grader"] = pd.Series(graders, index=table.index, dtype=object, copy=False)
    if results.touched is not None:  # the text columns are None outside the touched records
        touched = np.asarray(results.touched, dtype=np.intp)
        table.attrs[_NULL_COLUMNS] = [
            c
            for c in ("message", "rationale", "metadata", "record_grader")
            if not touched.size or pd.isna(table[c].to_numpy()[touched]).all()
        ]
    return table


def export(run: Run, folder: str | os.PathLike[str], fmt: str) -> dict[str, Path]:
    """Write `cases`, `scores` and `summary` tables into `folder` as CSV or Parquet."""
    target = Path(folder).expanduser().resolve()
    target.mkdir(parents=True, exist_ok=True)
    tables = {
        "cases": cases_file_table(run),
        "scores": scores_file_table(run),
        "summary": run.summary(),
    }
    paths: dict[str, Path] = {}
    for name, frame in tables.items():
        path = target / f"{name}.{fmt}"
        if fmt == "parquet":
            write_parquet(frame, path, name)
        else:
            text = frame.to_csv(index=False)
            if not _utf8(text):  # lone surrogates: written as Python escapes (\ud800)
                text = text.encode("utf-8", "backslashreplace").decode("utf-8")
            write_text(path, text)
        paths[name] = path
    return paths
