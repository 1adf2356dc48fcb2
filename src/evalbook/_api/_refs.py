"""What the CLI and the `%eval` magics share: finding the run a user names, exporting a table.

RUN is a variable (magics only), a run folder, or a run name or id in a store (the latest
run of that name wins). An export writes one table as CSV or Parquet, by the file's
extension. Both shells call these and turn a `RefError` into their own kind of error (one
line on stderr for the CLI, a `UsageError` in IPython), so that they resolve and export alike.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .._errors import ConfigurationError
from .._store._listing import runs
from .._store._log._read import SchemaVersionError
from .._util._text import safe_str
from ._entry import load_run
from ._run import Run

__all__ = [
    "TABLES",
    "USER_ERRORS",
    "RefError",
    "column_names",
    "export_table",
    "missing_store",
    "resolve_run",
    "score_names",
    "user_error_line",
]

# the tables a run can export: properties (scores, cases) and methods (summary(), ...) of Run
TABLES: tuple[str, ...] = (
    "scores",
    "cases",
    "summary",
    "unscored",
    "wide",
    "usage",
    "usage_summary",
)
EXPORT_SUFFIXES: dict[str, str] = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


class RefError(Exception):
    """A run, store or file the user named cannot be used; the message says why in one line."""


# What both shells report as one line (the CLI: `evalbook CMD: error: ...`, exit 2; the
# magics: a UsageError, no traceback): a name that finds nothing, a bad option, and what
# reading a user's file can raise -- a missing or unreadable file (OSError), a damaged or
# foreign one (ValueError, SchemaVersionError among them).
USER_ERRORS: tuple[type[Exception], ...] = (
    RefError,
    ConfigurationError,
    SchemaVersionError,
    OSError,
    ValueError,
)


def user_error_line(exc: BaseException) -> str:
    """The one line a shell shows for a user error: its message, whitespace squeezed.

    An OSError from the system (`[Errno 13] Permission denied: 'x.csv'`) reads
    `x.csv: Permission denied`; a message that cannot be read names the exception's type.

    Example:
        >>> user_error_line(PermissionError(13, "Permission denied", "x.csv"))
        'x.csv: Permission denied'
        >>> user_error_line(ValueError("bad\\n  line"))
        'bad line'
    """
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(safe_str(exc).split()) or type(exc).__name__


def missing_store(store: str | os.PathLike[str]) -> str:
    """The message for a run store that does not exist (both shells print it).

    Example:
        >>> missing_store("typo")
        'no run store at typo/ (runs are stored in ./runs unless store= says)'
    """
    return f"no run store at {store}/ (runs are stored in ./runs unless store= says)"


# -- options both shells take: --score NAME[,NAME], --by COL[,COL] --------------------------


def score_names(a: Run, b: Run, text: str | None) -> str | list[str] | None:
    """`--score a,b` as `eb.compare`'s `score=`: None without it, one name, or a list.

    Raises:
        RefError: a name that is not a score of both runs (the message lists those).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
        ...              scorers=[eb.scorer("ok")(lambda output: 1.0)], progress=False)
        >>> score_names(run, run, "ok"), score_names(run, run, None)
        ('ok', None)
    """
    if text is None:
        return None
    wanted = [s.strip() for s in text.split(",") if s.strip()]
    common = [d.name for d in a.definitions if d.name in {e.name for e in b.definitions}]
    if not wanted:
        known = ", ".join(common) or "none"
        raise RefError(f"--score {text!r}: name a score; the scores both runs have: {known}")
    for name in wanted:
        if name not in common:
            known = ", ".join(common) or "none"
            raise RefError(f"unknown score {name!r}; the scores both runs have: {known}")
    return wanted[0] if len(wanted) == 1 else wanted


def column_names(text: str | None) -> list[str]:
    """`--by a,b` as its column names ([] without `--by`).

    Raises:
        RefError: `--by` names no column (an empty or only-commas value).

    Example:
        >>> column_names("kind, level"), column_names(None)
        (['kind', 'level'], [])
    """
    if text is None:
        return []
    names = [c.strip() for c in text.split(",") if c.strip()]
    if not names:
        raise RefError(f"--by {text!r}: name a column of the run's input data")
    return names


# -- resolving RUN ---------------------------------------------------------------------------


def _is_run_folder(path: Path) -> bool:
    return path.is_dir() and any((path / f).is_file() for f in ("events.jsonl", "summary.json"))


def _load(path: Path) -> Run:
    try:
        return load_run(path)
    except (OSError, ValueError, KeyError) as exc:
        raise RefError(f"cannot read the run at {path}: {exc}") from None


def _matches(table: pd.DataFrame, ref: str) -> pd.DataFrame:
    return table[(table["name"].astype(str) == ref) | (table["id"].astype(str) == ref)]


def resolve_run(
    ref: str, store: str | os.PathLike[str] = "runs", namespace: Mapping[str, Any] | None = None
) -> Run:
    """The run `ref` names: a variable of `namespace` holding a Run, a run folder, or the
    latest run named (or with id) `ref` in `store`.

    Raises:
        RefError: nothing of that name, or the run's folder cannot be read.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
        ...              scorers=[lambda output: 1.0], progress=False)
        >>> resolve_run("run", namespace={"run": run}) is run
        True
    """
    if namespace is not None and ref.isidentifier() and isinstance(namespace.get(ref), Run):
        found: Run = namespace[ref]
        return found
    path = Path(ref).expanduser()
    if _is_run_folder(path):
        return _load(path)
    store_dir = Path(store).expanduser()
    if _is_run_folder(store_dir / ref):
        return _load(store_dir / ref)
    table = runs(store_dir) if store_dir.is_dir() else None
    if path.is_dir() and (table is None or _matches(table, ref).empty):
        return _load(path)  # a folder that is not a run: loading it says so
    hint = ""
    if namespace is not None and ref in namespace:
        hint = f" ({ref} is a {type(namespace[ref]).__name__}, not a Run)"
    if table is None:
        raise RefError(
            f"no run named {ref!r}{hint}: it is not a run folder and there is no run store at "
            f"{store_dir}/ (pass --store DIR)"
        )
    matches = _matches(table, ref)
    if matches.empty:
        names = sorted({str(n) for n in table["name"]})
        known = ", ".join(names[:10]) + (" …" if len(names) > 10 else "") if names else "none"
        raise RefError(
            f"no run named {ref!r} in the store {store_dir}/ (runs there: {known}){hint}"
        )
    by_id = matches[matches["id"].astype(str) == ref]
    by_name = matches[matches["name"].astype(str) == ref]
    if not by_id.empty and not by_name.empty and set(by_name["path"]) != set(by_id["path"]):
        # picking either silently could gate or show the wrong run
        named = by_name.sort_values("started_at", kind="stable").iloc[-1]["path"]
        raise RefError(
            f"{ref!r} is both a run name (latest: {named}) and the id of another run "
            f"({by_id.iloc[0]['path']}); pass the run's folder instead"
        )
    latest = matches.sort_values("started_at", kind="stable").iloc[-1]
    return _load(Path(str(latest["path"])))


# -- export ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Exported:
    """What `export_table` wrote: the file, which table, how many rows."""

    path: Path
    table: str
    rows: int


def _parquet_ready(table: pd.DataFrame) -> pd.DataFrame:
    """Object columns holding anything but text (task outputs) become JSON text."""
    out = table.copy()
    for col in out.columns:
        values = out[col]
        if values.dtype == object and not all(v is None or isinstance(v, str) for v in values):
            out[col] = [
                v if v is None or isinstance(v, str) else json.dumps(v, default=str) for v in values
            ]
    return out


def export_table(run: Run, path: str | os.PathLike[str], table: str = "scores") -> Exported:
    """Write one of the run's tables to `path`, as CSV or Parquet by its extension.

    Args:
        run: The run.
        path: A file ending in `.csv`, `.parquet` or `.pq` (folders are made as needed).
        table: `scores` (the long table, the default), `cases`, `summary`, `unscored`,
            `wide`, `usage` or `usage_summary`.

    Raises:
        RefError: an unknown extension or table, or the file cannot be written.

    Example:
        >>> import pandas as pd, evalbook as eb, tempfile, pathlib
        >>> run = eb.run(pd.DataFrame({"x": [1, 2]}), task=lambda x: x, store=None,
        ...              scorers=[lambda output: 1.0], progress=False)
        >>> export_table(run, pathlib.Path(tempfile.mkdtemp()) / "scores.csv").rows
        2
        >>> empty = pathlib.Path(tempfile.mkdtemp())
        >>> try:  # the shells' parsers offer TABLES only; a caller of its own is told too
        ...     export_table(run, empty / "t.csv", "nope")
        ... except RefError as exc:
        ...     print(str(exc).split(";")[0], list(empty.iterdir()))
        unknown table 'nope' []
    """
    target = Path(path).expanduser()
    kind = EXPORT_SUFFIXES.get(target.suffix.lower())
    if kind is None:
        raise RefError(f"{path}: the file name must end in .csv, .parquet or .pq")
    if table not in TABLES:
        raise RefError(f"unknown table {table!r}; the tables are {', '.join(TABLES)}")
    frame = getattr(run, table)
    frame = frame() if callable(frame) else frame
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if kind == "csv":
            frame.to_csv(target, index=False)
        else:
            _parquet_ready(frame).to_parquet(target, index=False)
    except OSError as exc:
        raise RefError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Exported(target, table, len(frame))
