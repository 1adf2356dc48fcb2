"""Runs and comparisons shared by the display and magics tests (built offline, deterministic)."""

from __future__ import annotations

from typing import Any

import pandas as pd

import evalbook as eb

EVIL = "<script>alert('x')</script>"
EVIL_ESCAPED = "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"


QUESTIONS = pd.DataFrame(
    {
        "id": [f"q{i:02d}" for i in range(1, 13)],
        "question": [
            "2 + 3", "7 * 6", "12 - 5", "81 / 9", "2 ** 5", "9 + 10",
            "6 * 7", "100 - 1", "8 / 0", "3 ** 2", "4 + 4", "",
        ],
        "expected": ["5", "42", "7", "9", "32", "19", "42", "99", "inf", "9", "8", ""],
    }
)  # fmt: skip


def model(question: str) -> str:
    """A deterministic stand-in: wrong on powers, raises on division by zero."""
    if not question:
        return ""
    a, op, b = question.split()
    x, y = int(a), int(b)
    if op == "**":
        return str(x * y)
    if op == "/":
        return str(x // y)
    return str({"+": x + y, "-": x - y, "*": x * y}[op])


correct = eb.define_score(
    "answer.correct", label="Correct answer", grader=eb.Grader(kind="rule", id="exact")
)
concise = eb.define_score("answer.concise", label="Concise", grader=eb.Grader("rule", "length"))
passed = eb.define_score(
    "answer.pass", label="Pass", combine=eb.all_of(correct, eb.at_least(concise, 0.5)), primary=True
)


@eb.scorer(correct)
def exact(output: str, expected: str) -> float:
    return 1.0 if output == expected else 0.0


@eb.scorer(concise)
def short(output: str) -> float:
    if not output:
        raise eb.SkipScore("empty_output")
    return max(0.0, min(1.0, (40 - len(output)) / 32))


def demo_run(name: str = "arithmetic-demo") -> eb.Run:
    """A small arithmetic run, one case at a time, with a fixed id (snapshots must not move)."""
    run = eb.run(
        QUESTIONS,
        model,
        scorers=[exact, short],
        scores=[passed],
        name=name,
        store=None,
        progress=False,
        concurrency=1,
    )
    run.id = "snapshot"
    return run


def evil_run() -> eb.Run:
    """A run with `<script>` in every piece of user text the views can show."""
    good = eb.define_score(
        "good",
        label=EVIL,
        primary=True,
        grader=eb.Grader(kind="model", id=EVIL, model=EVIL),
    )
    skip = eb.define_score("skip", label={"en": EVIL})

    @eb.scorer(good)
    def judge(output: Any) -> Any:
        if output == "boom":
            raise ValueError(EVIL)
        return eb.Score(0.5, rationale=EVIL, metadata={EVIL: EVIL})

    @eb.scorer(skip)
    def skipper(output: Any) -> Any:
        return eb.Unscored(EVIL)

    def task(q: str) -> str:
        if q == "raise":
            raise RuntimeError(EVIL)
        return "boom" if q == "boom" else EVIL

    data = pd.DataFrame(
        {"id": [EVIL, "ok", "err"], "q": [EVIL, "boom", "raise"], EVIL: [EVIL, EVIL, EVIL]}
    )
    run = eb.run(data, task, scorers=[judge, skipper], name=EVIL, store=None, progress=False)
    run.id = "evil"
    return run


class FakeComparison:
    """A comparison by its documented attributes only (docs/comparing.md), for the display tests."""

    def __init__(self, a: eb.Run, b: eb.Run, *, text: str = "Correct answer") -> None:
        self.a, self.b = a, b
        self.summary = pd.DataFrame(
            {
                "score": ["answer.correct", "answer.pass"],
                "label": [text, "Pass"],
                "mean_a": [0.8, 0.75],
                "mean_b": [0.9, 0.6],
                "delta": [0.1, -0.15],
                "ci_low": [0.02, -0.3],
                "ci_high": [0.18, -0.01],
                "p_value": [0.03, 0.0004],
                "p_adjusted": [0.06, 0.0008],
                "n_paired": [12, 12],
                "improved": [2, 0],
                "regressed": [0, 3],
                "same": [10, 9],
                "test": ["exact sign-flip", "exact sign-flip"],
            }
        )
        self.cases = pd.DataFrame(
            {
                "case_id": ["q01", "q02", text],
                "score": ["answer.correct", "answer.pass", "answer.pass"],
                "a": [0.0, 1.0, 1.0],
                "b": [1.0, 0.0, 0.0],
                "delta": [1.0, -1.0, -1.0],
                "change": ["improved", "regressed", "regressed"],
            }
        )
        self.warnings = [f"Score answer.correct: grader differs ({text} vs rule)"]


def costed_run(name: str, passed: int, cost: float | None, *, unpriced: int = 0) -> eb.Run:
    """4 cases, `passed` of them right, each priced `cost` (the first `unpriced` not priced)."""

    def task(q: str, ctx: Any) -> str:
        priced = cost is not None and int(q[1:]) >= unpriced
        ctx.record_usage(input_tokens=100, output_tokens=10, cost=cost if priced else None)
        return q

    primary = eb.define_score("hit", primary=True)
    hit = eb.scorer(primary)(lambda output: float(int(output[1:]) < passed))
    data = pd.DataFrame({"q": [f"q{i}" for i in range(4)]})
    return eb.run(data, task=task, scorers=[hit], name=name, store=None, progress=False)


# -- what a reader sees of a run in a notebook (eb.show's views; one anywidget) ---------------


def case_views(run: eb.Run, positions: Any, *, whole: bool = False) -> list[str]:
    """The case explorer's detail (the Cases tab of `eb.show(run)`) for each case position
    (input order), as a reader opens the case from the list; `whole` is its "whole texts"
    toggle."""
    import pytest  # the fixtures module is imported by tests only

    pytest.importorskip("anywidget")
    explorer = eb.show(run).explorer
    explorer.whole.value = whole
    shown = []
    for pos in positions:
        explorer.cases.value = int(pos)  # the entry of that case (every case is listed)
        shown.append(str(explorer.detail.value))
    return shown


def case_view(run: eb.Run, pos: int, *, whole: bool = False) -> str:
    """The case explorer's detail for case `pos` (see `case_views`)."""
    return case_views(run, [pos], whole=whole)[0]


def cases_where(run: eb.Run, **controls: Any) -> list[int]:
    """The case positions the case explorer lists with its controls set (`outcome`, `score`,
    `status`, `range`), in the order it lists them."""
    import pytest

    pytest.importorskip("anywidget")
    explorer = eb.show(run).explorer
    for name in ("score", "outcome", "status", "range"):  # a score before its status and range
        if name in controls:
            getattr(explorer, name).value = controls[name]
    return [int(pos) for _, pos in explorer.cases.options]


def tab_html(run: eb.Run, title: str) -> str:
    """The HTML of one tab of `eb.show(run)`: "Headline", "Scores" or "Unscored reasons"."""
    import pytest

    pytest.importorskip("anywidget")
    tabs = eb.show(run).tabs
    titles = [tabs.get_title(i) for i in range(len(tabs.children))]
    return str(tabs.children[titles.index(title)].value)
