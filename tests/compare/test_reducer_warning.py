"""`eb.compare` warns when a compared score's epochs are reduced differently in the two runs."""

from __future__ import annotations

from typing import Any

import pandas as pd

import evalbook as eb

FRAME = pd.DataFrame({"id": ["a", "b", "c"], "hits": [1, 2, 3]})


def _run(reducer: Any, name: str, *, grader: eb.Grader | None = None) -> eb.Run:
    """Three epochs; case `a` passes in 1 of them, `b` in 2, `c` in all 3."""
    ok = eb.define_score("ok", reducer=reducer, grader=grader)

    @eb.scorer(ok)
    def passed(hits: int, epoch: int) -> float:
        return 1.0 if epoch <= hits else 0.0

    return eb.run(
        FRAME,
        output_column="hits",
        scorers=[passed],
        epochs=3,
        name=name,
        store=None,
        progress=False,
    )


def test_a_different_reducer_is_one_sentence_naming_the_score_and_both_reducers() -> None:
    mean, best = _run("mean", "a"), _run("max", "b")
    comparison = eb.compare(mean, best)
    assert comparison.warnings == [
        "Score 'ok' is reduced differently over epochs: reducer 'mean' in a, 'max' in b, "
        "so its means are not comparable."
    ]
    # why it matters: the same samples, two different means
    row = comparison.summary.set_index("score").loc["ok"]
    assert row["mean_a"] == 2 / 3 and row["mean_b"] == 1.0


def test_pass_at_k_against_mean_is_named_as_written() -> None:
    warnings = eb.compare(_run(eb.pass_at(2), "a"), _run("mean", "b")).warnings
    assert warnings == [
        "Score 'ok' is reduced differently over epochs: reducer 'pass@2' in a, 'mean' in b, "
        "so its means are not comparable."
    ]


def test_the_same_reducer_gives_no_warning() -> None:
    assert eb.compare(_run("median", "a"), _run("median", "b")).warnings == []


def test_a_judge_vote_reducer_is_the_grader_sentence_not_this_one() -> None:
    def grader(votes_reducer: str) -> eb.Grader:
        return eb.Grader("model", "judge", model="m", votes=3, reducer=votes_reducer)

    warnings = eb.compare(
        _run("mean", "a", grader=grader("median")), _run("mean", "b", grader=grader("mean"))
    ).warnings
    assert warnings == ["Score 'ok' is graded differently: reducer 'median' in a, 'mean' in b."]
