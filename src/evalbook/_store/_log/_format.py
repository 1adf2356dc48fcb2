"""The lines of `events.jsonl`: their versions, their checksum, and reading them checked.

Every line of version 3 and later ends with `"crc":"xxxxxxxx"`, the CRC-32 of the line as
written without that field (`seal` writes it). `read_events` streams a log (bounded by
`_file.MAX_LINE`) and checks every line: its checksum, that it is a JSON object, and that it
is of the log's one version. A line that fails is damage (`Bad`); `_read.replay` recovers up
to it. The format is documented in docs/file-formats.md.
"""

from __future__ import annotations

import json
import math
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from ..._util._text import TextGate
from ..._util._warn import warn
from .._layout import open_regular
from ._file import LineReader

__all__ = [
    "FILE_READ_VERSIONS",
    "LABELS_READ_VERSIONS",
    "LABELS_VERSION",
    "OLDER",
    "READ_VERSIONS",
    "SCHEMA_VERSION",
    "Bad",
    "Damage",
    "DamagedLog",
    "NotARunLog",
    "SchemaVersionError",
    "checked_lines",
    "event_of",
    "field_int",
    "field_number",
    "field_text",
    "open_log",
    "read_events",
    "seal",
    "version_error",
    "warn_truncated",
]

# The version every store file is written with. The log's lines: 1, the first format; 2, case
# times as integer microseconds (started_us, duration_us, at_us); 3, a checksum on every line
# and `epoch` on the lines of a sample; 4, the `origin` of a failed sample (`case.ended`) and of
# an error record (`score.recorded`). The Parquet files and summary.json: 2, as the log's
# version 2; 3, an `epoch` column (cases, scores) and the summary's epoch columns; 4, an
# `origin` column (cases, scores).
SCHEMA_VERSION = 4
READ_VERSIONS = (1, 2, 3, 4)  # of the log
FILE_READ_VERSIONS = (2, 3, 4)  # of the Parquet files and summary.json
OLDER = "1 to 3"  # the older versions this evalbook reads, for messages
# `labels.jsonl` (human labels, `eb.review`) has its own line version, ahead of the run's files:
# 3 and 4, the label as given; 5, with the draw that picked its sample (`DRAW_KEYS`). Only
# that file changed, so a run written now stays readable by an evalbook reading version 4.
LABELS_VERSION = 5
LABELS_READ_VERSIONS = (3, 4, 5)
# the JSON escape of a surrogate (\ud800-\udfff): a line that may decode to a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class NotARunLog(ValueError):
    """A file named like a run log that does not start with `run.started`."""


class SchemaVersionError(ValueError):
    """A store file was written with a `schema_version` this evalbook cannot read."""


def version_error(
    where: str, found: object, reads: str = str(SCHEMA_VERSION)
) -> SchemaVersionError:
    """The error for a file with another schema version, naming both versions."""
    return SchemaVersionError(
        f"{where} has schema_version {found!r}, but this evalbook reads schema_version "
        f"{reads}; open it with the evalbook version that wrote it"
    )


def seal(obj: str) -> str:
    """An event line: the JSON object `obj` (ASCII) with its checksum as last key, and `\\n`.

    The checksum is the CRC-32 of `obj` exactly as written, as 8 lowercase hex digits.

    Example:
        >>> seal('{"a":1}')
        '{"a":1,"crc":"561bacaf"}\\n'
    """
    return f'{obj[:-1]},"crc":"{zlib.crc32(obj.encode()):08x}"}}\n'


_SEAL_LEN = 18  # len(',"crc":"xxxxxxxx"}')
_SEAL = re.compile(rb',"crc":"([0-9a-f]{8})"\}\Z')


class DamagedLog(ValueError):
    """A log damaged at its first line (`run.started`): there is nothing to recover."""


class Bad(Exception):
    """A damaged line: its number, the offset of its start, and what is wrong with it."""

    def __init__(self, number: int, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.number, self.offset, self.reason = number, offset, reason


@dataclass(frozen=True, slots=True)
class Damage:
    """Where a log is damaged: reading stopped at this line; the events before it count.

    `offset` is the byte offset of the line's start (where a resume cuts the log, after
    setting the whole of it aside); `unread` the lines not read, this one included (at
    least that many when not `exact`: counting stops after 256 MiB).
    """

    path: Path
    line: int
    offset: int
    reason: str
    unread: int
    exact: bool = True

    def message(self) -> str:
        """One sentence: file, line, what is wrong, and how much was not read."""
        more = "" if self.exact else " at least"
        return (
            f"{self.path}, line {self.line}: {self.reason}; the run loads the events before "
            f"it, and{more} {self.unread} line(s) from there on were not read (cases logged "
            "after it load as not run; resume= runs them again and keeps the damaged log as "
            f"{self.path.name}.damaged-<n>)"
        )


def event_of(
    path: Path,
    number: int,
    offset: int,
    raw: bytes,
    versions: tuple[int, ...] = READ_VERSIONS,
) -> dict[str, Any]:
    """One line as an event, its checksum and `schema_version` checked; `Bad` if damaged.

    `versions`: the file's readable versions (the log's by default); a later one is the
    version error, any other one damage."""
    sealed = _SEAL.search(raw, max(0, len(raw) - _SEAL_LEN))
    if sealed is not None:
        crc = zlib.crc32(b"}", zlib.crc32(memoryview(raw)[: len(raw) - _SEAL_LEN]))
        if crc != int(sealed[1], 16):
            raise Bad(
                number, offset, "checksum mismatch (the line was changed after it was written)"
            )
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Bad(number, offset, f"not a JSON line ({type(exc).__name__}: {exc})") from None
    if not isinstance(event, dict):
        raise Bad(number, offset, f"not a JSON object (a JSON {type(event).__name__})")
    found = event.get("schema_version")
    newest = max(versions)
    if (type(found) is int and found > newest) or "schema_version" not in event:
        older = OLDER if versions == READ_VERSIONS else " and ".join(map(str, versions[:-1]))
        raise version_error(f"{path} (line {number})", found, f"{newest} (and {older})")
    if type(found) is not int or found not in versions:
        raise Bad(number, offset, f"schema_version {found!r} is not a version of this log")
    if sealed is not None:
        del event["crc"]
        if found < 3:
            raise Bad(number, offset, f"a checksum on a schema_version {found} line")
    elif found >= 3:
        raise Bad(number, offset, f"no checksum at its end (every version {found} line has one)")
    elif "crc" in event:
        raise Bad(number, offset, f"a 'crc' key in a schema_version {found} line")
    return event


def checked_lines(
    path: Path, reader: LineReader, gate: TextGate
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """`(number, offset, event)` of every line; `Bad` for a damaged one.

    One file holds one version: the first line's. A version 3 line in a version 2 log (or
    the reverse) is damage at that line. The one exception is a version 3 log resumed by
    this evalbook: its lines go on in version 4 (the same lines, with `origin`), so a
    version 3 log may end with version 4 lines, never the reverse.
    """
    version: int | None = None
    for number, offset, raw in reader:
        if not raw.strip():
            continue
        event = event_of(path, number, offset, raw)
        found = event["schema_version"]
        if version is None:
            version = found
        elif found != version:
            if not (version == 3 and found == 4):
                raise Bad(
                    number, offset, f"a schema_version {found} line in a version {version} log"
                )
            version = found  # resumed by this evalbook: no version 3 line after it
        if _SURROGATE_ESCAPE.search(raw):  # rare: only then is the event worth a walk
            event = gate(event, f"{path}, line {number}")
        yield number, offset, event


def open_log(path: Path) -> BinaryIO:
    try:  # a FIFO, a device or a symlink out of the folder is no log (and must not hang)
        fd = open_regular(path)
    except OSError as exc:
        raise ValueError(f"{path} cannot be read as a run log ({exc})") from None
    return os.fdopen(fd, "rb")


def warn_truncated(path: Path, number: int) -> None:
    warn(
        f"{path}: the last line (line {number}) is truncated (the run was interrupted while "
        "writing it); it is ignored",
        RuntimeWarning,
    )


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the events of a log, every line checked (checksum, `schema_version`).

    The file is streamed, never read whole. Only newline-terminated lines count: a truncated
    last line (a crash in the middle of a write) is skipped with a warning, and NUL bytes
    after it (space reserved by evalbook 0.1.0's writer) are ignored. A damaged line is a
    `ValueError` naming the file and the line (`replay` recovers up to it instead). Text that
    decodes to a lone surrogate (a `\\ud800` escape written by hand, or by 0.1.0) is
    replaced by its escape, with one warning per log.
    """
    with open_log(path) as f:
        reader = LineReader(f, path)
        try:
            for _, _, event in checked_lines(path, reader, TextGate()):
                yield event
        except Bad as bad:
            raise ValueError(f"{path}, line {bad.number}: {bad.reason}") from None
        if reader.truncated is not None:
            warn_truncated(path, reader.truncated)


def field_text(event: dict[str, Any], key: str, optional: bool = False) -> Any:
    """`event[key]` if it is text (or absent or null, when `optional`); else TypeError."""
    value = event.get(key) if optional else event[key]
    if not (value is None and optional) and type(value) is not str:
        raise TypeError(f"{key!r} is {type(value).__name__}, not text")
    return value


def field_int(event: dict[str, Any], key: str, optional: bool = False, low: int = 0) -> Any:
    """`event[key]` if it is an integer >= `low` (or absent or null, when `optional`)."""
    value = event.get(key) if optional else event[key]
    if value is None and optional:
        return None
    if type(value) is not int or value < low:
        raise TypeError(f"{key!r} is {value!r}, not an integer >= {low}")
    return value


def field_number(event: dict[str, Any], key: str) -> float:
    """A version 1 time in seconds (null: never taken)."""
    value = event.get(key)
    if value is None:
        return math.nan
    if type(value) not in (int, float):
        raise TypeError(f"{key!r} is {value!r}, not a number")
    return float(value)
