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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._events import SCHEMA_VERSION, encode_output, version_error

if TYPE_CHECKING:
    from ._run import Run

__all__ = [
    "OUTPUT_KINDS",
    "atomic_write",
    "cases_file_table",
    "check_parquet_version",
    "decode_file_output",
    "export",
    "scores_file_table",
    "write_json",
    "write_parquet",
    "write_text",
]

OUTPUT_KINDS = ("none", "text", "json", "literal", "repr")
_META_KEY = b"evalbook"


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

    def write(tmp: Path) -> None:
        tmp.write_text(text + "\n", encoding="utf-8", errors="surrogatepass")

    atomic_write(path, write)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON-ready rows."""
    return [
        {str(k): _clean(v) for k, v in row.items()}
        for row in frame.astype(object).to_dict("records")
    ]


def write_parquet(frame: pd.DataFrame, path: Path, table: str, index: bool = False) -> None:
    """Write a table atomically as Parquet, with `schema_version` in the file's metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(frame, preserve_index=index)
    # dictionary-encode the categorical columns only: building dictionaries of unique text
    # (ids, outputs) costs time and saves nothing
    cats = [str(c) for c in frame.columns if isinstance(frame[c].dtype, pd.CategoricalDtype)]
    meta = dict(arrow.schema.metadata or {})
    meta[_META_KEY] = json.dumps({"schema_version": SCHEMA_VERSION, "table": table}).encode()
    arrow = arrow.replace_schema_metadata(meta)

    def write(tmp: Path) -> None:
        pq.write_table(arrow, tmp, write_statistics=False, use_dictionary=cats)

    atomic_write(path, write)


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


def _file_output(output: Any) -> tuple[str | None, str]:
    if output is None:
        return None, "none"
    if type(output) is str:
        if _utf8(output):
            return output, "text"
        return json.dumps(output), "json"
    value, kind = encode_output(output)
    if kind is None:
        text = json.dumps(value, ensure_ascii=False)
        return (text if _utf8(text) else json.dumps(value)), "json"
    return (value if _utf8(value) else value.encode("utf-8", "backslashreplace").decode()), kind


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


def cases_file_table(run: Run) -> pd.DataFrame:
    """`run.cases` with `output` as text and its `output_kind` next to it."""
    table = run.cases.copy(deep=False)
    outputs = run._results.output
    texts = np.empty(len(outputs), dtype=object)
    if all(type(o) is str and o.isascii() for o in outputs):  # the common case, fast
        texts[:] = outputs
        codes = np.full(len(outputs), OUTPUT_KINDS.index("text"), dtype=np.int8)
    else:
        encoded = [_file_output(o) for o in outputs]
        texts[:] = [t for t, _ in encoded]
        codes = np.array([OUTPUT_KINDS.index(k) for _, k in encoded], dtype=np.int8)
    table["output"] = texts
    kinds = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(OUTPUT_KINDS)))
    at = list(table.columns).index("output") + 1
    table.insert(at, "output_kind", pd.Series(kinds, index=table.index))
    return table


def scores_file_table(run: Run) -> pd.DataFrame:
    """`run.scores` with `record_grader`: the record's own grader as JSON (else empty)."""
    table = run.scores.copy(deep=False)
    graders = np.empty(len(table), dtype=object)
    for i, g in enumerate(run._results.grader):
        if g is not None:
            graders[i] = json.dumps(g.model_dump(mode="json", exclude_none=True))
    table["record_grader"] = graders
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
            write_text(path, frame.to_csv(index=False))
        paths[name] = path
    return paths
