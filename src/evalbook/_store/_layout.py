"""The run folder: its name, its files, and when things happened (docs/file-formats.md).

`<store>/<name>-<timestamp>/` holds `events.jsonl` (the log), `data.parquet` (the input
data) and, once the run ends, `cases.parquet`, `scores.parquet` and `summary.json`.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from .._errors import ConfigurationError
from .._model._results import Results

__all__ = [
    "CASES",
    "DATA",
    "EVENTS",
    "FINAL_FILES",
    "PARQUET_CAP",
    "SCORES",
    "STORE_FILES",
    "SUMMARY",
    "SUMMARY_CAP",
    "check_run_name",
    "first_started_at",
    "new_run_folder",
    "now_iso",
    "open_regular",
    "read_regular",
]

EVENTS = "events.jsonl"
CASES, SCORES, SUMMARY, DATA = "cases.parquet", "scores.parquet", "summary.json", "data.parquet"
FINAL_FILES = (CASES, SCORES, SUMMARY)
STORE_FILES = (EVENTS, DATA, *FINAL_FILES)  # every file of a run folder evalbook writes
# The most a file of a run folder may hold before it is refused unread (`read_regular`):
# summary.json holds definitions, options and the summary rows (a few KB; 64 MiB is far
# beyond any real one); a Parquet file is read whole into memory, so beyond 16 GiB a
# file is not a run's table but a mistake (or a sparse file) that would fill the memory
SUMMARY_CAP = 64 << 20
PARQUET_CAP = 16 << 30
_NAME = re.compile(r"\w[\w.+-]*")
_MAX_NAME = 100


def now_iso() -> str:
    """The current UTC time as ISO 8601 text."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def first_started_at(results: Results) -> str:
    """When the earliest case started (or now, for a run without cases)."""
    started = results.started_at[~np.isnan(results.started_at)]
    if not started.size:
        return now_iso()
    return datetime.fromtimestamp(float(started.min()), UTC).isoformat(timespec="milliseconds")


def check_run_name(name: str) -> str:
    """Return `name` if it is safe as part of a folder name, else raise ConfigurationError.

    Example:
        >>> check_run_name("baseline-v2")
        'baseline-v2'
    """
    if (
        not isinstance(name, str)
        or not _NAME.fullmatch(name)
        or ".." in name
        or name.endswith(".")
        or len(name) > _MAX_NAME
    ):
        slug = re.sub(r"[^\w.+-]+", "-", str(name)).replace("..", ".").strip(".-")[:_MAX_NAME]
        hint = f"; e.g. name={slug!r}" if slug and _NAME.fullmatch(slug) else ""
        raise ConfigurationError(
            f"run name {name!r} cannot name a folder in the run store: use letters, digits, "
            f"'_', '-', '+' and '.' (no '/', '\\', spaces or '..', not starting with '.', at "
            f"most {_MAX_NAME} characters){hint}"
        )
    return name


def new_run_folder(store: str | os.PathLike[str], name: str) -> Path:
    """Create `store/<name>-<timestamp>/` (exclusively: concurrent runs never share one)."""
    check_run_name(name)
    root = Path(store).expanduser().resolve()
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"store={str(store)!r}: cannot create the folder ({exc})"
        ) from None
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 10_000):
        folder = root / (f"{name}-{stamp}" if n == 1 else f"{name}-{stamp}-{n}")
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise ConfigurationError(
                f"store={str(store)!r}: cannot create {folder} ({exc})"
            ) from None
        if folder.resolve().parent != root:  # belt and braces: the name is already checked
            raise ConfigurationError(f"run name {name!r} would write outside the store")
        return folder
    raise ConfigurationError(f"too many runs named {name!r} in {root} this second")


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # absent on Windows (no FIFOs in a folder there)


def open_regular(path: Path, flags: int = os.O_RDONLY) -> int:
    """Open a file of a run folder that may come from anyone: a regular file, or an OSError.

    Special files are refused (a FIFO named `events.jsonl` would block the open, `/dev/zero`
    never ends): `O_NONBLOCK` lets a FIFO open at once, then `fstat` says what it is. A
    symlink is followed only to a file inside the same folder.
    """
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(path.parent.resolve()):
            raise OSError(f"{path} is a symlink to {target}, outside its run folder; not followed")
    fd = os.open(path, flags | _NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file; not read")
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: Path, cap: int) -> bytes:
    """The bytes of a file of a run folder (`open_regular`), if it holds at most `cap`.

    A file larger than `cap` (a sparse file, a log named like a summary) is an OSError that
    says so, and no more than `cap` + 1 bytes are ever read.
    """
    with os.fdopen(open_regular(path), "rb") as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(cap + 1) if size <= cap else b""
    if size > cap or len(data) > cap:
        raise OSError(
            f"{path} holds {max(size, len(data)):,} bytes, more than a {path.name} can "
            f"({cap:,}); not read"
        )
    return data
