"""The table files of the run store and of exports: Parquet and CSV, written atomically.

The stored tables are the tables of DESIGN §5 plus two storage columns that make them
lossless: `output_kind` in cases (how `output` is encoded) and `record_grader` in scores
(the record's own grader as JSON, when it has one).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._model._results import OUTCOMES
from .._model._tables import CASE_COLUMNS, _sparse_categorical, timestamp_ns
from ._events import encode_output
from ._files import (
    _NULL_COLUMNS,
    _column_array,
    _objects,
    _text_array,
    _utf8,
    write_parquet,
    write_text,
)

if TYPE_CHECKING:
    from .._model._results import Results
    from .._model._run_data import RunData

__all__ = [
    "OUTPUT_KINDS",
    "cases_file_arrow",
    "cases_file_table",
    "decode_file_output",
    "export",
    "scores_file_table",
]

OUTPUT_KINDS = ("none", "text", "json", "literal", "repr")
# the columns of `cases.parquet`: the cases table's, with `output_kind` after `output`
CASE_FILE_COLUMNS = [
    *CASE_COLUMNS[: CASE_COLUMNS.index("output") + 1],
    "output_kind",
    *CASE_COLUMNS[CASE_COLUMNS.index("output") + 1 :],
]
_NAT = np.iinfo(np.int64).min


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


def _output_columns(outputs: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The `output` texts and their `output_kind` codes (into `OUTPUT_KINDS`)."""
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
    return texts, codes


def cases_file_table(run: RunData) -> pd.DataFrame:
    """`run.cases` with `output` as text and its `output_kind` next to it."""
    table = run.cases.copy(deep=False)
    texts, codes = _output_columns(run._results.output)
    kinds = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(OUTPUT_KINDS)))
    table["output"] = pd.Series(texts, index=table.index, dtype=object, copy=False)
    at = list(table.columns).index("output") + 1
    table.insert(at, "output_kind", pd.Series(kinds, index=table.index))
    return table


def cases_file_arrow(results: Results) -> tuple[Any, list[str]]:
    """`cases_file_table` as Arrow (and its binary columns), built from the run's arrays.

    The store writes `cases.parquet` at the end of every run: a run that nobody asks for
    its `cases` table then does not pay for one. The Arrow types are the ones the table's
    columns convert to (a property test pins the two equal); the rare error_type column
    goes through the table's own builder.
    """
    import pyarrow as pa

    texts, kind_codes = _output_columns(results.output)
    ns = timestamp_ns(results.started_at)
    columns: dict[str, tuple[Any, bool]] = {  # name: (array, written as binary)
        "case_id": _text_array(_objects(results.case_ids)),
        "outcome": (_codes_array(results.outcome, OUTCOMES), False),
        "attempts": (pa.array(results.attempts), False),
        "output": _text_array(texts),
        "output_kind": (_codes_array(kind_codes, OUTPUT_KINDS), False),
        "error_type": _mostly_none(results.error_type, categorical=True),
        "error_message": _mostly_none(results.error_message, categorical=False),
        "started_at": (pa.array(ns, type=pa.timestamp("ns", tz="UTC"), mask=ns == _NAT), False),
        "duration_s": (pa.array(results.duration_s), False),
    }
    names = CASE_FILE_COLUMNS
    arrays = [columns[name][0] for name in names]
    return pa.Table.from_arrays(arrays, names=names), [c for c in names if columns[c][1]]


def _mostly_none(values: list[Any], *, categorical: bool) -> tuple[Any, bool]:
    """An error column: nulls when nothing failed (nothing to scan), else as the table has it."""
    import pyarrow as pa

    if values.count(None) == len(values):
        return pa.nulls(len(values)), False
    if categorical:
        return _column_array(pd.Series(_sparse_categorical(values)))
    return _text_array(_objects(values))


def _codes_array(codes: np.ndarray, categories: Sequence[str]) -> Any:
    """Category codes (-1: missing) as an Arrow dictionary array, as pandas converts them."""
    import pyarrow as pa

    missing = codes < 0
    if missing.all():  # type null, as a categorical with no values converts
        return pa.nulls(len(codes))
    indices = codes.astype(np.int8, copy=False)
    index = pa.array(indices, mask=missing) if missing.any() else pa.array(indices)
    return pa.DictionaryArray.from_arrays(index, pa.array(list(categories), type=pa.string()))


def scores_file_table(run: RunData) -> pd.DataFrame:
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


def export(run: RunData, folder: str | os.PathLike[str], fmt: str) -> dict[str, Path]:
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
