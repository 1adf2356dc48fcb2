"""Helpers the importers' tests share, over the public API only.

A quiet import, the warning that counts what was skipped, the record evalbook's own run makes
of a raw value (the score contract, as `eb.run` applies it), a fixture's `make.py`, JSON bytes.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

import evalbook as eb


def _format_error() -> type[Exception]:
    """The class `eb.import_results` raises for a path not of the format (its docstring names
    it `FormatError`, a ConfigurationError), reached through import_results itself."""
    try:
        eb.import_results(Path(__file__), format="no such format")
    except eb.ConfigurationError as exc:
        assert type(exc).__name__ == "FormatError", type(exc)
        return type(exc)
    raise AssertionError("an unknown format was accepted")


FormatError = _format_error()


def quiet_import(path: Path, format: str | None = None, **kw: Any) -> eb.Run:
    """`eb.import_results(path, format=format)`, its skip warning silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eb.import_results(path, format=format, **kw)


def with_warning(path: Path, format: str | None = None) -> tuple[eb.Run, str]:
    """The run imported from `path` and the text of its one skip warning ("" when none)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.import_results(path, format=format)
    skips = [str(w.message) for w in caught if "part(s) that could not be read" in str(w.message)]
    assert len(skips) <= 1, skips
    return run, skips[0] if skips else ""


def detected(path: Path) -> str:
    """The format `eb.import_results` detects `path` as (format=None)."""
    return str(quiet_import(path).options["imported"]["format"])


def contract(values: Sequence[object]) -> list[tuple[str, str | None, float]]:
    """(status, reason, value) of the record evalbook's own run makes of each raw value: what
    an imported value must become (docs/interop.md: "every value goes through the score
    contract")."""
    score = eb.define_score("value", primary=True)

    @eb.scorer(score)
    def given(id: str) -> object:
        return values[int(id)]

    data = pd.DataFrame({"id": [str(i) for i in range(len(values))]})
    log = logging.getLogger("evalbook")
    level = log.level
    log.setLevel(logging.ERROR)  # the run logs its first invalid score: expected here
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = eb.run(data, task=lambda id: None, scorers=[given], progress=False)
    finally:
        log.setLevel(level)
    scores = run.scores.set_index("case_id").loc[list(data.id)]
    return [
        (str(row.status), row.reason if isinstance(row.reason, str) else None, float(row.value))
        for row in scores.itertuples()
    ]


def same_record(row: Any, want: tuple[str, str | None, float]) -> bool:
    """A row of `run.scores` holds the record `want` (NaN equal to NaN)."""
    status, reason, value = want
    got = float(row["value"])
    return (
        row["status"] == status
        and (row["reason"] if isinstance(row["reason"], str) else None) == reason
        and (got == value or (math.isnan(got) and math.isnan(value)))
    )


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
