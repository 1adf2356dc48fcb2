"""The notebook display of the tables `eb.leaderboard` and `eb.pool` return.

Each is a DataFrame holding the text exactly as given (run names, labels); only its notebook
display escapes it (`visible`): pandas' HTML escapes markup but shows controls and bidi
characters raw, and it has no per-frame formatter. So the tables are DataFrame subclasses
whose class carries `_repr_html_` (pandas' table drawn from an escaped copy, the notes under
it). A subclass, not a wrapper: the docs promise a DataFrame (`board.attrs["note"]`,
`table.round(3)`, `pd.concat`, `assert_frame_equal`), and `_constructor` keeps the class, so
a frame derived from one (`board.head()`, `table[["score", "mean"]]`) shows escaped too, where
an instance attribute patched on the frame was lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any, ClassVar

import pandas as pd

from .._util._text import visible
from ._protocols import HeadlineLike

__all__ = ["LeaderboardTable", "PoolTable"]


def _shown(value: Any) -> Any:
    return visible(value) if isinstance(value, str) else value


class _EscapedTable(pd.DataFrame):
    """A DataFrame whose notebook table shows its text through `visible`, notes under it."""

    # no metadata of its own: what the notes say is in `attrs`, which pandas carries over
    _metadata: ClassVar[list[str]] = []
    _NOTE = ""  # the `data-evalbook` name of a note line
    _NOTE_STYLE = "opacity: 0.8"

    @property
    def _constructor(self) -> Any:
        # derived frames (head, a column subset, set_index) keep the escaped display
        return type(self)

    def _notes(self) -> Sequence[str]:
        """The lines shown under the table (plain text; escaped here)."""
        return []

    def _repr_html_(self) -> str | None:
        shown = pd.DataFrame(self, copy=True)  # the table itself keeps the exact text
        for column in shown.columns:
            if not pd.api.types.is_numeric_dtype(shown[column]):
                shown[column] = shown[column].astype(object).map(_shown)
        # the class's method (the stubs do not declare it)
        html: str | None = pd.DataFrame._repr_html_(shown)  # type: ignore[attr-defined]
        if html is None:  # pandas' notebook HTML is turned off
            return None
        notes = "".join(
            f'<p data-evalbook="{self._NOTE}" style="{self._NOTE_STYLE}">'
            f"{escape(visible(line))}</p>"
            for line in self._notes()
        )
        return html + notes


class LeaderboardTable(_EscapedTable):
    """`eb.leaderboard(runs)`: the ranked runs; `attrs["note"]` (why the rows rank by passed
    cases) is shown under the table."""

    _NOTE = "leaderboard-note"

    def _notes(self) -> Sequence[str]:
        note = self.attrs.get("note")
        return [str(note)] if note else []


class PoolTable(_EscapedTable):
    """`eb.pool(runs)`: the pooled scores; its note, each run's headline (`attrs["headlines"]`)
    and the warnings are shown under the table."""

    _NOTE = "pool-note"
    _NOTE_STYLE = "opacity: 0.8; margin: 0.2em 0"

    def _notes(self) -> Sequence[str]:
        lines = [str(self.attrs["note"])] if self.attrs.get("note") else []
        heads: list[tuple[str, HeadlineLike]] = self.attrs.get("headlines", [])
        lines += [f"{name}: {h.text}" for name, h in heads]
        lines += [str(w) for w in self.attrs.get("warnings", [])]
        return lines
