"""Reading the run store: `eb.load_run(path)` and `eb.runs(store)`."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from .._model._contract import ERROR, SCORED, STATUSES, InvalidScore, validate_value
from .._model._results import OUTCOMES, PENDING, Results
from .._model._run_data import RunData
from .._model._scores import Grader, ScoreDefinition
from .._util._text import clean
from ._codec import OUTPUT_KINDS, read_file_outputs
from ._events import NotARunLog, SchemaVersionError, replay, warn_invalid
from ._layout import CASES, DATA, EVENTS, FINAL_FILES, SCORES, SUMMARY, open_regular
from ._log import being_written
from ._parquet import frame_of, read_parquet, text_list
from ._sink import finish_status
from ._summary import read_summary

__all__ = ["read_run", "run_folder", "runs", "stored_started_at"]

RUNS_COLUMNS = ["name", "id", "path", "started_at", "status", "n_cases", "completion", "headline"]


def run_folder(path: str | os.PathLike[str]) -> Path:
    """The run folder `path` names (the folder itself, or a file in it); FileNotFoundError."""
    folder = Path(path).expanduser().resolve()
    if folder.is_file():
        folder = folder.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"no run folder at {folder}")
    return folder


def _data(folder: Path, data_file: str | None, case_ids: list[str]) -> pd.DataFrame:
    """The stored input data; without it (none stored, or a damaged file: a warning) the run
    loads with no data columns, since the log holds every result but not the input."""
    if data_file and (folder / DATA).exists():
        try:
            return frame_of(read_parquet(folder / DATA))
        except SchemaVersionError:
            raise
        except Exception as exc:  # garbage or cut short: the results are in the log anyway
            warnings.warn(
                f"{folder / DATA} cannot be read ({type(exc).__name__}: {exc}); the run loads "
                "without its data columns (rescoring needs them: pass the data again)",
                RuntimeWarning,
                stacklevel=4,
            )
    return pd.DataFrame(index=pd.Index(case_ids, dtype=object))


def _summary(folder: Path) -> dict[str, Any] | None:
    """The run's `summary.json`; None when absent, or damaged (a warning: the log decides)."""
    if not (folder / SUMMARY).exists():
        return None
    try:
        return read_summary(folder / SUMMARY)
    except SchemaVersionError:
        raise
    except (OSError, ValueError) as exc:  # e.g. cut short by a power cut
        warnings.warn(
            f"{folder / SUMMARY} cannot be read ({type(exc).__name__}: {exc}); using {EVENTS}",
            RuntimeWarning,
            stacklevel=4,
        )
        return None


def _codes(column: Any, names: tuple[str, ...], missing: int, strict: bool = True) -> np.ndarray:
    """Codes of a text column by position in `names`, vectorised for dictionary columns.

    Null is `missing`; an unknown value raises KeyError, or is `missing` when not `strict`.
    """

    code = {name: i for i, name in enumerate(names)}

    def one(v: Any) -> int:
        return missing if v is None else code[v] if strict else code.get(v, missing)

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    out: np.ndarray
    if pa.types.is_dictionary(array.type) and pa.types.is_string(array.type.value_type):
        lookup = np.array([one(v) for v in array.dictionary.to_pylist()] + [missing], np.int8)
        indices = array.indices.fill_null(len(array.dictionary))
        out = lookup[indices.to_numpy(zero_copy_only=False)]
    else:
        out = np.array([one(v) for v in array.to_pylist()], dtype=np.int8)
    return out


def _sparse(column: Any, size: int) -> tuple[list[Any], np.ndarray]:
    """A mostly-null text column as a list (None where null) and the indices that are set."""
    if column.null_count == len(column):
        return [None] * size, np.zeros(0, dtype=np.intp)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    where = np.flatnonzero(valid)
    out: list[Any] = [None] * size
    for i, v in zip(where.tolist(), text_list(column.filter(valid)), strict=True):
        out[i] = v
    return out, where


def _seconds(column: Any) -> np.ndarray:
    """Epoch seconds of a timestamp column (NaN where null), the floats the run held.

    Whole seconds and the nanoseconds are split before the division: float64 cannot hold
    the nanoseconds since 1970 exactly, and their rounding changed the time in ~7% of cases.
    """

    ns = column.cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64())
    valid = ns.is_valid().to_numpy(zero_copy_only=False)
    whole = ns.fill_null(0).to_numpy(zero_copy_only=False)
    seconds: np.ndarray = (whole // 10**9).astype(np.float64) + (whole % 10**9) / 1e9
    seconds[~valid] = np.nan
    return seconds


def _raw_values(column: Any, where: np.ndarray) -> list[Any]:
    """The stored values at `where`, as Python objects (for a message)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return [array[int(i)].as_py() for i in where]


def _checked_values(column: Any, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A `value` column as floats (NaN where not scored) and the scored rows it fails.

    Every scored value goes through the score contract again: a float column must hold
    values in [0, 1]; any other column type (bool, text, int) is checked value by value, so
    `true` or `"1"` are rejected rather than converted.
    """
    scored = status == SCORED
    if pa.types.is_floating(column.type) or pa.types.is_null(column.type):
        values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
        ok = (values >= 0.0) & (values <= 1.0)  # NaN and ±inf fail both
        return values, np.flatnonzero(scored & ~ok)
    raw = column.to_pylist()
    values = np.full(len(raw), np.nan)
    bad: list[int] = []
    for i, v in enumerate(raw):
        if not scored[i]:
            continue
        try:
            values[i] = validate_value(v)
        except InvalidScore:
            bad.append(i)
    return values, np.asarray(bad, dtype=np.intp)


def _results_from_files(folder: Path, n_scores: int) -> Results:
    cases = read_parquet(folder / CASES)
    scores = read_parquet(folder / SCORES)
    ids = text_list(cases.column("case_id"))
    if not all(type(x) is str for x in ids):
        ids = [str(x) for x in ids]
    results = Results(ids, n_scores)
    if scores.num_rows != len(ids) * n_scores:
        raise ValueError(
            f"{folder / SCORES} has {scores.num_rows} rows, expected {len(ids)} cases × "
            f"{n_scores} scores"
        )
    results.outcome[:] = _codes(cases.column("outcome"), OUTCOMES, PENDING)
    attempts = cases.column("attempts")
    if attempts.null_count:
        attempts = attempts.to_pylist()  # None raises, as it always did
    results.attempts[:] = np.asarray(attempts, dtype=np.int32)
    kinds = _codes(cases.column("output_kind"), OUTPUT_KINDS, -1, strict=False)
    results.output = read_file_outputs(text_list(cases.column("output")), kinds)
    results.error_type = _sparse(cases.column("error_type"), len(ids))[0]
    results.error_message = _sparse(cases.column("error_message"), len(ids))[0]
    results.started_at[:] = _seconds(cases.column("started_at"))
    results.duration_s[:] = cases.column("duration_s").to_numpy(zero_copy_only=False)
    results.status[:] = _codes(scores.column("status"), STATUSES, 0)
    values, invalid = _checked_values(scores.column("value"), results.status)
    results.value[:] = values

    size = scores.num_rows
    results.reason, set_reason = _sparse(scores.column("reason"), size)
    results.message, set_message = _sparse(scores.column("message"), size)
    if invalid.size:  # re-checked through the score contract: an error, never a number
        bad = [repr(x) for x in _raw_values(scores.column("value"), invalid)]
        results.status[invalid] = ERROR
        results.value[invalid] = np.nan
        for i, text in zip(invalid.tolist(), bad, strict=True):
            results.reason[i] = "invalid_score"
            results.message[i] = f"stored value rejected on load: invalid score {text}"
        set_reason = np.union1d(set_reason, invalid)
        warn_invalid(folder / SCORES, bad)
    results.rationale, set_rationale = _sparse(scores.column("rationale"), size)
    metadata, set_metadata = _sparse(scores.column("metadata"), size)
    for i in set_metadata.tolist():  # clean: JSON text may escape a lone surrogate
        metadata[i] = clean(json.loads(metadata[i]))
    results.metadata = metadata
    graders, set_grader = _sparse(scores.column("record_grader"), size)
    for i in set_grader.tolist():
        graders[i] = Grader(**clean(json.loads(graders[i])))
    results.grader = graders
    # after the sparse columns (assigning them resets it): the records that hold anything
    sets = (set_reason, set_message, set_rationale, set_metadata, set_grader)
    results.touched = np.unique(np.concatenate(sets)).tolist()
    return results


def _from_files(folder: Path) -> RunData:
    try:
        summary = read_summary(folder / SUMMARY)
    except SchemaVersionError:
        raise
    except (OSError, ValueError) as exc:  # name the file: the log then decides
        raise ValueError(f"{folder / SUMMARY} cannot be read ({exc})") from exc
    definitions = [ScoreDefinition.model_validate(d) for d in summary["definitions"]]
    results = _results_from_files(folder, len(definitions))
    return RunData(
        name=str(summary["name"]),
        id=str(summary["run_id"]),
        definitions=definitions,
        data=_data(folder, summary.get("data_file"), results.case_ids),
        results=results,
        options=dict(summary.get("options") or {}),
        path=folder,
    )


def _from_log(folder: Path) -> RunData:
    log = replay(folder / EVENTS)
    return RunData(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=_data(folder, log.data_file, log.case_ids),
        results=log.results,
        options=log.options,
        path=folder,
    )


def read_run(path: str | os.PathLike[str], *, warn_incomplete: bool = True) -> RunData:
    """A stored run's data: from its Parquet files, or from its event log after a crash.

    A run with cases that have no final outcome (killed, or still running) warns once,
    naming the run and how many (`warn_incomplete=False`: a resume, which runs them).
    """
    run = _read(run_folder(path))
    if warn_incomplete:
        missing = int(np.count_nonzero(run._results.outcome == PENDING))
        if missing:
            warnings.warn(
                f"run {run.name!r} ({run.path}) is incomplete: {missing} of "
                f"{run._results.n_cases} cases have no final outcome (the run was interrupted "
                "or is still running); resume it with eb.run(..., resume=path)",
                RuntimeWarning,
                stacklevel=3,
            )
    return run


def _read(folder: Path) -> RunData:
    if all((folder / name).exists() for name in FINAL_FILES):
        try:
            return _from_files(folder)
        except SchemaVersionError:
            raise
        except Exception as exc:  # e.g. a file cut short by a power cut: the log decides
            if not (folder / EVENTS).exists():
                raise
            warnings.warn(
                f"{folder}: the final files cannot be read ({exc}); loading from {EVENTS}",
                RuntimeWarning,
                stacklevel=2,
            )
    if (folder / EVENTS).exists():
        return _from_log(folder)
    raise FileNotFoundError(
        f"{folder} is not a stored run: it has no {EVENTS} (see eb.runs() for the runs of a store)"
    )


def stored_started_at(folder: Path) -> str | None:
    """When a stored run started, from its summary or the first line of its log."""
    summary = _summary(folder)
    if summary is not None:
        value = summary.get("started_at")
        return None if value is None else str(value)
    try:
        with os.fdopen(open_regular(folder / EVENTS), "rb") as f:
            first = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    value = first.get("started_at") if isinstance(first, dict) else None
    return None if value is None else str(value)


def _row(folder: Path) -> dict[str, Any] | None:
    s = _summary(folder)
    if s is not None and "name" in s and "run_id" in s:
        return {
            "name": s["name"],
            "id": s["run_id"],
            "path": str(folder),
            "started_at": s.get("started_at"),
            "status": s.get("status", "complete"),
            "n_cases": s.get("n_cases"),
            "completion": s.get("completion"),
            "headline": (s.get("headline") or {}).get("text"),
        }
    if not (folder / EVENTS).exists():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a run being written has a partial last line
            log = replay(folder / EVENTS)
    except NotARunLog:
        return None
    run = RunData(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=pd.DataFrame(),
        results=log.results,
        path=folder,
    )
    if log.ended is not None:
        status = finish_status(log.results)
    else:  # not ended: still being written by a run, or left behind by a crash
        status = "running" if being_written(folder / EVENTS) else "incomplete"
    return {
        "name": log.name,
        "id": log.run_id,
        "path": str(folder),
        "started_at": log.started_at,
        "status": status,
        "n_cases": log.results.n_cases,
        "completion": run.headline.completion,
        "headline": run.headline.text,
    }


def runs(store: str | os.PathLike[str] = "runs") -> pd.DataFrame:
    """The runs of a store, oldest first, complete or not, as a DataFrame.

    Columns: `name, id, path` (absolute), `started_at, status` (complete | incomplete |
    running: a run holds its log right now),
    `n_cases, completion, headline`. Entries that are not runs are ignored; a run that
    cannot be read (another schema version, a damaged log) is skipped with a warning.

    Raises:
        FileNotFoundError: `store` is not a folder (a typo, or nothing was stored yet): the
            message names it. An existing folder without runs gives an empty frame.

    Example:
        >>> import evalbook as eb, tempfile
        >>> list(eb.runs(tempfile.mkdtemp()).columns)
        ['name', 'id', 'path', 'started_at', 'status', 'n_cases', 'completion', 'headline']
    """
    root = Path(store).expanduser().resolve()
    if not root.is_dir():
        # an empty frame here would read as "no runs" when the folder name is a typo
        raise FileNotFoundError(
            f"no run store at {root} (runs are stored in ./runs unless store= says; "
            "pass the folder given as store=)"
        )
    rows: list[dict[str, Any]] = []
    for entry in sorted(root.iterdir()):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        try:
            row = _row(entry)
        except (ValueError, KeyError, TypeError, OSError) as exc:
            warnings.warn(f"skipping {entry}: {exc}", RuntimeWarning, stacklevel=2)
            continue
        if row is not None:
            rows.append(row)
    table = pd.DataFrame(rows, columns=RUNS_COLUMNS)
    table["started_at"] = pd.to_datetime(table["started_at"], utc=True, format="ISO8601")
    table["n_cases"] = table["n_cases"].astype("int64")
    table["completion"] = table["completion"].astype("float64")
    table = table.sort_values(["started_at", "name"], kind="stable", na_position="first")
    return table.reset_index(drop=True)
