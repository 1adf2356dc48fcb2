"""The run folder: its name, its files, and when things happened (docs/file-formats.md).

`<store>/<name>-<timestamp>/` holds `events.jsonl` (the log), `data.parquet` (the input
data) and, once the run ends, `cases.parquet`, `scores.parquet` and `summary.json`.
"""

from __future__ import annotations

import os
import re
import stat
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._util._fs import is_temp_of

__all__ = [
    "CASES",
    "DATA",
    "EVENTS",
    "FINAL_FILES",
    "LABELS",
    "PARQUET_CAP",
    "SCORES",
    "STEPS",
    "STORE_FILES",
    "SUMMARY",
    "SUMMARY_CAP",
    "TRANSCRIPTS",
    "check_run_name",
    "first_started_at",
    "holds_no_run",
    "new_run_folder",
    "now_iso",
    "open_regular",
    "read_regular",
    "remove_stillborn",
]

EVENTS = "events.jsonl"
CASES, SCORES, SUMMARY, DATA = "cases.parquet", "scores.parquet", "summary.json", "data.parquet"
FINAL_FILES = (CASES, SCORES, SUMMARY)
# a run with transcripts also has these: its transcripts as written, and its final steps table
TRANSCRIPTS, STEPS = "transcripts.jsonl", "steps.parquet"
# human labels of its samples (`eb.review`), appended as they are given
LABELS = "labels.jsonl"
STORE_FILES = (
    EVENTS,
    DATA,
    *FINAL_FILES,
    TRANSCRIPTS,
    STEPS,
    LABELS,
)  # every file of a run folder evalbook writes
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


def first_started_at(run: RunData) -> str:
    """When the run started: its earliest case's start; else, for a run imported from a file
    without per-sample times, when the harness says the eval was made (`created` of
    `options["imported"]`, an ISO time); else now."""
    results = run.results
    started = results.started_at[~np.isnan(results.started_at)]
    if started.size:
        return _iso(float(started.min()))
    imported = run.options.get("imported")
    declared = imported.get("created") if isinstance(imported, dict) else None
    if isinstance(declared, str):
        try:
            when = datetime.fromisoformat(declared)
        except ValueError:  # not a time: the import's own copy says what it was
            pass
        else:  # a time without a zone is taken as UTC, as harnesses write their logs
            return _iso((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp())
    return now_iso()


def _iso(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat(timespec="milliseconds")


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


# A run folder's first file appears within milliseconds of the folder: one that still has
# none after this long was left by a run killed while it started (nothing of it ran)
_STILLBORN_AGE_S = 60.0


def holds_no_run(folder: Path) -> bool:
    """Whether `folder` holds nothing but the temporary files of a run's first writes (or
    nothing at all): what a run killed while it started leaves (nothing of it ran)."""
    if (folder / EVENTS).exists():  # one stat settles it for every real run folder
        return False
    with os.scandir(folder) as inside:
        return all(
            f.is_file(follow_symlinks=False) and is_temp_of(f.name, STORE_FILES) for f in inside
        )


def remove_stillborn(root: Path) -> list[Path]:
    """Remove the run folders of `root` that a run killed while it started left behind.

    Such a folder holds nothing but the temporary files of its first writes (or nothing at
    all) and is older than a minute, so that a run starting right now in another process is
    never touched. Anything else is left alone. Returns what was removed.
    """
    removed: list[Path] = []
    now = time.time()
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        try:
            if not entry.is_dir(follow_symlinks=False) or entry.name.startswith("."):
                continue
            if now - entry.stat(follow_symlinks=False).st_mtime < _STILLBORN_AGE_S:
                continue
            if not holds_no_run(Path(entry.path)):
                continue
            for f in os.scandir(entry.path):
                os.unlink(f.path)
            os.rmdir(entry.path)
            removed.append(Path(entry.path))
        except OSError:  # gone meanwhile, or not ours to remove: leave it
            continue
    return removed


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
    remove_stillborn(root)
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
