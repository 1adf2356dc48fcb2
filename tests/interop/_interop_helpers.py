"""Helpers the importers' tests share: a quiet import, a fixture's `make.py`, JSON bytes."""

from __future__ import annotations

import importlib.util
import json
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

from evalbook._interop._imported import Format, to_run_data


def quiet_run(fmt: Format, path: Path) -> Any:
    """`path` read as `fmt` into a run's data, its skip warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_run_data(fmt.read(path))


def json_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a JSON-lines file, parsed."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def load_make(path: Path, name: str) -> ModuleType:
    """A fixture folder's `make.py`, imported as module `name` (it is not on sys.path)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def literal_bytes(text: bytes) -> set[int]:
    """Positions inside a JSON string or number literal (keys included)."""
    inside: set[int] = set()
    i, n = 0, len(text)
    while i < n:
        c = text[i : i + 1]
        if c == b'"':
            j = i + 1
            while j < n and text[j : j + 1] != b'"':
                j += 2 if text[j : j + 1] == b"\\" else 1
            inside.update(range(i, j + 1))
            i = j + 1
        elif c in b"-0123456789":
            j = i
            while j < n and text[j : j + 1] in b"-+.eE0123456789":
                j += 1
            inside.update(range(i, j))
            i = j
        else:
            i += 1
    return inside
