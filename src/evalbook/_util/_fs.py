"""The one atomic write: a file appears whole or not at all.

Every file evalbook writes outside the append-only run log (tables, JSON, caches) goes
through `atomic_write`: readers see the old file or the new one, never a partial one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write",
    "stage",
    "stage_bytes",
    "write_json",
    "write_text",
]


def stage(path: Path, write: Callable[[Path], None], *, sync: bool = False) -> Path:
    """Write what will become `path` into a new temporary file next to it; return that file.

    The caller renames it into place (`os.replace(tmp, path)`) or unlinks it; a failure here
    leaves no temporary file behind.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        write(tmp_path)
        if sync:
            with tmp_path.open("rb+") as f:
                os.fsync(f.fileno())
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise
    return tmp_path


def stage_bytes(path: Path, content: bytes) -> Path:
    """`stage` for bytes already in memory."""

    def write(tmp: Path) -> None:
        tmp.write_bytes(content)

    return stage(path, write)


def atomic_write(path: Path, write: Callable[[Path], None], *, sync: bool = False) -> None:
    """Write `path` through a temporary file in the same folder, then rename it into place.

    Readers see the old file or the new one, never a partial one; a failure (a full disk)
    leaves the old file as it was and no temporary file. `sync=True` also fsyncs the data
    before the rename (costly); the store's tables do not need it, because the event log
    (fsync'ed) can always rebuild them.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> atomic_write(folder / "a.txt", lambda tmp: tmp.write_text("hi"))
        >>> (folder / "a.txt").read_text(), sorted(p.name for p in folder.iterdir())
        ('hi', ['a.txt'])
    """
    tmp_path = stage(path, write, sync=sync)
    try:
        os.replace(tmp_path, path)
    except BaseException:
        tmp_path.unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write a UTF-8 text file atomically."""

    def write(tmp: Path) -> None:
        tmp.write_text(text, encoding="utf-8")

    atomic_write(path, write)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Write a JSON object atomically (UTF-8, indented, keys in the order given).

    Values JSON cannot hold are written as their `repr`.
    """
    text = json.dumps(data, ensure_ascii=False, indent=2, default=repr)

    def write(tmp: Path) -> None:
        tmp.write_text(text + "\n", encoding="utf-8")

    atomic_write(path, write)
