"""The leaderboard's notebook display shows run names and labels escaped; its values stay exact.

pandas' HTML escapes markup but shows NUL, ESC and bidi controls raw; the board's own display
shows them by their escapes, `\\x1b` (docs/concepts.md: views show what is there).
"""

from __future__ import annotations

import pickle

import pandas as pd
import pytest

import evalbook as eb

H = "\x00\x1b[2J\u202e\u2066<script>alert(1)</script>"
RAW = ("\x00", "\x1b", "\u202e", "\u2066")
# H as the board shows it: each control by its escape, the markup escaped
SHOWN = r"\x00\x1b[2J\u202e\u2066&lt;script&gt;alert(1)&lt;/script&gt;"


def _run(name: str, value: float, label: str | None = None) -> eb.Run:
    ok = eb.define_score("ok", label=label)
    return eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q: q,
        scorers=[eb.scorer(ok)(lambda output: value)],
        name=name,
        store=None,
        progress=False,
    )


def _assert_escaped(html: str) -> None:
    assert [ch for ch in RAW if ch in html] == []
    assert "<script>" not in html
    assert SHOWN in html


def test_hostile_run_names_and_labels_show_escaped_and_stay_exact_in_the_frame() -> None:
    board = eb.leaderboard([_run(H, 0.5, label=H), _run(H + "b", 1.0, label=H)])
    _assert_escaped(board._repr_html_())
    assert board["name"].tolist() == [H + "b", H]  # the frame keeps the names as given
    assert board["label"].tolist() == [H, H]


def test_the_names_of_a_mapping_show_escaped_too() -> None:
    board = eb.leaderboard({H: _run("a", 0.5), "plain": _run("b", 1.0)})
    _assert_escaped(board._repr_html_())
    assert board["name"].tolist() == ["plain", H]


def test_ipython_displays_the_escaped_table() -> None:
    formatters = pytest.importorskip("IPython.core.formatters")
    board = eb.leaderboard([_run(H, 0.5)])
    shown = formatters.HTMLFormatter()(board)
    assert shown == board._repr_html_()
    _assert_escaped(shown)


def test_a_clean_board_looks_exactly_like_pandas_own_table() -> None:
    board = eb.leaderboard([_run("base", 0.5), _run("new", 1.0)])
    assert board._repr_html_() == pd.DataFrame._repr_html_(board)  # type: ignore[attr-defined]


def test_the_board_is_a_dataframe_view_its_derived_frames_show_escaped_too() -> None:
    board = eb.leaderboard([_run(H, 0.5), _run("new", 1.0)])
    # a DataFrame whose class carries the display (`_render/_frames.py`), nothing patched on
    assert isinstance(board, pd.DataFrame) and "_repr_html_" not in vars(board)
    for derived in (board.head(), board[["rank", "name"]], board.set_index("rank")):
        _assert_escaped(derived._repr_html_())
    assert "_repr_html_" not in board.columns
    again = pickle.loads(pickle.dumps(board))
    pd.testing.assert_frame_equal(again, board)
    copy = board.copy()
    pd.testing.assert_frame_equal(copy, board)
    assert copy["name"].tolist() == board["name"].tolist() == ["new", H]
