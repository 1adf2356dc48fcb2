"""Shared building blocks of the static HTML: escaping and inline styles.

Numbers are spelled by `evalbook._util._fmt` (the one formatter of every view); the HTML
escapes what it returns like any other text.

Every style is an inline `style=` attribute (JupyterLab strips `<style>` blocks from untrusted
outputs); colours inherit the theme's text colour and borders are translucent so that light and
dark themes both work.
"""

from __future__ import annotations

import html
from typing import Any

import pandas as pd

from .._util._fmt import format_count
from .._util._text import safe_str, visible

__all__ = [
    "BORDER",
    "MUTED",
    "NEUTRAL_COLOR",
    "OUTCOME_LABELS",
    "SHORT_LIMIT",
    "STATUS_COLORS",
    "badge",
    "box",
    "esc",
    "is_missing",
    "outcome_badge",
    "outcome_label",
    "root",
    "shorten",
]

FONT = (
    "font-family: -apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, "
    "sans-serif; font-size: 13px; line-height: 1.4; color: inherit"
)
BORDER = "1px solid rgba(127, 127, 127, 0.35)"
MUTED = "opacity: 0.72"
PANEL_BG = "rgba(127, 127, 127, 0.06)"
# An opaque background in the host's theme (JupyterLab, VS Code, marimo's `--background`; else
# the browser's canvas colour, which in marimo's dark theme is a darker band than its page):
# for a cell that other cells scroll under
OPAQUE_BG = "var(--jp-layout-color0, var(--vscode-editor-background, var(--background, Canvas)))"

# Status and outcome colours: one palette for every view (errors red, unscored amber, passed
# green, neutral grey). No colour has 4.5:1 contrast as text on both white and a dark notebook
# (#111111, #1e1e1e): the best possible is about 4.1:1. So text keeps the theme's colour
# (`inherit`) and the hue goes to a marker (a badge's dot and border, a plot's bar), which needs
# 3:1 as a graphic (WCAG 1.4.11); each colour here has it on all three backgrounds
# (tests/render/test_contrast.py).
STATUS_COLORS: dict[str, str] = {
    "passed": "#16a34a",
    "scored": "#16a34a",
    "improved": "#16a34a",
    "failed": "#dc2626",
    "regressed": "#dc2626",
    "error": "#dc2626",
    "errored": "#dc2626",
    "timed_out": "#d97706",
    "unscored": "#d97706",
    "warning": "#d97706",
    "same": "#6b7280",
    "only_a": "#6b7280",
    "only_b": "#6b7280",
    "pending": "#6b7280",
}
NEUTRAL_COLOR = "#6b7280"


# What a view calls a task outcome. The tables keep the outcome's value (`passed` = the task
# returned); a view says "ran", because beside a score "passed" reads as a verdict on the output.
OUTCOME_LABELS: dict[str, str] = {
    "passed": "ran",
    "failed": "failed",
    "errored": "errored",
    "timed_out": "timed out",
}
NEUTRAL = "neutral"  # a status with no colour of its own: the badge is grey


def outcome_label(outcome: str) -> str:
    """What a view calls a task outcome (`passed` -> `ran`); another value as it is, spaced.

    Example:
        >>> outcome_label("passed"), outcome_label("timed_out"), outcome_label("pending")
        ('ran', 'timed out', 'pending')
    """
    return OUTCOME_LABELS.get(outcome, outcome.replace("_", " "))


def outcome_badge(outcome: str, n: int | None = None) -> str:
    """A task outcome's pill (`ran 11`): "ran" is grey, never green (the task returned: it says
    nothing of the output beside the score); errored and timed out keep their warning colours.

    Example:
        >>> "ran 3" in outcome_badge("passed", 3), "#16a34a" in outcome_badge("passed", 3)
        (True, False)
    """
    text = outcome_label(outcome) if n is None else f"{outcome_label(outcome)} {format_count(n)}"
    return badge(text, NEUTRAL if outcome == "passed" else outcome)


def is_missing(x: Any) -> bool:
    """True for None, NaN, NaT and pandas' NA (scalars only; containers are never missing).

    Never raises: a user's object whose `__class__`, `__eq__` or `__bool__` raises is not
    missing.
    """
    if x is None:
        return True
    try:
        return bool(pd.api.types.is_scalar(x) and pd.isna(x))
    except Exception:  # user objects from the data may raise anything here
        return False


# Longest text a view shows of one short value (a name, a label, a case id, a reason, a
# warning): such values are a line in a card, and a 1 MB reason would make a 1 MB card.
SHORT_LIMIT = 1_000


def esc(x: Any, limit: int = SHORT_LIMIT) -> str:
    """HTML-escape any value's text (quotes too), cut to `limit` characters; missing values
    become an empty string.

    Control characters other than newline and tab, bidi controls and invisible format
    characters are shown as escapes (`\\x1b`, `\\u202e`): a browser would drop them, draw a
    box or reorder the text, and the reader should see what is there. The text of an object
    whose `__str__` fails is a placeholder naming its type. Text longer than `limit` is cut
    and says how much was left out (`shorten`); the run's tables keep all of it.

    Example:
        >>> esc("<b>a\x1b</b>\u202e")
        '&lt;b&gt;a\\\\x1b&lt;/b&gt;\\\\u202e'
        >>> esc("abcdef", limit=3)
        'abc… (3 more characters)'
    """
    if is_missing(x):
        return ""
    return html.escape(visible(shorten(safe_str(x), limit), keep="\n\t"), quote=True)


def shorten(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out (the tables keep it all).

    Example:
        >>> shorten("abcdef", 3), shorten("abc", 3)
        ('abc… (3 more characters)', 'abc')
    """
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return f"{text[:limit]}… ({more} more character{'s' if more != 1 else ''})"


def badge(text: str, status: str, title: str = "") -> str:
    """A small pill: a dot and border in the status's colour, the text in the theme's (it
    reads on light and dark backgrounds); `text` and `title` are escaped here."""
    color = STATUS_COLORS.get(status, NEUTRAL_COLOR)
    tip = f' title="{esc(title)}"' if title else ""
    return (
        f'<span{tip} data-status="{esc(status, 40)}" style="display: inline-block; '
        f"padding: 0 7px; margin: 1px 4px 1px 0; border-radius: 9px; border: 1px solid {color}; "
        f'color: inherit; font-size: 11.5px; white-space: nowrap"><span aria-hidden="true" '
        f'style="display: inline-block; width: 7px; height: 7px; border-radius: 50%; '
        f'background: {color}; margin: 0 4px 1px 0; vertical-align: middle"></span>'
        f"{esc(text)}</span>"
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
