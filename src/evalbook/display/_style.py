"""Shared building blocks of the static HTML: escaping, inline styles, number formatting.

Every style is an inline `style=` attribute (JupyterLab strips `<style>` blocks from untrusted
outputs); colours inherit the theme's text colour and borders are translucent so that light and
dark themes both work.
"""

from __future__ import annotations

import html
import math
from typing import Any

import pandas as pd

from .._util._text import visible

__all__ = [
    "BORDER",
    "MUTED",
    "STATUS_COLORS",
    "badge",
    "box",
    "esc",
    "fmt_num",
    "fmt_p",
    "is_missing",
    "pct",
    "pct_ci",
    "root",
    "signed_pct",
]

FONT = (
    "font-family: -apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, "
    "sans-serif; font-size: 13px; line-height: 1.4; color: inherit"
)
BORDER = "1px solid rgba(127, 127, 127, 0.35)"
MUTED = "opacity: 0.72"
PANEL_BG = "rgba(127, 127, 127, 0.06)"

# Status and outcome colours: mid-tone hues that read on light and dark backgrounds.
STATUS_COLORS: dict[str, str] = {
    "passed": "#16a34a",
    "scored": "#16a34a",
    "improved": "#16a34a",
    "failed": "#dc2626",
    "regressed": "#dc2626",
    "error": "#dc2626",
    "errored": "#ea580c",
    "timed_out": "#ca8a04",
    "unscored": "#ca8a04",
    "warning": "#d97706",
    "same": "#6b7280",
    "only_a": "#6b7280",
    "only_b": "#6b7280",
    "pending": "#6b7280",
}


def is_missing(x: Any) -> bool:
    """True for None, NaN, NaT and pandas' NA (scalars only; containers are never missing)."""
    if x is None:
        return True
    if not pd.api.types.is_scalar(x):
        return False
    return bool(pd.isna(x))


def esc(x: Any) -> str:
    """HTML-escape any value's text (quotes too); missing values become an empty string.

    Lone surrogates are shown as escapes (`visible`), so the HTML is always valid UTF-8.
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    return html.escape(visible(str(x)), quote=True)


def pct(x: Any) -> str:
    """A percentage for display (`—` when missing), via the scoring module's formatter."""
    from .._util._fmt import format_pct

    return format_pct(None if is_missing(x) else float(x))


def pct_ci(lo: Any, hi: Any) -> str:
    """`[40%, 63%]`, or an empty string when there is no interval."""
    if is_missing(lo) or is_missing(hi):
        return ""
    return f"[{pct(lo)}, {pct(hi)}]"


def signed_pct(x: Any) -> str:
    """A difference in percentage points with its sign: `+4.0 pp`, `−2.5 pp`, `0 pp`."""
    if is_missing(x):
        return "—"
    v = float(x) * 100
    if v == 0:
        return "0 pp"
    sign = "+" if v > 0 else "−"
    return f"{sign}{abs(v):.1f} pp"


def fmt_num(x: Any, digits: int = 3) -> str:
    """A plain number (`—` when missing)."""
    if is_missing(x):
        return "—"
    v = float(x)
    return str(int(v)) if v.is_integer() else f"{v:.{digits}g}"


def fmt_p(x: Any) -> str:
    """A p-value: `p = 0.032`, `p < 0.001`, or `p = —`."""
    if is_missing(x):
        return "p = —"
    v = float(x)
    return "p < 0.001" if v < 0.001 else f"p = {v:.3g}"


def badge(text: str, status: str, title: str = "") -> str:
    """A small coloured pill; `text` and `title` are escaped here."""
    color = STATUS_COLORS.get(status, "#6b7280")
    tip = f' title="{esc(title)}"' if title else ""
    return (
        f'<span{tip} style="display: inline-block; padding: 0 7px; margin: 1px 4px 1px 0; '
        f"border-radius: 9px; border: 1px solid {color}; color: {color}; font-size: 11.5px; "
        f'white-space: nowrap">{esc(text)}</span>'
    )


def box(inner: str, *, extra: str = "", kind: str = "") -> str:
    """A bordered card around already-escaped `inner` HTML."""
    marker = f' data-evalbook="{esc(kind)}"' if kind else ""
    return (
        f'<div{marker} style="border: {BORDER}; border-radius: 8px; padding: 10px 14px; '
        f'box-sizing: border-box; background: {PANEL_BG}; {extra}">{inner}</div>'
    )


def root(inner: str, kind: str) -> str:
    """The outermost element of every view (font, inherited colour, a marker for tests)."""
    return f'<div data-evalbook="{esc(kind)}" style="{FONT}; max-width: 980px">{inner}</div>'
