"""The warnings of `eb.compare`: case sets, graders, definitions and scores that differ."""

from __future__ import annotations

from typing import Any

import pandas as pd

import evalbook as eb
from _compare_helpers import make_run

# -- warnings -------------------------------------------------------------------------------


def test_warns_about_different_case_sets_with_counts() -> None:
    a = make_run({"q": [1.0, 0.0, 1.0, 1.0]}, name="old", ids=["a", "b", "c", "d"])
    b = make_run({"q": [1.0, 1.0, 0.0]}, name="new", ids=["c", "d", "e"])
    cmp = eb.compare(a, b)
    assert cmp.warnings[0] == (
        "Case sets differ: 2 cases only in a ('old'), 1 only in b ('new'); "
        "only the 2 cases in both are paired."
    )
    assert cmp.shared_cases == 2
    assert cmp.cases["case_id"].tolist() == ["a", "b", "c", "d", "e"]
    assert cmp.cases["change"].tolist() == ["only_a", "only_a", "same", "same", "only_b"]


def test_warns_about_a_different_grader_naming_both_values() -> None:
    judge_a = eb.define_score("q", grader=eb.Grader("model", "judge", model="gpt-x", version="1"))
    judge_b = eb.define_score("q", grader=eb.Grader("model", "judge", model="gpt-y", version="2"))
    a = make_run({"q": [0.5, 0.5]}, name="a", definitions={"q": judge_a})
    b = make_run({"q": [0.5, 0.5]}, name="b", definitions={"q": judge_b})
    assert eb.compare(a, b).warnings == [
        "Score 'q' is graded differently: model 'gpt-x' in a, 'gpt-y' in b; "
        "version '1' in a, '2' in b."
    ]
    rule = eb.define_score("q", grader=eb.Grader("rule", "exact"))
    c = make_run({"q": [0.5, 0.5]}, name="c", definitions={"q": rule})
    warning = eb.compare(a, c).warnings[0]
    assert "kind 'model' in a, 'rule' in b" in warning
    assert "id 'judge' in a, 'exact' in b" in warning
    assert "model 'gpt-x' in a, none in b" in warning


def test_a_grader_recorded_on_the_records_counts() -> None:
    frame = pd.DataFrame({"id": ["x"], "i": [0]})

    def task(ctx: Any, model: str) -> str:
        ctx.record_score("q", 1.0, grader=eb.Grader("model", "judge", model=model))
        return "out"

    def run_with(model: str, name: str) -> eb.Run:
        return eb.run(
            frame.assign(model=model),
            task=task,
            scores=[eb.define_score("q")],
            name=name,
            store=None,
            progress=False,
        )

    assert eb.compare(run_with("m1", "a"), run_with("m1", "b")).warnings == []
    assert eb.compare(run_with("m1", "a"), run_with("m2", "b")).warnings == [
        "Score 'q' is graded differently: model 'm1' in a, 'm2' in b."
    ]


def test_warns_about_definitions_that_differ() -> None:
    x = eb.define_score("x")
    pass_a = eb.define_score("pass", label="Pass", combine=eb.all_of(x), primary=True)
    pass_b = eb.define_score(
        "pass",
        label="Passed",
        combine=eb.all_of(x, eb.at_least(x, 0.5)),
        errors="zero",
        primary=True,
    )
    a = make_run({"x": [1.0, 0.0]}, name="a", scores=[pass_a])
    b = make_run({"x": [1.0, 1.0]}, name="b", scores=[pass_b])
    cmp = eb.compare(a, b)
    assert cmp.warnings == [
        "Score 'pass' is defined differently: label 'Pass' in a, 'Passed' in b; "
        "combine all_of(x) in a, all_of(x, at_least(x, 0.5)) in b; "
        "errors policy 'exclude' in a, 'zero' in b."
    ]
    assert cmp.scores == ["pass"]  # the shared primary


def test_warns_when_primary_scores_differ() -> None:
    p1 = eb.define_score("p1", primary=True)
    p2 = eb.define_score("p2", primary=True)
    a = make_run({"p1": [1.0], "p2": [1.0]}, name="a", definitions={"p1": p1})
    b = make_run({"p1": [1.0], "p2": [0.0]}, name="b", definitions={"p2": p2})
    cmp = eb.compare(a, b)
    assert "Primary scores differ (p1, p2)" in cmp.warnings
    assert cmp.scores == ["p1", "p2"]  # no shared primary: every common score
    c = make_run({"p1": [1.0], "p2": [1.0]}, name="c")
    assert "Primary scores differ (p1, none)" in eb.compare(a, c).warnings


def test_warns_about_scores_in_one_run_only() -> None:
    a = make_run({"x": [1.0], "y": [1.0]}, name="a")
    b = make_run({"x": [1.0], "z": [1.0]}, name="b")
    cmp = eb.compare(a, b)
    assert "Score only in a, not compared: y." in cmp.warnings
    assert "Score only in b, not compared: z." in cmp.warnings
    assert cmp.scores == ["x"]
    empty = eb.compare(make_run({"y": [1.0]}, name="a"), make_run({"z": [1.0]}, name="b"))
    assert "The runs have no score in common, so nothing is compared." in empty.warnings
    assert len(empty.summary) == 0 and len(empty.cases) == 0
