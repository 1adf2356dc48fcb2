"""The importers' core: every file another harness wrote is read here, bounded, and checked.

An importer never opens a file itself. Sniffing reads at most `HEAD_BYTES` of a file's head; a
JSON or JSON-lines file is read only when it is a regular file of at most `MAX_BYTES`, and never
more than that many bytes (should it grow while read); a folder is looked at `MAX_ENTRIES`
entries deep. A FIFO, a device (a symlink to /dev/zero) or a file over the cap is refused at
once with one message, never waited on or read into memory. `check_means` is the one check of
the values read against the means the harness itself reported (docs/interop.md).
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .._util._warn import warn
from ._imported import FormatError

__all__ = [
    "HEAD_BYTES",
    "MAX_BYTES",
    "MAX_ENTRIES",
    "FileError",
    "NotJson",
    "Refused",
    "Reported",
    "check_means",
    "check_version",
    "decode",
    "folder_entries",
    "head",
    "json_lines",
    "json_object",
    "open_file",
    "read_bytes",
    "read_json",
    "too_large",
]

# how much of a file any sniff reads: enough for the first keys every format writes
HEAD_BYTES = 4096
# the most an importer reads of one file (a JSON or JSON-lines file, a zip member): parsing
# 1 GiB of JSON already takes several GiB of memory, and it is the largest any importer accepted
MAX_BYTES = 1 << 30
# how many entries of a folder an importer looks at (sniffing a huge folder stays cheap)
MAX_ENTRIES = 2000
# a FIFO opened to be read blocks until a writer comes; opened non-blocking, fstat tells it
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)


class FileError(FormatError):
    """A file the core could not read: the message is `<path>: <why>`; `why` alone says why."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{path}: {why}")
        self.path = path
        self.why = why


class Refused(FileError):
    """Not read at all: not a regular file, or larger than `MAX_BYTES`."""


class NotJson(FileError):
    """Read, but not UTF-8 JSON: `why` says where (byte, or line and column)."""


def too_large(path: Path, size: int | None = None) -> Refused:
    """The one error for a file over the cap, in every format."""
    what = "it grew past that while read" if size is None else f"it has {size} bytes"
    return Refused(
        path, f"larger than the {MAX_BYTES} bytes (1 GiB) evalbook reads of one file ({what})"
    )


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a special file"


def open_file(path: Path) -> IO[bytes]:
    """`path` opened for reading once it is known to be a regular file within the cap.

    Opened first, then checked (`fstat` of the open file), so what is read is what was checked.

    Raises:
        Refused: not a regular file, or larger than `MAX_BYTES`.
        OSError: it cannot be opened (missing, no permission).
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise Refused(
                path,
                f"not a regular file ({_kind(info.st_mode)}): evalbook reads results from "
                "regular files and folders",
            )
        if info.st_size > MAX_BYTES:
            raise too_large(path, info.st_size)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def head(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first `n` bytes (at most `HEAD_BYTES`) of a regular file; b"" for anything else.

    For sniffing: it never raises and never waits (a FIFO or a device reads as b"").

    Example:
        >>> head(Path("/dev/null")), head(Path("/no/such/file"))
        (b'', b'')
    """
    try:
        with open_file(path) as f:
            return f.read(min(n, HEAD_BYTES))
    except (OSError, ValueError):  # a FileError is a ValueError: not readable, so not this format
        return b""


def read_bytes(path: Path) -> bytes:
    """A regular file's bytes, at most `MAX_BYTES` of them.

    Raises:
        Refused: not a regular file, or larger than `MAX_BYTES` (also when it grew to be).
        OSError: it cannot be opened or read.
    """
    with open_file(path) as f:
        data = f.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise too_large(path)
    return data


def decode(path: Path, raw: bytes) -> str:
    """`raw` (read from `path`) as UTF-8 text.

    Raises:
        NotJson: not UTF-8, naming the first byte that is not.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise NotJson(path, f"not UTF-8 text at byte {e.start}") from None


def read_json(path: Path) -> object:
    """A JSON file's value (UTF-8, within the cap).

    Raises:
        Refused: not a regular file, or larger than `MAX_BYTES`.
        NotJson: not UTF-8 (the byte), not JSON (the line and column), or nested too deeply.
        OSError: it cannot be opened or read.
    """
    text = decode(path, read_bytes(path))
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise NotJson(path, f"line {e.lineno}, column {e.colno}: invalid JSON: {e.msg}") from None
    except RecursionError:
        raise NotJson(path, "JSON nested too deeply") from None


def json_object(raw: bytes) -> dict[str, Any] | str:
    """One line of a JSON-lines file as an object, or why it is not one.

    Example:
        >>> json_object(b'{"a": 1}'), json_object(b"[1]"), json_object(b"\\xff")
        ({'a': 1}, 'not a JSON object', 'not UTF-8')
    """
    try:
        record = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        return "not UTF-8"
    except ValueError as exc:
        return f"not JSON ({exc.args[0] if exc.args else exc})"
    except RecursionError:
        return "not JSON (nested too deeply)"
    if not isinstance(record, dict):
        return "not a JSON object"
    return record


def json_lines(path: Path) -> Iterator[tuple[str, dict[str, Any] | str]]:
    """Each non-blank line of a JSON-lines file: where it is (`file:line`) and its object, or
    why it is not one (a damaged line is the caller's to skip; the rest is still read).

    Raises:
        Refused: not a regular file, or larger than `MAX_BYTES` (also when it grew to be).
        OSError: it cannot be opened or read.
    """
    with open_file(path) as f:
        left = MAX_BYTES
        number = 0
        while raw := f.readline(left + 1):
            left -= len(raw)
            if left < 0:
                raise too_large(path)
            number += 1
            if raw.strip():
                yield f"{path.name}:{number}", json_object(raw)


def folder_entries(folder: Path, limit: int = MAX_ENTRIES) -> list[Path]:
    """The first `limit` entries of `folder` (in the order the system lists them), sorted."""
    out: list[Path] = []
    with os.scandir(folder) as it:
        for i, entry in enumerate(it):
            if i >= limit:
                break
            out.append(Path(entry.path))
    return sorted(out)


# -- a format's declared version: one rule for every importer ---------------------------------


def check_version(
    path: Path,
    found: object,
    *,
    harness: str,
    reads: Sequence[int],
    upgrade: str = "upgrade evalbook (pip install -U evalbook)",
) -> None:
    """Refuse a file whose declared format version is not one evalbook reads (docs/interop.md).

    A newer version is said to be newer, with what to upgrade; an older or missing one says which
    versions are read. A format that declares no version is read by its shape instead (its
    importer checks each field it needs), so this is called only where a version is written.

    Example:
        >>> check_version(Path("r.json"), 3, harness="promptfoo results", reads=[3])
        >>> try:
        ...     check_version(Path("r.json"), 4, harness="promptfoo results", reads=[3])
        ... except FormatError as e:
        ...     print(e)  # doctest: +NORMALIZE_WHITESPACE
        r.json: a promptfoo results file of format version 4, newer than evalbook reads
        (version 3): upgrade evalbook (pip install -U evalbook) and import again
    """
    if isinstance(found, int) and not isinstance(found, bool) and found in reads:
        return
    known = ", ".join(str(v) for v in sorted(reads))
    versions = f"version{'s' if len(reads) > 1 else ''} {known}"
    if isinstance(found, int) and not isinstance(found, bool) and found > max(reads):
        raise FormatError(
            f"{path}: a {harness} file of format version {found}, newer than evalbook reads "
            f"({versions}): {upgrade} and import again"
        )
    shown = "no format version" if found is None else f"format version {found!r}"
    raise FormatError(f"{path}: a {harness} file of {shown}; evalbook reads {versions}")


# -- the values read against the harness's own totals -----------------------------------------


@dataclass(frozen=True)
class Reported:
    """A mean the harness reported: of `name`, over `count` cases, as it wrote them."""

    name: str
    mean: object
    count: object


def check_means(
    file: Path,
    values: Mapping[str, Sequence[object]],
    reported: Iterable[Reported],
    *,
    harness: str,
    source: str,
    decimals: int | None = None,
) -> None:
    """Warn where the mean of the values read differs from the mean the harness reported.

    No harness writes a checksum of its values: this catches a damaged value that still reads as
    a number. A mean is checked only when every case the harness counted has a number here
    (`count` numbers in `values[name]`). The reported mean may be rounded to `decimals`; it then
    agrees within half its last digit. `source` names where the harness reported it ("the
    results file"). The warning points at the user's line (`_util/_warn.py`).
    """
    for total in reported:
        # a harness's own mean counts True as 1 (Python's sum, numpy's mean): so does the check
        got = [float(v) for v in values.get(total.name, ()) if isinstance(v, int | float)]
        want = total.mean
        if not got or len(got) != total.count:
            continue
        if isinstance(want, bool) or not isinstance(want, int | float):
            continue
        mean = math.fsum(got) / len(got)
        if math.isclose(mean, want, rel_tol=1e-9, abs_tol=1e-12):
            continue
        if decimals is not None and abs(mean - want) <= 0.5 * 10.0**-decimals + 1e-12:
            continue
        shown = repr(mean) if decimals is None else f"{mean:.6g}"
        warn(
            f"{file.name}: the mean of {total.name} over its {len(got)} lines is {shown}, "
            f"{source} says {want!r}: a line may be damaged ({harness} writes no checksum of "
            "its values); check the file",
            RuntimeWarning,
        )
