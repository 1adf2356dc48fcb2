"""The formats evalbook imports, by name, and telling which one a path holds.

Every importer is one module of this package with the same shape (`Importer`): `NAME`, the
format's name as the user passes it; `EXPECTED`, what a file of it looks like (quoted when a
path is none of the formats); `sniff(path)`, cheap and never raising, whether the path is of
the format; `read(path)`, the path as an `Imported` value (a `FormatError` saying what was
expected when it is not). Importers read files only through `_reading.py`.

`FORMATS` registers them, one line each. Its ORDER RULE: detection asks every importer and
takes a path only when exactly one says yes (two yeses are an error asking for `format=`), so
the order never decides what a path is read as; it is the order formats are tried and named to
the user (`--format`'s choices, the "Expected one of" message). The importers whose sniff goes
by a file's own first bytes come first, the most specific first (Inspect: a zip archive's
members or an exact JSON head; promptfoo: two keys in a `.json` head; Harbor: a trial's keys);
those that go by file and folder names after them (lm-eval, EvalScope). A new importer goes
after the last one whose sniff is more specific than its own; in doubt, at the end.

A module is imported only when its format is named or a path is sniffed, so the five parsers
do not load with `import evalbook`, and an importer's optional dependency (Inspect AI for
`inspect`) only inside its own `read`.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Protocol, cast

from .._model._run_data import RunData
from .._util._gc import paused_gc
from ._imported import FormatError, Imported, to_run_data

__all__ = ["FORMATS", "Importer", "format_named", "import_run", "sniff_format"]

# name -> the module that imports it, in the order of the rule above
FORMATS = {
    "inspect": "._inspect",
    "promptfoo": "._promptfoo",
    "harbor": "._harbor",
    "lm-eval": "._lm_eval",
    "evalscope": "._evalscope",
}


class Importer(Protocol):
    """What every importer module defines (see the module doc)."""

    NAME: str
    EXPECTED: str

    def sniff(self, path: Path) -> bool: ...

    def read(self, path: Path) -> Imported: ...


def format_named(name: str) -> Importer:
    """The importer of the format called `name`; a FormatError lists the known ones."""
    module = FORMATS.get(name)
    if module is None:
        raise FormatError(
            f"unknown format {name!r}: use one of {', '.join(FORMATS)}, or format=None to detect it"
        )
    # a module, checked against Importer by tests/interop/test_import_core.py
    return cast(Importer, importlib.import_module(module, __package__))


def sniff_format(path: Path) -> Importer:
    """The one importer whose `sniff` accepts `path`; a FormatError when none or several do."""
    importers = [format_named(name) for name in FORMATS]
    found = [importer for importer in importers if importer.sniff(path)]
    if len(found) == 1:
        return found[0]
    if not found:
        expected = "; ".join(f"{i.NAME}: {i.EXPECTED}" for i in importers)
        raise FormatError(
            f"{path}: not a results file evalbook can import. Expected one of: {expected}. "
            "Name the format (format= in Python, --format on the command line) to get that "
            "format's own error"
        )
    names = ", ".join(i.NAME for i in found)
    raise FormatError(
        f"{path}: could be {names}: name the format (format= in Python, --format on the "
        "command line)"
    )


def import_run(
    path: str | os.PathLike[str], *, format: str | None = None, name: str | None = None
) -> RunData:
    """Read `path` as `format` (detected when None) into a run's data.

    Raises:
        FileNotFoundError: nothing at `path`.
        FormatError: the path is not of the format (the message says what was expected).
    """
    where = Path(path).expanduser()
    if not where.exists():
        raise FileNotFoundError(f"{where}: no such file or folder")
    importer = sniff_format(where) if format is None else format_named(format)
    with paused_gc():
        return to_run_data(importer.read(where), name)
