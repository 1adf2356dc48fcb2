"""`summary.json`, and the final files of a run written together when it ends.

`summary.json` is written last: once it is there, `cases.parquet` and `scores.parquet` are
whole (each file is written atomically), so a loader may trust the three together. A
failure on the way (a full disk) removes all three: the log, complete by then, decides.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._model._scoring_rule import outcome_counts
from .._util import _fs
from .._util._text import clean
from .._version import __version__
from ._layout import (
    CASES,
    DATA,
    FINAL_FILES,
    PARQUET_CAP,
    SCORES,
    STEPS,
    SUMMARY,
    SUMMARY_CAP,
    read_regular,
)
from ._log._read import FILE_READ_VERSIONS, SCHEMA_VERSION, version_error
from ._parquet import write_arrow, write_parquet
from ._table_files import cases_file_arrow, scores_file_table
from ._ties import crc_of, log_tie

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["finish_files", "read_summary", "records", "write_json"]


def _plain(value: Any) -> Any:
    """NaN and numpy scalars become JSON-friendly values."""
    if isinstance(value, float | np.floating):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON-ready rows (column by column: `to_dict` costs ms even for 3 rows).

    Example:
        >>> records(pd.DataFrame({"a": [1, 2], "b": [0.5, float("nan")]}))
        [{'a': 1, 'b': 0.5}, {'a': 2, 'b': None}]
    """
    names = [str(c) for c in frame.columns]
    columns = [frame[c].tolist() for c in frame.columns]
    return [
        {k: _plain(v) for k, v in zip(names, row, strict=True)}
        for row in zip(*columns, strict=True)
    ]


def _crc(data: dict[str, Any]) -> str:
    """The checksum of a store JSON file: the CRC-32 of its content in one canonical
    spelling (sorted keys, compact ASCII), so that it does not depend on the indentation."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    return crc_of(text.encode())


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a store JSON file atomically (UTF-8, `schema_version` first, `crc` last)."""
    content = json.loads(json.dumps({"schema_version": SCHEMA_VERSION, **data}, default=repr))
    _fs.write_json(path, {**content, "crc": _crc(content)})


def read_summary(path: Path) -> dict[str, Any]:
    """A `summary.json`, its `schema_version` checked (text with lone surrogates escaped).

    Read bounded (`read_regular`): a FIFO, a link out of the folder or a file over
    `SUMMARY_CAP` is an OSError, never a wait or a full memory.
    """
    data = json.loads(read_regular(path, SUMMARY_CAP).decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    found = data.get("schema_version")
    if found not in FILE_READ_VERSIONS:
        raise version_error(str(path), found, f"{SCHEMA_VERSION} (and 2 and 3)")
    crc = data.pop("crc", None)  # absent in files of earlier writers: read unchecked
    if crc is not None and crc != _crc(data):
        raise ValueError(f"{path}: checksum mismatch (the file was changed after it was written)")
    cleaned: dict[str, Any] = clean(data)  # a `\ud800` escape (0.1.0 wrote them) reads as one
    return cleaned


def finish_files(run: RunData, started_at: str, ended_at: str | None, status: str) -> None:
    """Write `cases.parquet`, `scores.parquet` and `summary.json`, each atomically.

    All three or none: a stale `summary.json` goes first (the three are trusted together
    only while it is there), and a failure removes the ones written before it, then raises.
    """
    assert run.path is not None
    folder = run.path
    try:
        (folder / SUMMARY).unlink(missing_ok=True)
        _write_final(run, folder, started_at, ended_at, status)
    except BaseException:
        for name in (*FINAL_FILES, STEPS):
            (folder / name).unlink(missing_ok=True)
        raise


def _write_final(
    run: RunData, folder: Path, started_at: str, ended_at: str | None, status: str
) -> None:
    """The three final files, `summary.json` last."""
    write_arrow(cases_file_arrow(run.results), folder / CASES, "cases")
    write_parquet(scores_file_table(run), folder / SCORES, "scores")
    tables = [CASES, SCORES]
    if run.results.has_transcripts:  # run.steps(), for readers of the folder (not read back)
        write_parquet(run.steps(), folder / STEPS, "steps")
        tables.append(STEPS)
    else:
        (folder / STEPS).unlink(missing_ok=True)
    # what ties these files to the folder's log and to each other (`_ties`)
    files = {name: {"crc": crc_of(read_regular(folder / name, PARQUET_CAP))} for name in tables}
    h = run.headline
    write_json(
        folder / SUMMARY,
        {
            "run_id": run.id,
            "name": run.name,
            "started_at": started_at,
            "ended_at": ended_at,
            "status": status,
            "n_cases": run.results.n_cases,
            "completion": h.completion,
            "counts": outcome_counts(run.results),
            "evalbook_version": __version__,
            "data_file": DATA if (folder / DATA).exists() else None,
            "options": run.options,
            "headline": {
                "score": h.score,
                "label": h.label,
                "value": h.value,
                "ci": list(h.ci) if h.ci is not None else None,
                "completion": h.completion,
                "text": h.text,
            },
            "definitions": [d.model_dump(mode="json") for d in run.definitions],
            "summary": records(run.summary()),
            **({"usage": records(run.usage_summary())[0]} if any(run.results.usage) else {}),
            "files": files,
            "log": log_tie(folder),
        },
    )
