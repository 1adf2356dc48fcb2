"""The one on-disk cache of model replies: the judge's `cache=` and `eb.wrap_openai(cache=)`.

A reply is kept in `<folder>/<key[:2]>/<key>.json` (docs/judges.md, "Cache"):

    {"schema_version": 1, "kind": ..., "model": ..., "created_at": ..., "key": ...,
     "check": ..., "value": ...}

`key` is the SHA-256 of the canonical JSON of the request, its epoch and its occurrence (the
n-th identical request of a sample), so repeats stay independent and a re-run replays them
in turn. The value is the last field, written as canonical JSON; `check` is the SHA-256 of
the key and of those bytes, and `get` parses the value from exactly the bytes it checked: an
entry whose bytes changed (a flipped bit, a truncation, another entry copied over it) is a
miss, never a wrong reply. Corrupt entries are left where they are; the next `put` of that key
replaces them. Every entry is safe to delete (a deleted entry is a miss), and so is the
whole folder. `<folder>/evalbook-cache.json` marks the folder as a cache, so that
`cache_clear` never empties a folder that is not one.

Reading and writing never raise: a folder that cannot be written warns once per cache
object and the run goes on uncached.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import threading
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._util._fs import write_text
from .._util._warn import warn

__all__ = [
    "MARKER",
    "CacheFolderError",
    "ResponseCache",
    "cache_clear",
    "cache_info",
    "canonical_json",
]

SCHEMA_VERSION = 1
MARKER = "evalbook-cache.json"

_KEY = re.compile(r"[0-9a-f]{64}")
# Where an entry's value starts: it is the last field, so nothing but JSON text follows it
# (a `"` inside a JSON string is escaped, so these bytes cannot come from an earlier field).
_VALUE = b',"value":'
_SHARD = re.compile(r"[0-9a-f]{2}")
# An entry's temporary file while it is written (`_util/_fs.stage`): `.<key>.json.<8>.tmp`.
_TEMP = re.compile(r"\.(?P<key>[0-9a-f]{64})\.json\.[a-z0-9_]{8}\.tmp")


class CacheFolderError(ValueError):
    """`cache_info` / `cache_clear` were given a path that is not a response cache."""


def canonical_json(data: Any) -> str | None:
    """Sorted keys, compact, no NaN or infinity; None when JSON cannot hold `data`.

    Example:
        >>> canonical_json({"b": 1, "a": [1.5, None]})
        '{"a":[1.5,null],"b":1}'
        >>> canonical_json({"x": float("nan")}) is None
        True
    """
    try:
        text = json.dumps(
            data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
        text.encode("utf-8")  # a lone surrogate cannot be written to the file
    except (TypeError, ValueError, RecursionError):
        return None
    return text


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check(key: str, value_json: str) -> str:
    return _sha256(f"{key}\n{value_json}")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class ResponseCache:
    """Model replies on disk, one small JSON file each, keyed by request, epoch, occurrence.

    Example:
        >>> import tempfile
        >>> cache = ResponseCache(tempfile.mkdtemp())
        >>> key = cache.key({"model": "m", "messages": []}, epoch=1, occurrence=0)
        >>> cache.get(key)
        (False, None)
        >>> cache.put(key, {"score": 4}, model="m")
        >>> cache.get(key)
        (True, {'score': 4})
    """

    def __init__(self, folder: str | os.PathLike[str], *, kind: str = "response") -> None:
        self.folder = Path(folder)
        self._root = os.fspath(self.folder)
        self.kind = kind  # what the entries hold, e.g. "judge_reply": shown by `cache info`
        self._unshared()

    def _unshared(self) -> None:
        # A cache travels to worker processes with its judge or client (cloudpickle): each
        # copy gets its own lock and finds out for itself whether the folder can be written.
        self._lock = threading.Lock()
        self._broken = False

    def __getstate__(self) -> dict[str, Any]:
        return {"folder": self.folder, "kind": self.kind}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.folder = state["folder"]
        self._root = os.fspath(self.folder)
        self.kind = state["kind"]
        self._unshared()

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.folder)!r})"

    @staticmethod
    def key(request: Mapping[str, Any], *, epoch: int | None, occurrence: int) -> str | None:
        """The key of the `occurrence`-th identical request of a sample in `epoch` (None
        outside a run), or None when the request cannot be written as JSON."""
        text = canonical_json({"request": request, "epoch": epoch, "occurrence": occurrence})
        return None if text is None else _sha256(text)

    def _path(self, key: str) -> str:
        # Plain strings, not Path objects: a hit is on the hot path of every cached call.
        return f"{self._root}{os.sep}{key[:2]}{os.sep}{key}.json"

    def get(self, key: str) -> tuple[bool, Any]:
        """`(True, value)` on a hit; `(False, None)` on a miss, which a missing, unreadable
        or corrupt entry is too."""
        if not isinstance(key, str) or _KEY.fullmatch(key) is None:
            return False, None
        try:
            with open(self._path(key), "rb") as f:
                raw = f.read()
            # The value is the entry's last field: its bytes are what `check` covers, and
            # it is parsed from exactly those bytes, so a changed byte cannot give a hit.
            at = raw.find(_VALUE)
            if at < 0 or not raw.endswith(b"}"):
                return False, None
            head = json.loads(raw[:at].decode("utf-8") + "}")
            body = raw[at + len(_VALUE) : -1]
            if not isinstance(head, dict) or head.get("key") != key:
                return False, None
            version = head.get("schema_version")
            if type(version) is not int or version != SCHEMA_VERSION:  # True == 1: not one
                return False, None
            if head.get("check") != hashlib.sha256(key.encode() + b"\n" + body).hexdigest():
                return False, None
            return True, json.loads(body.decode("utf-8"))
        except (OSError, ValueError, RecursionError):  # ValueError: bad UTF-8 or bad JSON
            return False, None

    def put(self, key: str | None, value: Any, *, model: str | None = None) -> None:
        """Keep `value` under `key`; never raises. A value JSON cannot hold is not cached; a
        folder that cannot be written warns once, then this cache stops writing."""
        if self._broken or not isinstance(key, str) or _KEY.fullmatch(key) is None:
            return
        value_json = canonical_json(value)
        if value_json is None:
            return
        head = {
            "schema_version": SCHEMA_VERSION,
            "kind": self.kind,
            "model": model if isinstance(model, str) else None,
            "created_at": _now(),
            "key": key,
            "check": _check(key, value_json),
        }
        text = json.dumps(head, ensure_ascii=False, separators=(",", ":"))
        text = f"{text[:-1]}{_VALUE.decode()}{value_json}}}"
        try:
            self._mark()
            os.makedirs(os.path.dirname(self._path(key)), exist_ok=True)
            write_text(Path(self._path(key)), text)
        except (OSError, ValueError) as exc:  # ValueError: a path with a NUL character
            self._give_up(exc)

    def _mark(self) -> None:
        # Checked on every put (one stat, after a model call): the folder may have been
        # deleted since, and a re-created one must be marked again.
        marker = self.folder / MARKER
        if not marker.is_file():
            self.folder.mkdir(parents=True, exist_ok=True)
            text = json.dumps(
                {
                    "schema_version": SCHEMA_VERSION,
                    "evalbook": "response cache",
                    "created_at": _now(),
                }
            )
            write_text(marker, text + "\n")

    def _give_up(self, exc: OSError | ValueError) -> None:
        with self._lock:
            if self._broken:
                return
            self._broken = True
        warn(
            f"the response cache {str(self.folder)!r} cannot be written "
            f"({type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}); the run goes "
            "on uncached. "
            "Give cache= a folder you can write to, or cache=None.",
            RuntimeWarning,
        )


def _folder(path: str | os.PathLike[str]) -> Path:
    """The cache folder at `path`; `CacheFolderError` when it is missing or not a cache."""
    folder = Path(path)
    if not folder.exists():
        raise CacheFolderError(f"no such cache folder: {str(folder)!r}")
    if not folder.is_dir():
        raise CacheFolderError(f"{str(folder)!r} is a file, not a cache folder")
    if not (folder / MARKER).is_file():
        raise CacheFolderError(
            f"{str(folder)!r} is not an evalbook response cache (it has no {MARKER}); "
            "give the folder that was passed as cache="
        )
    return folder


def _shards(folder: Path) -> list[Path]:
    # Only real sub-folders named like a key prefix: a symlink is never followed.
    with os.scandir(folder) as entries:
        return sorted(
            Path(e.path)
            for e in entries
            if _SHARD.fullmatch(e.name) and e.is_dir(follow_symlinks=False)
        )


def _entries(shard: Path) -> list[os.DirEntry[str]]:
    with os.scandir(shard) as entries:
        return [e for e in entries if e.is_file(follow_symlinks=False)]


def _is_entry(name: str, shard: str) -> bool:
    return name.endswith(".json") and _KEY.fullmatch(name[:-5]) is not None and name[:2] == shard


def cache_info(path: str | os.PathLike[str]) -> dict[str, Any]:
    """What a cache folder holds: entries, bytes, models with entry counts, oldest and
    newest `created_at` (None when empty), and how many entries could not be read.

    Raises:
        CacheFolderError: `path` is missing or not a response cache.
    """
    folder = _folder(path)
    n = size = unreadable = 0
    models: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    stamps: list[str] = []
    for shard in _shards(folder):
        for e in _entries(shard):
            if not _is_entry(e.name, shard.name):
                continue
            n += 1
            try:
                size += e.stat(follow_symlinks=False).st_size
                data = json.loads(Path(e.path).read_bytes().decode("utf-8"))
            except (OSError, ValueError, RecursionError):
                unreadable += 1
                continue
            if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
                unreadable += 1
                continue
            model = data.get("model")
            models[model if isinstance(model, str) else "(unknown)"] += 1
            kind = data.get("kind")
            kinds[kind if isinstance(kind, str) else "(unknown)"] += 1
            stamp = data.get("created_at")
            if isinstance(stamp, str):
                stamps.append(stamp)
    return {
        "path": str(folder),
        "entries": n,
        "bytes": size,
        "models": dict(models.most_common()),
        "kinds": dict(kinds.most_common()),
        "oldest": min(stamps) if stamps else None,  # ISO 8601 UTC: text order is time order
        "newest": max(stamps) if stamps else None,
        "unreadable": unreadable,
    }


def cache_clear(path: str | os.PathLike[str]) -> int:
    """Delete every entry of a cache folder (and the temporary files of killed writers)
    and the sub-folders left empty; return how many entries were removed. The marker and
    any file that is not the cache's own stay.

    Raises:
        CacheFolderError: `path` is missing or not a response cache.
    """
    folder = _folder(path)
    removed = 0
    for shard in _shards(folder):
        for e in _entries(shard):
            entry = _is_entry(e.name, shard.name)
            temp = _TEMP.fullmatch(e.name)
            if not entry and (temp is None or temp["key"][:2] != shard.name):
                continue
            try:
                if not stat.S_ISREG(e.stat(follow_symlinks=False).st_mode):
                    continue
                os.unlink(e.path)
            except FileNotFoundError:  # deleted meanwhile
                continue
            removed += entry
        with contextlib.suppress(OSError):  # not empty: it holds files not the cache's
            shard.rmdir()
    return removed
