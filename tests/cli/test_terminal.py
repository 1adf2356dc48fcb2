"""Terminal output: aligned tables, safe untrusted text, colour only on a TTY.

A unit of the CLI (`_cli/_terminal.py`) tested directly: its rules (escaping, cutting at a
display width, alignment, when to colour) are checked over any text, which no command can
be fed; the commands' output is tested through the CLI in the other files.
"""

from __future__ import annotations

import io

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalbook._cli._terminal import (
    Out,
    display_width,
    for_terminal,
    render_table,
    summary_table,
    wants_colour,
)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_only_on_a_tty(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(var, raising=False)
    assert not wants_colour(io.StringIO())
    assert wants_colour(_Tty())
    assert Out(_Tty()).style("x", "red") == "\x1b[31mx\x1b[0m"
    assert Out(io.StringIO()).style("x", "red") == "x"
    monkeypatch.setenv("NO_COLOR", "1")
    assert not wants_colour(_Tty())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert wants_colour(io.StringIO())


def test_clean_escapes_control_characters_and_cuts() -> None:
    assert for_terminal("a\x1b[2Jb\nc") == "a\\x1b[2Jb\\nc"
    assert for_terminal("abcdefghij", 5) == "abcd…"
    assert for_terminal(None) == "" and for_terminal(float("nan")) == ""
    assert display_width(for_terminal("读法自然读法自然", 7)) <= 7


@given(st.text())
def test_clean_never_leaves_a_control_character(text: str) -> None:
    cleaned = for_terminal(text)
    assert "\x1b" not in cleaned and "\n" not in cleaned and "\r" not in cleaned


def test_tables_align_including_wide_characters() -> None:
    lines = render_table(["score", "n"], [["读法自然", "1"], ["a", "10"]], [False, True])
    widths = {display_width(line) for line in lines}
    assert len(widths) == 1
    assert lines[2].startswith("读法自然") and lines[3].endswith("10")


def test_summary_table_marks_the_primary_score_and_shows_counts() -> None:
    summary = pd.DataFrame(
        [
            ("a", "Label <b>", True, False, 0.5, 0.2, 0.8, 4, 4, 0, 0, 0, 0),
            (
                "b",
                "Other",
                False,
                False,
                float("nan"),
                float("nan"),
                float("nan"),
                4,
                0,
                0,
                4,
                0,
                0,
            ),
        ],
        columns=[
            "score",
            "label",
            "primary",
            "derived",
            "mean",
            "ci_low",
            "ci_high",
            "n_cases",
            "counted",
            "zeroed",
            "unscored",
            "excluded",
            "errors",
        ],
    )
    lines = summary_table(summary)
    assert lines[2].startswith("a *") and "[20%, 80%]" in lines[2] and "50%" in lines[2]
    assert "—" in lines[3]
