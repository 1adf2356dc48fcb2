"""Terminal output for the CLI: aligned tables, colour only on a TTY, safe untrusted text."""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import pandas as pd

from .._model._slices import SMALL
from .._render._cost import (
    MAX_SOURCES,
    SOURCE_COLUMNS,
    by_source,
    run_usage_line,
    run_usage_note,
    source_cells,
)
from .._util._fmt import format_ci, format_count, format_pct, number
from .._util._text import safe_str, visible

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = [
    "SMALL",
    "Out",
    "display_width",
    "for_terminal",
    "is_small",
    "render_table",
    "slice_value",
    "small_note",
    "summary_table",
    "unscored_table_text",
    "usage_lines",
    "usage_source_table",
    "wants_colour",
]

_CODES = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


def wants_colour(stream: TextIO) -> bool:
    """Colour only on a TTY; `NO_COLOR` turns it off, `FORCE_COLOR` on, `TERM=dumb` off."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Out:
    """A stream that knows whether it may colour its text.

    Example:
        >>> import io
        >>> out = Out(io.StringIO())
        >>> out.style("ok", "green")
        'ok'
    """

    def __init__(self, stream: TextIO, colour: bool | None = None) -> None:
        self.stream = stream
        self.colour = wants_colour(stream) if colour is None else colour

    def style(self, text: str, *styles: str) -> str:
        """`text` wrapped in ANSI styles (`bold`, `red`, ...) when colour is on."""
        if not self.colour or not styles:
            return text
        codes = ";".join(_CODES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def line(self, text: str = "", *styles: str) -> None:
        """Write one line."""
        self.stream.write(self.style(text, *styles) + "\n")

    def lines(self, lines: Sequence[str]) -> None:
        """Write several lines."""
        for text in lines:
            self.line(text)


def for_terminal(value: Any, width: int | None = None) -> str:
    """Untrusted text made safe for a terminal: control characters (ANSI escapes, newlines)
    are shown escaped, and long text is cut to `width` with an ellipsis.

    Example:
        >>> for_terminal("red\\x1b[31m\\nnext")
        'red\\\\x1b[31m\\\\nnext'
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = visible(safe_str(value))  # controls, bidi and invisible characters as escapes
    if width is not None and _wider(text, width):
        out, used = [], 0
        for ch in text:
            w = _char_width(ch)
            if used + w > width - 1:
                break
            out.append(ch)
            used += w
        text = "".join(out) + "…"
    return text


def _wider(text: str, width: int) -> bool:
    """Whether `text` takes more than `width` columns (stops there: a reason may be 1 MB)."""
    used = 0
    for ch in text:
        used += _char_width(ch)
        if used > width:
            return True
    return False


def _char_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal (wide East Asian characters take two)."""
    return sum(_char_width(ch) for ch in text)


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * (width - display_width(text))
    return fill + text if right else text + fill


def render_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], right: Sequence[bool] | None = None
) -> list[str]:
    """Aligned plain-text table lines: a header, a rule, then one line per row.

    Example:
        >>> render_table(["score", "mean"], [["a", "50%"], ["long.name", "100%"]], [False, True])
        ['score      mean', '---------  ----', 'a           50%', 'long.name  100%']
    """
    right = list(right) if right is not None else [False] * len(headers)
    widths = [display_width(h) for h in headers]
    for row in rows:
        widths = [max(w, display_width(cell)) for w, cell in zip(widths, row, strict=True)]
    lines = ["  ".join(_pad(h, w, r) for h, w, r in zip(headers, widths, right, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append("  ".join(_pad(c, w, r) for c, w, r in zip(row, widths, right, strict=True)))
    return [line.rstrip() for line in lines]


def slice_value(value: Any) -> str:
    """A slice's value in a table cell: missing values (their own slice) as `—`."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA:
        return "—"
    return for_terminal(value, 30)


def is_small(n: object) -> bool:
    """Whether a slice's count of cases (or clusters) is below `SMALL` (missing: not small)."""
    value = number(n)
    return value is not None and value < SMALL


def summary_table(
    summary: pd.DataFrame, by: Sequence[str] = (), *, clusters: bool = False
) -> list[str]:
    """A run's `summary()` as aligned lines; the primary score is marked with `*`.

    A `reducer` column follows the label when a run has epochs or a score's reducer is not
    the mean (a pass@k mean reads differently); the counts are of samples. With `by` (the
    slice columns of `summary(by=...)`) those come first and a slice with fewer than `SMALL`
    counted cases (`n_clusters`: the clusters with `--cluster`) is flagged `small`;
    `clusters=True` shows `n_clusters`.
    """
    counts = ("counted", "zeroed", "unscored", "excluded", "errors")  # columns of summary()
    reducers = "reducer" in summary.columns and bool(
        (summary["reducer"] != "mean").any() or (summary["epochs"] > 1).any()
    )
    sizes = summary["n_clusters"] if "n_clusters" in summary.columns else [None] * len(summary)
    flags = ["small" if is_small(n) else "" for n in sizes]
    rows = [
        [
            for_terminal(r.score) + (" *" if bool(r.primary) else ""),
            for_terminal(r.label, 40),
            *([for_terminal(r.reducer)] if reducers else []),
            format_pct(r.mean),
            format_ci(r.ci_low, r.ci_high),
            *(format_count(getattr(r, c)) for c in counts),
        ]
        for r in summary.itertuples(index=False)
    ]
    if by:
        sliced = summary[list(by)].itertuples(index=False)
        cells = [[slice_value(v) for v in values] for values in sliced]
        rows = [[*c, *row] for c, row in zip(cells, rows, strict=True)]
    if clusters:
        for row, n in zip(rows, summary["n_clusters"], strict=True):
            row.append(format_count(n))
    if by:
        for row, flag in zip(rows, flags, strict=True):
            row.append(flag)
    text = [*(for_terminal(c) for c in by), "score", "label", *(["reducer"] if reducers else [])]
    headers = [*text, "mean", "95% CI", *counts, *(["clusters"] if clusters else [])]
    headers += [""] if by else []
    right = [False] * len(text) + [True] * (len(headers) - len(text))
    if by:
        right[-1] = False
    return render_table(headers, rows, right)


def small_note(what: str) -> str:
    """The line under a sliced table that says what `small` means."""
    return f"small: fewer than {SMALL} {what}; its interval is wide and its estimate unstable"


def unscored_table_text(unscored: pd.DataFrame) -> list[str]:
    """A run's `unscored()` breakdown as aligned lines (empty when every record scored)."""
    if unscored.empty:
        return []
    rows = [
        [
            for_terminal(r.score),
            for_terminal(r.status),
            for_terminal(r.reason, 60),
            format_count(r.n),
        ]
        for r in unscored.itertuples(index=False)
    ]
    return render_table(["score", "status", "reason", "n"], rows, [False, False, False, True])


def usage_lines(run: RunData) -> list[str]:
    """The run's cost line and the note on refused usage, cleaned; [] without usage.

    The same text as the headline card's (`_render/_cost.py`), so the terminal and the
    notebook read the same.
    """
    line = run_usage_line(run)
    if not line:
        return []
    note = run_usage_note(run)
    return [for_terminal(line)] + ([for_terminal(note, 200)] if note else [])


def usage_source_table(run: RunData) -> list[str]:
    """`run.usage()` added up per source as aligned lines ([] without usage); a source's
    first refused usage follows the table."""
    sources = by_source(run.usage())
    if sources.empty:
        return []
    shown = sources.head(MAX_SOURCES)  # a crafted run may hold any number of sources
    rows = [[for_terminal(c, 40) for c in source_cells(r)] for _, r in shown.iterrows()]
    lines = render_table(SOURCE_COLUMNS, rows, [False, True, True, True, True, True])
    if len(sources) > MAX_SOURCES:
        lines.append(f"… {len(sources) - MAX_SOURCES} more sources: see run.usage()")
    for _, r in shown.iterrows():
        if isinstance(r["invalid"], str):
            lines.append(
                f"{for_terminal(r['source'], 40)}: usage refused: {for_terminal(r['invalid'], 200)}"
            )
    return lines
