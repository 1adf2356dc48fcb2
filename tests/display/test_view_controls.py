"""Controls, bidi controls and markup from user text are shown escaped in every view.

A run's name, case ids, inputs, outputs, targets, reasons, rationales, labels and error
messages all hold NUL, ESC, an RTL override (U+202E), a bidi isolate (U+2066) and
`<script>`: no view (reprs, every HTML view, the widgets, the CLI's `show`) carries one of
those characters raw, and no HTML view carries the markup (docs/concepts.md: views show what
is there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import cli
from display_fixtures import case_views
from evalbook._util._text import visible  # the one escaping function: its own cases first

H = "\x00\x1b[2J\u202e\u2066<script>alert(1)</script>"
RAW = ("\x00", "\x1b", "\u202e", "\u2066")
S = eb.define_score("s", label=H)


@eb.scorer(S)
def hostile_scorer(output: str, target: str, case_id: str) -> Any:
    if case_id.endswith("a"):
        return eb.Score(0.5, rationale=H, label=H)
    return eb.Unscored(H)


def _task(q: str, case_id: str) -> str:
    if case_id.endswith("c"):
        raise RuntimeError(H)
    return q + "!"


def _run(name: str, store: Any = None) -> eb.Run:
    df = pd.DataFrame({"id": [H + x for x in "abc"], "q": [H] * 3, "target": [H] * 3})
    return eb.run(df, task=_task, scorers=[hostile_scorer], name=name, store=store, progress=False)


def _assert_clean(view: str, text: str, *, html: bool) -> None:
    raw = [ch for ch in RAW if ch in text]
    assert not raw, f"{view}: raw {raw!r}"
    if html:
        assert "<script>" not in text, f"{view}: raw markup"
        assert "&lt;script&gt;" in text or "\\u202e" in text, f"{view}: user text missing"


def test_the_one_function_escapes_controls_bidi_and_invisible_characters_only() -> None:
    assert visible(H) == "\\x00\\x1b[2J\\u202e\\u2066<script>alert(1)</script>"
    hidden = "\u200b\u200e\u200f\u061c\u202a\u2069\ufeff\u00ad\u2028\U000e0041\ud800"
    assert visible(hidden) == hidden.encode("unicode_escape").decode("ascii")
    kept = "déjà 日本語 👩\u200d💻 \u200c مرحبا \ue000 tab\tline\n"
    assert visible(kept, keep="\n\t") is kept
    assert visible("a\tb\nc") == "a\\tb\\nc"


def test_no_raw_control_or_markup_in_any_run_view() -> None:
    run = _run(H)
    assert run.cases["error_message"][2] == H and run.scores["rationale"][0] == H  # tables: all
    views = {
        "repr(run)": (repr(run), False),
        "repr(headline)": (repr(run.headline), False),
        "run html": (run._repr_html_(), True),
        "headline html": (run.headline._repr_html_(), True),
    }
    shown = case_views(run, range(3))  # the case explorer's detail of each case
    views.update({f"case {i}": (html, True) for i, html in enumerate(shown)})
    for view, (text, html) in views.items():
        _assert_clean(view, text, html=html)
    assert "\\u202e" in repr(run) and "\\u202e" in views["run html"][0]


def test_no_raw_control_or_markup_in_the_comparison_and_leaderboard() -> None:
    a, b = _run(H), _run(H + "b")
    comp = eb.compare(a, b)
    _assert_clean("repr(comparison)", repr(comp), html=False)
    _assert_clean("comparison html", comp._repr_html_(), html=True)
    board = eb.leaderboard([a, b])._repr_html_()  # a pandas table: its HTML escapes markup
    assert "<script>" not in board


def test_no_raw_control_or_markup_in_the_widgets() -> None:
    pytest.importorskip("anywidget")
    run = _run(H)
    view = eb.show(run)
    _assert_clean("show(run) static", view._static_html, html=True)
    _assert_clean("show(run) text", view._static_text, html=False)
    for i, child in enumerate(view.tabs.children[:3]):
        _assert_clean(f"show(run) tab {i}", child.value, html=True)
    explorer = view.explorer
    for label, pos in explorer.cases.options:
        _assert_clean("case list", label, html=False)
        explorer.cases.value = pos
        _assert_clean(f"case detail {pos}", explorer.detail.value, html=True)
    comp = eb.show(eb.compare(run, _run(H + "b")))
    _assert_clean("show(comparison) static", comp._static_html, html=True)
    _assert_clean("show(comparison) text", comp._static_text, html=False)
    comp.change.value = "all"
    for label, i in comp.cases.options:
        _assert_clean("pair list", label, html=False)
        comp.cases.value = i
        _assert_clean(f"pair detail {i}", comp.detail.value, html=True)


def test_no_raw_control_in_the_cli_show(tmp_path: Path) -> None:
    run = _run("hostile", store=tmp_path)
    shown = cli("show", str(run.path), cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout
    _assert_clean("evalbook show", text, html=False)
    assert "\\u202e" in text


def test_no_raw_control_in_the_figures() -> None:
    pytest.importorskip("plotly")
    run = _run(H)
    figures = [
        run.plot.unscored(),
        run.plot.distribution(),
        eb.compare(run, _run("b")).plot.deltas(),
    ]
    for fig in figures:
        texts = [str(fig.layout.title.text)] + [str(t.name) for t in fig.data]
        texts += [str(y) for t in fig.data for y in (getattr(t, "y", None) or ())]
        for text in texts:
            _assert_clean("figure", text, html=False)
    assert any("\\u202e" in str(t.name) for t in figures[0].data)  # the reason, escaped
