"""`eb.runs(store)`: the runs of a store, listed with bounded reads.

A run with `summary.json` is listed from it; one without (killed, or still running) from its
log: replayed when it is at most `LIST_REPLAY_BYTES`, else from its first line and its end.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from .._model._run_data import RunData
from .._util._warn import warn
from ._layout import EVENTS, open_regular
from ._load import summary_of
from ._log._file import being_written
from ._log._format import OLDER
from ._log._read import READ_VERSIONS, SCHEMA_VERSION, NotARunLog, replay, version_error
from ._sink import finish_status
from ._ties import first_event

__all__ = ["runs", "stored_started_at"]

RUNS_COLUMNS = ["name", "id", "path", "started_at", "status", "n_cases", "completion", "headline"]
# `eb.runs` replays a log without summary.json up to this size; of a larger one it reads the
# first line and the end only (no headline then): listing a store stays bounded
LIST_REPLAY_BYTES = 32 << 20
_TAIL_BYTES = 1 << 16


def stored_started_at(folder: Path) -> str | None:
    """When a stored run started, from its summary or the first line of its log."""
    summary = summary_of(folder)
    if summary is not None:
        value = summary.get("started_at")
        return None if value is None else str(value)
    try:
        first = first_event(folder / EVENTS)
    except (OSError, ValueError):
        return None
    value = first.get("started_at") if first is not None else None
    return None if value is None else str(value)


def _last_event(path: Path, size: int) -> dict[str, Any] | None:
    """The last complete line of a log as an event (its last 64 KiB only), or None."""
    with os.fdopen(open_regular(path), "rb") as f:
        f.seek(max(0, size - _TAIL_BYTES))
        tail = f.read(_TAIL_BYTES).rstrip(b"\0")
    lines = tail.split(b"\n")
    try:
        last = json.loads(lines[-2]) if len(lines) > 1 else None
    except ValueError:
        return None
    return last if isinstance(last, dict) else None


def _large_log_row(folder: Path, size: int) -> dict[str, Any] | None:
    """The listing row of a large log without summary.json: its first line and its end."""
    path = folder / EVENTS
    first = first_event(path)
    if first is None or first.get("event") != "run.started":
        return None
    found = first.get("schema_version")
    if found not in READ_VERSIONS:
        raise version_error(f"{path} (line 1)", found, f"{SCHEMA_VERSION} (and {OLDER})")
    last = _last_event(path, size)
    n_cases = len(first["case_ids"])
    epochs = (first.get("options") or {}).get("epochs", 1)  # counts are of samples
    completion = math.nan
    if last is not None and last.get("event") == "run.ended":
        status = str(last.get("status"))
        counts = last.get("counts") or {}
        if n_cases:
            completion = (counts.get("passed", 0) + counts.get("failed", 0)) / (n_cases * epochs)
    else:
        status = "running" if being_written(path) else "incomplete"
    return {
        "name": str(first["name"]),
        "id": str(first["run_id"]),
        "path": str(folder),
        "started_at": first.get("started_at"),
        "status": status,
        "n_cases": n_cases,
        "completion": completion,
        "headline": None,  # a large log is not replayed to list it
    }


def _row(folder: Path) -> dict[str, Any] | None:
    s = summary_of(folder)
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
    fd = open_regular(folder / EVENTS)  # a FIFO or device: an OSError, the run is skipped
    size = os.fstat(fd).st_size
    os.close(fd)
    if size > LIST_REPLAY_BYTES:
        return _large_log_row(folder, size)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a run being written has a partial last line
            log = replay(folder / EVENTS, warn=False)
    except NotARunLog:
        return None
    if log.damage is not None:
        warn(log.damage.message(), RuntimeWarning)
    run = RunData(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=pd.DataFrame(),
        results=log.results,
        path=folder,
    )
    if log.ended is not None and log.damage is None:
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
            warn(f"skipping {entry}: {exc}", RuntimeWarning)
            continue
        if row is not None:
            rows.append(row)
    table = pd.DataFrame(rows, columns=RUNS_COLUMNS)
    table["started_at"] = pd.to_datetime(table["started_at"], utc=True, format="ISO8601")
    table["n_cases"] = table["n_cases"].astype("int64")
    table["completion"] = table["completion"].astype("float64")
    table = table.sort_values(["started_at", "name"], kind="stable", na_position="first")
    return table.reset_index(drop=True)
