"""`eb.report`: one self-contained HTML file of a run, or of a run against a baseline.

The page is `_render/_report_html.report_html`; this module compares the runs, asks the
verdict (`_compare/_verdict.py`) and writes the file atomically (docs/cli.md, "A report file").
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import overload

from .._compare._compare import compare
from .._compare._verdict import verdict
from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._render._report_html import report_html
from .._render._run_slices import MAX_SLICES
from .._util._fs import write_text

__all__ = ["report"]


@overload
def report(
    run: RunData,
    against: RunData | None = None,
    path: None = None,
    *,
    by: str | Sequence[str] | None = None,
    max_drop: float | None = None,
) -> str: ...
@overload
def report(
    run: RunData,
    against: RunData | None = None,
    path: str | os.PathLike[str] = ...,
    *,
    by: str | Sequence[str] | None = None,
    max_drop: float | None = None,
) -> Path: ...


def report(
    run: RunData,
    against: RunData | None = None,
    path: str | os.PathLike[str] | None = None,
    *,
    by: str | Sequence[str] | None = None,
    max_drop: float | None = None,
) -> str | Path:
    """A report of `run` as one self-contained HTML page: written to `path` (the path is
    returned), or returned as text when `path` is None.

    The page needs no network and reads with JavaScript off: the headline, the summary
    (sliced by `by`, or clustered as the run is), the unscored reasons and errors, the check
    (`run` complete; with `against` and `max_drop`, not worse than `against` by more than
    `max_drop`), and with `against` the comparison (`eb.compare(against, run)`) with its
    warnings, and the worst regressions with output diffs and transcripts. Its charts are
    drawn by plotly.js, embedded once, when plotly is installed. At most 8 MB whatever the
    run: long lists are cut and say how much.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> eb.report(run).startswith("<!DOCTYPE html>")
        True
    """
    for name, value in (("run", run), ("against", against)):
        if value is not None and not isinstance(value, RunData):
            raise ConfigurationError(
                f"eb.report({name}=...) takes a run (eb.run, eb.load_run), got "
                f"{type(value).__name__}; load a stored one with eb.load_run(path)"
            )
    columns = [by] if isinstance(by, str) else list(by) if by is not None else None
    for column in columns or ():
        run.summary(by=column)  # an unknown column: its ConfigurationError, before any work
        n = run.data[column].nunique(dropna=False)
        if n > MAX_SLICES:
            raise ConfigurationError(
                f"eb.report(by={column!r}): that column has {n:,} values, and a report shows "
                f"at most {MAX_SLICES} slices; slice by a column with fewer values, or use "
                f"run.summary(by={column!r}) for the whole table"
            )
    comparison = None if against is None else compare(against, run)
    regressions = None if comparison is None else comparison.regressions()
    page = report_html(
        run,
        comparison=comparison,
        regressions=regressions,
        verdict=verdict(run, against, max_drop=max_drop),
        by=columns,
    )
    if path is None:
        return page
    target = Path(path)
    write_text(target, page)
    return target
