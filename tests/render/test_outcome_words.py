"""Views name task outcomes as what they are (issue 35 item 1): the outcome `passed` (the task
returned) reads "ran", in grey, never "passed" in green beside a score.

A wrong answer is the case that showed it: its task returned (`passed`) and its score is 0.
Each view's HTML is parsed; every text node is checked with the colour it is drawn in.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import in_process
from evalbook._render._cases import case_html
from evalbook._render._markdown import run_markdown
from evalbook._render._style import STATUS_COLORS

GREENS = {STATUS_COLORS["passed"], STATUS_COLORS["scored"], STATUS_COLORS["improved"]}
_GOOD = {"passed", "scored", "improved"}  # statuses whose pill is drawn green
_COLOR = re.compile(r"(?:^|;)\s*color:\s*([^;]+)")
_VOIDS = {"br", "hr", "img", "input", "meta", "link", "col", "wbr", "source", "area"}


class _Colored(HTMLParser):
    """(text, colour it is drawn in, status of the pill around it) for every text node; the
    colour is the nearest inline `color:` other than `inherit` of the node or an element around
    it (None: the theme's); the status is the nearest `data-status` (a badge's dot and border
    take that status's colour)."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str | None, str | None]] = []
        self.texts: list[tuple[str, str | None, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOIDS:
            return
        attributes = dict(attrs)
        found = _COLOR.search(attributes.get("style") or "")
        colour, status = self.stack[-1] if self.stack else (None, None)
        if found and found.group(1).strip() != "inherit":
            colour = found.group(1).strip()
        self.stack.append((colour, attributes.get("data-status") or status))

    def handle_endtag(self, tag: str) -> None:
        if tag not in _VOIDS and self.stack:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        text = data.strip()
        if text:
            colour, status = self.stack[-1] if self.stack else (None, None)
            self.texts.append((text, colour, status))


def texts(html: str) -> list[tuple[str, str | None]]:
    """(text, colour) of every text node."""
    parser = _Colored()
    parser.feed(html)
    return [(t, c) for t, c, _ in parser.texts]


def statuses(html: str) -> dict[str, str | None]:
    """text → the status of the pill it sits in (None outside any)."""
    parser = _Colored()
    parser.feed(html)
    return {t: s for t, _, s in parser.texts}


def assert_outcomes_named(html: str, ran: int | None = None) -> None:
    """No text node is a `passed` outcome label; each `ran N` label is not green; and, given
    `ran`, the label `ran {ran}` is there."""
    nodes = texts(html)
    labels = [t for t, _ in nodes if re.fullmatch(r"passed( \d[\d,]*)?", t)]
    assert not labels, labels
    green_ran = [(t, c) for t, c in nodes if re.fullmatch(r"ran( \d[\d,]*)?", t) and c in GREENS]
    assert not green_ran, green_ran
    pills = statuses(html)
    ran_pills = [t for t, s in pills.items() if re.fullmatch(r"ran( \d[\d,]*)?", t)]
    green_pills = [t for t in ran_pills if pills[t] in _GOOD]
    assert not green_pills, green_pills
    if ran is not None:
        shown = [t for t, _ in nodes if t == f"ran {ran}"]
        assert shown, [t for t, _ in nodes][:40]


def _wrong(output: str, expected: str) -> float:
    return float(output == expected)


_right = eb.scorer(eb.define_score("right", primary=True))(_wrong)


@pytest.fixture(scope="module")
def wrong_run() -> eb.Run:
    """Three tasks return, one answer is wrong, one task raises: ran 3, errored 1."""

    def task(q: str) -> str:
        if q == "boom":
            raise RuntimeError("boom")
        return q.upper() if q != "c" else "wrong"

    data = pd.DataFrame({"q": ["a", "b", "c", "boom"], "expected": ["A", "B", "C", "X"]})
    return eb.run(
        data,
        task=task,
        scorers=[_right],
        store=None,
        progress=False,
        name="wrong",
    )


def test_the_run_card_says_ran_in_grey_beside_the_score(wrong_run: eb.Run) -> None:
    html = wrong_run._repr_html_()
    assert_outcomes_named(html, ran=3)
    pills = statuses(html)
    assert pills["errored 1"] == "errored"  # a warning keeps its colour (the pill's dot, border)
    assert pills["ran 3"] is not None and pills["ran 3"] not in _GOOD


def test_the_headline_card_alone_says_ran(wrong_run: eb.Run) -> None:
    assert_outcomes_named(wrong_run.headline._repr_html_(), ran=3)


def test_a_wrong_answers_case_says_ran_not_a_green_passed(wrong_run: eb.Run) -> None:
    pos = wrong_run.cases["q"].tolist().index("c") if "q" in wrong_run.cases else 2
    html = case_html(wrong_run, pos)
    assert_outcomes_named(html, ran=None)
    assert any(t == "ran" for t, _ in texts(html))


def test_epochs_cases_count_ran_samples() -> None:
    data = pd.DataFrame({"q": ["a"], "expected": ["A"]})
    run = eb.run(
        data,
        task=lambda q: q.upper(),
        scorers=[_wrong],
        epochs=3,
        store=None,
        progress=False,
    )
    html = case_html(run, 0)
    assert_outcomes_named(html, ran=3)
    assert "epoch 1 ran" in " ".join(t for t, _ in texts(html))


def test_the_leaderboard_names_the_column_ran(wrong_run: eb.Run) -> None:
    other = eb.run(
        pd.DataFrame({"q": ["a", "b"], "expected": ["A", "B"]}),
        task=lambda q: q.upper(),
        scorers=[_right],
        store=None,
        progress=False,
        name="other",
    )
    html = str(eb.show([wrong_run, other])._repr_mimebundle_()["text/html"])
    nodes = [t for t, _ in texts(html)]
    assert "ran" in nodes and "passed" not in nodes, nodes[:20]


def test_the_report_and_markdown_say_ran(wrong_run: eb.Run) -> None:
    assert_outcomes_named(eb.report(wrong_run), ran=3)
    md = run_markdown(wrong_run)
    assert not re.search(r"\bpassed \d", md), md


def test_the_cli_show_says_ran(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def task(q: str) -> str:
        if q == "boom":
            raise RuntimeError("boom")
        return q

    eb.run(pd.DataFrame({"q": ["a", "b", "boom"]}), task=task, store=tmp_path, name="cli")
    code, out, _ = in_process(capsys, "show", "cli", "--store", str(tmp_path))
    assert code == 0, out
    assert "outcomes: ran 2 · failed 0 · errored 1 · timed out 0" in out, out
    assert "passed 2" not in out
