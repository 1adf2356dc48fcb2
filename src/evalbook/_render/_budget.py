"""How much user text one view shows: the limits, a long text's start and its "show all".

A view never shows more than its budget of a user's text (docs/design.md): one value is cut to
`TEXT_LIMIT` characters, all of one case's to `CASE_TEXT_LIMIT`; a long value shows its start
and a `<details>` with the rest (`expandable`); the run's tables keep every character.
"""

from __future__ import annotations

from ._style import MUTED, esc

__all__ = [
    "CASE_TEXT_LIMIT",
    "PREVIEW_LIMIT",
    "TEXT_LIMIT",
    "WHOLE_LIMIT",
    "TextBudget",
    "expandable",
    "preview",
]

# Longest text a case view shows of one value (an output, an input cell, a rationale), and of
# all of them together; the run's tables keep the whole text. A case view is one card a
# reader scrolls through, and a comparison shows two side by side: 30 000 characters each
# keep that pair under 200 KB of HTML for plain text (markup escapes can triple it), where a
# case with a 1 MB output, reason, rationale and error once made a 2 MB view.
TEXT_LIMIT = 10_000
CASE_TEXT_LIMIT = 30_000
# A value longer than this (or than `PREVIEW_LINES` lines) shows its start and a control
# that shows it whole (`<details>`, up to `TEXT_LIMIT`): a case view of ten long inputs is
# read by its first lines, and opened where needed.
PREVIEW_LIMIT = 400
PREVIEW_LINES = 6
# What a case view shows of one value, and of all, when asked for the whole texts (the
# widgets' "whole texts" control): the text is then sent on demand, for one case, and the
# tables still hold more than any view.
WHOLE_LIMIT = 1_000_000


def preview(text: str, limit: int = PREVIEW_LIMIT, lines: int = PREVIEW_LINES) -> str | None:
    """The start of a long `text`: at most `limit` characters and `lines` lines (None when
    `text` is short enough to show whole).

    Example:
        >>> preview("short") is None, len(preview("x" * 1000) or "")
        (True, 400)
    """
    parts = text.split("\n", lines)
    start = "\n".join(parts[:lines]) if len(parts) > lines else text
    start = start[:limit]
    return None if start == text else start


def expandable(
    text: str, limit: int = TEXT_LIMIT, *, start: int = PREVIEW_LIMIT, lines: int = PREVIEW_LINES
) -> str:
    """`text` escaped: whole when short, else its start (`preview(text, start, lines)`) then a
    `<details>` with the text cut to `limit` characters, saying how much was left out (the
    tables keep all of it)."""
    head = preview(text, start, lines)
    if head is None:
        return esc(text, limit)
    here = "" if len(text) <= limit else f" (the first {limit:,} here, all in the tables)"
    return (
        f'{esc(head)}<span style="{MUTED}">…</span>'
        f'<details data-evalbook="whole" style="margin-top: 2px"><summary style="cursor: '
        f'pointer; {MUTED}; font-size: 11.5px">show all {len(text):,} characters{here}'
        f"</summary>{esc(text, limit)}</details>"
    )


class TextBudget:
    """The characters of user text one case view may still show (`CASE_TEXT_LIMIT` in all,
    `TEXT_LIMIT` of one value; the `WHOLE_LIMIT`s when the whole texts are asked for), or
    `total` in all and `most` of one value for a part of a view with a budget of its own."""

    def __init__(
        self, whole: bool = False, *, total: int | None = None, most: int | None = None
    ) -> None:
        self.total = total if total is not None else WHOLE_LIMIT * 2 if whole else CASE_TEXT_LIMIT
        self.most = most if most is not None else WHOLE_LIMIT if whole else TEXT_LIMIT
        self.left = self.total

    def esc(self, text: str, most: int | None = None) -> str:
        """`text` escaped and cut to what is left of the budget (at most `most` characters),
        long text shortened with a control that shows it (`expandable`)."""
        most = self.most if most is None else most
        start = preview(text)
        if start is None or self.left - len(start) <= 2 * len(start):  # no room for both
            limit = min(most, self.left)
            self.left -= min(len(text), limit)
            return esc(text, limit)
        # the start is shown twice (before the <details> and in it): the budget pays for both
        inner = min(most, self.left - len(start))
        self.left -= len(start) + min(len(text), inner)
        return expandable(text, inner)
