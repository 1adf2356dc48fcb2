"""What ties a run's final files to their folder and to its log (docs/file-formats.md).

The log is the source of truth; the final files are a faster copy of what it says. So that a
copy is never read as a different result, `summary.json` records, when the run ends, the
log it was written from (`log`: its size in bytes; the run id is the summary's own, the
log's is on its first line) and a CRC-32 of each Parquet file (`files`). A loader checks
them and reads the log instead when they do not hold: final files copied from another run,
a log that went on after them (`mismatch`), a Parquet file edited or swapped (`_load`).
The log's content is not part of the tie: a damaged log line is the log's damage, and the
final files, written before it, are then what holds that line's sample.
"""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path
from typing import Any

from ._layout import EVENTS, open_regular
from ._log._file import LineReader

__all__ = ["crc_of", "first_event", "log_tie", "mismatch"]


def crc_of(data: bytes) -> str:
    """The CRC-32 of `data` as 8 lowercase hex digits (the spelling of every store checksum)."""
    return f"{zlib.crc32(data):08x}"


def first_event(path: Path) -> dict[str, Any] | None:
    """The first event of a log, read alone (a bounded read); None if it is not one."""
    with os.fdopen(open_regular(path), "rb") as f:
        for _, _, raw in LineReader(f, path):  # LineTooLong past the bound
            first = json.loads(raw)
            return first if isinstance(first, dict) else None
    return None


def log_tie(folder: Path) -> dict[str, Any] | None:
    """What `summary.json` records of the log it was written from (None: no log)."""
    path = folder / EVENTS
    return {"bytes": path.stat().st_size} if path.exists() else None


def mismatch(folder: Path, summary: dict[str, Any], run_id: str | None = None) -> str | None:
    """Why the final files of `folder` are not those of its log, or None when they are.

    `run_id`: the log's, when its caller read the log already (a resume: it is not opened
    again), else from its first line. A summary without a `log` record (written by an
    earlier evalbook, or without a log) has nothing to check; a log that cannot be read is
    the log's problem, not a mismatch (the loader reads it and says what is wrong with it).
    """
    recorded = summary.get("log")
    if not isinstance(recorded, dict) or not (folder / EVENTS).exists():
        return None
    try:
        if run_id is None:
            first = first_event(folder / EVENTS)
            run_id = None if first is None else first.get("run_id")
        size = (folder / EVENTS).stat().st_size
    except (OSError, ValueError):
        return None
    if run_id is not None and run_id != summary.get("run_id"):
        return f"they are of run {summary.get('run_id')!r}, the log of run {run_id!r}"
    if size != recorded.get("bytes"):
        return (
            f"the log holds {size:,} bytes, {recorded.get('bytes')!r} when they were written: "
            "it changed after the run ended"
        )
    return None
