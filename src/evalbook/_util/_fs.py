"""The one atomic write: a file appears whole or not at all.

Every file evalbook writes outside the append-only run log (tables, JSON, caches) goes
through `atomic_write`: readers see the old file or the new one, never a partial one. The
temporary file is `.<name>.<8 random characters>.tmp` in the same folder, so that one left
behind by a kill is recognisable and a writer can remove it (`remove_stale_temps`).
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "atomic_write",
    "is_temp_of",
    "remove_stale_temps",
    "stage",
    "stage_bytes",
    "write_json",
    "write_text",
]

# `tempfile.mkstemp`'s random part: 8 characters of [a-z0-9_]
_TEMP = re.compile(r"\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp")


def is_temp_of(entry: str, names: Iterable[str]) -> bool:
    """True when `entry` is a temporary file `atomic_write` makes for one of `names`.

    Example:
        >>> is_temp_of(".summary.json.k2x_9abc.tmp", ["summary.json"])
        True
        >>> is_temp_of("summary.json.tmp", ["summary.json"])
        False
    """
    match = _TEMP.fullmatch(entry)
    return match is not None and match["name"] in set(names)


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


def remove_stale_temps(folder: Path, names: Iterable[str]) -> list[Path]:
    """Delete the temporary files of `names` that a killed writer left in `folder`.

    Only for a writer that holds the folder (its lock taken): another writer's temporary
    file may be in use. Only regular files named as `atomic_write` names them are removed
    (a symlink or a folder of that name is left alone). Returns what was removed.

    Example:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / ".cases.parquet.abcd1234.tmp").write_bytes(b"half")
        >>> [p.name for p in remove_stale_temps(folder, ["cases.parquet"])]
        ['.cases.parquet.abcd1234.tmp']
    """
    wanted = list(names)
    removed: list[Path] = []
    with os.scandir(folder) as entries:
        stale = [e.path for e in entries if is_temp_of(e.name, wanted)]
    for entry in stale:
        path = Path(entry)
        try:
            if not stat.S_ISREG(path.lstat().st_mode):
                continue
            path.unlink()
        except FileNotFoundError:  # gone meanwhile: nothing to remove
            continue
        removed.append(path)
    return removed


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
