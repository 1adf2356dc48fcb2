"""The formats evalbook imports, by name, and telling which one a path holds.

Each format lives in its own module (`_inspect`, `_lm_eval`, ...) as a `Format`; a module is
imported only when its format is asked for or sniffed, so an importer's optional dependency
(Inspect AI for `inspect`) loads only for its own files.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

from .._model._run_data import RunData
from ._imported import Format, FormatError, to_run_data

__all__ = ["FORMATS", "format_named", "import_run", "sniff_format"]

# name -> module; detection tries them in this order (the most specific files first)
FORMATS = {
    "inspect": "._inspect",
    "promptfoo": "._promptfoo",
    "harbor": "._harbor",
    "lm-eval": "._lm_eval",
    "evalscope": "._evalscope",
}


def format_named(name: str) -> Format:
    """The `Format` called `name`; a ConfigurationError lists the known ones."""
    module = FORMATS.get(name)
    if module is None:
        raise FormatError(
            f"unknown format {name!r}: use one of {', '.join(FORMATS)}, or format=None to detect it"
        )
    fmt: Format = importlib.import_module(module, __package__).FORMAT
    return fmt


def sniff_format(path: Path) -> Format:
    """The one format whose `sniff` accepts `path`; a FormatError when none or several do."""
    found = [fmt for fmt in map(format_named, FORMATS) if fmt.sniff(path)]
    if len(found) == 1:
        return found[0]
    if not found:
        expected = "; ".join(f"{f.name}: {f.expected}" for f in map(format_named, FORMATS))
        raise FormatError(
            f"{path}: not a results file evalbook can import. Expected one of: {expected}. "
            "Name the format (format= in Python, --format on the command line) to get that "
            "format's own error"
        )
    names = ", ".join(f.name for f in found)
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
    fmt = sniff_format(where) if format is None else format_named(format)
    return to_run_data(fmt.read(where), name)
