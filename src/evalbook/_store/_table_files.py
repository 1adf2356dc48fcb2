"""`cases.parquet`, `scores.parquet` and exports (Parquet or CSV), written atomically.

The stored tables are `run.cases` and `run.scores` (docs/file-formats.md) plus storage
columns that make them lossless: `output_kind` in cases (how `output` is encoded, by the one
output codec of `_codec`), `usage` in cases (the sample's usage by source as JSON, when it
recorded any) and `record_grader` in scores (the record's own grader as JSON, when it has
one).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .._errors import ConfigurationError
from .._model._origin import ORIGINS, origin_codes
from .._model._results import OUTCOMES, Results
from .._model._tables import CASE_COLUMNS, STEP_COUNT_COLUMNS, sparse_categorical, timestamp_ns
from .._model._tally import usage_json
from .._model._usage_tables import sample_amounts
from .._util._fs import write_text
from ._codec import OUTPUT_KINDS, output_columns
from ._log._write import dumps
from ._parquet import NULL_COLUMNS, column_array, text_array, write_parquet

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = [
    "cases_file_arrow",
    "cases_file_table",
    "export",
    "scores_file_table",
    "usage_texts",
]

# the columns of `cases.parquet`: the cases table's, with `output_kind` after `output` and
# `usage` last
CASE_FILE_COLUMNS = [
    *CASE_COLUMNS[: CASE_COLUMNS.index("output") + 1],
    "output_kind",
    *CASE_COLUMNS[CASE_COLUMNS.index("output") + 1 :],
    "usage",
]
_NAT = np.iinfo(np.int64).min


def cases_file_table(run: RunData) -> pd.DataFrame:
    """`run.cases` with `output` as text, its `output_kind` next to it, and `usage` last."""
    table = run.cases.copy(deep=False)
    texts, codes = output_columns(run.results.output)
    kinds = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(list(OUTPUT_KINDS)))
    table["output"] = pd.Series(texts, index=table.index, dtype=object, copy=False)
    at = list(table.columns).index("output") + 1
    table.insert(at, "output_kind", pd.Series(kinds, index=table.index))
    usage = np.asarray(usage_texts(run.results), dtype=object)
    table["usage"] = pd.Series(usage, index=table.index, dtype=object, copy=False)
    if run.results.has_transcripts:
        ties = np.asarray(run.results.ties, dtype=object)
        table["transcript"] = pd.Series(ties, index=table.index, dtype=object, copy=False)
    return table


def usage_texts(results: Results) -> list[str | None]:
    """Each sample's usage as the JSON text of the `usage` column (None: none recorded)."""
    return [None if u is None else dumps(usage_json(u)) for u in results.usage]


def cases_file_arrow(results: Results) -> Any:
    """`cases_file_table` as Arrow, built from the run's arrays.

    The store writes `cases.parquet` at the end of every run: a run that nobody asks for
    its `cases` table then does not pay for one. The Arrow types are the ones the table's
    columns convert to (a property test pins the two equal); the rare error_type column
    goes through the table's own builder.
    """

    texts, kind_codes = output_columns(results.output)
    ns = timestamp_ns(results.started_at)
    tokens_in, tokens_out, cost = sample_amounts(results)
    columns: dict[str, Any] = {
        "case_id": text_array(results.sample_case_ids()),
        "epoch": pa.array(results.sample_epochs()),
        "outcome": _codes_array(results.outcome, OUTCOMES),
        "attempts": pa.array(results.attempts),
        "output": text_array(texts),
        "output_kind": _codes_array(kind_codes, OUTPUT_KINDS),
        "error_type": _mostly_none(results.error_type, categorical=True),
        "error_message": _mostly_none(results.error_message, categorical=False),
        "origin": _codes_array(origin_codes(results.origin), ORIGINS),
        "started_at": pa.array(ns, type=pa.timestamp("ns", tz="UTC"), mask=ns == _NAT),
        "duration_s": pa.array(results.duration_s),
        "input_tokens": pa.array(tokens_in),
        "output_tokens": pa.array(tokens_out),
        "cost": pa.array(cost),
        "usage": _mostly_none(usage_texts(results), categorical=False),
    }
    names = CASE_FILE_COLUMNS
    if results.has_transcripts:
        # the counts `run.cases` shows (null: no transcript) and each line's tie, last
        at = names.index("usage")
        names = [*names[:at], *STEP_COUNT_COLUMNS, *names[at:], "transcript"]
        for k, name in enumerate(STEP_COUNT_COLUMNS):
            counts = results.steps[:, k].astype(np.int64)
            columns[name] = pa.array(counts, mask=counts < 0)
        columns["transcript"] = _mostly_none(list(results.ties), categorical=False)
    return pa.Table.from_arrays([columns[n] for n in names], names=names)


def _mostly_none(values: list[Any], *, categorical: bool) -> Any:
    """An error column: nulls when nothing failed (nothing to scan), else as the table has it."""

    if values.count(None) == len(values):
        return pa.nulls(len(values))
    if categorical:
        return column_array(pd.Series(sparse_categorical(values)))
    return text_array(values)


def _codes_array(codes: np.ndarray, categories: Sequence[str]) -> Any:
    """Category codes (-1: missing) as an Arrow dictionary array, as pandas converts them."""

    missing = codes < 0
    if missing.all():  # type null, as a categorical with no values converts
        return pa.nulls(len(codes))
    indices = codes.astype(np.int8, copy=False)
    index = pa.array(indices, mask=missing) if missing.any() else pa.array(indices)
    return pa.DictionaryArray.from_arrays(index, pa.array(list(categories), type=pa.string()))


def scores_file_table(run: RunData) -> pd.DataFrame:
    """`run.scores` with `record_grader`: the record's own grader as JSON (else empty)."""
    table = run.scores.copy(deep=False)
    results = run.results
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
        table.attrs[NULL_COLUMNS] = [
            c
            for c in ("message", "rationale", "metadata", "record_grader")
            if not touched.size or pd.isna(table[c].to_numpy()[touched]).all()
        ]
    return table


def export(run: RunData, folder: str | os.PathLike[str], fmt: str) -> dict[str, Path]:
    """Write `cases`, `scores` and `summary` tables into `folder` as CSV or Parquet (and
    `steps` and `tool_calls` for a run with transcripts).

    Raises:
        ConfigurationError: `folder` names a file (`x.parquet`, `x.csv`, an existing file):
            three tables need a folder, and a file name made one that `pd.read_parquet`
            reads as a single table mixing all three.
    """
    target = Path(folder).expanduser().resolve()
    if target.suffix.lower() in (".parquet", ".pq", ".csv") or target.is_file():
        raise ConfigurationError(
            f"run.to_{fmt}() writes three tables (cases, scores, summary) into a folder, and "
            f"{str(folder)!r} names a file: pass a folder (e.g. {str(target.with_suffix(''))!r}), "
            f"or write one table with run.scores.to_{fmt}({str(folder)!r})"
        )
    target.mkdir(parents=True, exist_ok=True)
    tables = {
        "cases": cases_file_table(run),
        "scores": scores_file_table(run),
        "summary": run.summary(),
    }
    if run.results.has_transcripts:  # a run with transcripts: its steps and tool calls too
        tables["steps"] = run.steps()
        tables["tool_calls"] = run.tool_calls()
    paths: dict[str, Path] = {}
    for name, frame in tables.items():
        path = target / f"{name}.{fmt}"
        if fmt == "parquet":
            write_parquet(frame, path, name)
        else:
            write_text(path, frame.to_csv(index=False))
        paths[name] = path
    return paths
