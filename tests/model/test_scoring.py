"""The scoring rule (docs/scoring.md): every outcome × errors-policy cell, means, CIs, headline."""

from __future__ import annotations

import asyncio
import functools
import math
import warnings
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import wilson

NAN = math.nan


async def _cell_task(x: str, ctx: Any) -> str:
    # async, so that only "timed_out" ever waits (as "slow" in `_task` below); "spend" spends
    # the budget, so that "pending", after it (concurrency=1: in order), never starts
    if x.startswith("failed"):
        {
            "failed scored": lambda: ctx.record_score("s", 1.0),
            "failed unscored": lambda: ctx.record_unscored("s", "why"),
            "failed error": lambda: ctx.record_score("s", "1.0"),
        }[x]()
        ctx.fail("wrong")
    if x == "errored":
        raise RuntimeError("boom")
    if x == "timed_out":
        await asyncio.Event().wait()
    if x == "spend":
        ctx.record_usage(cost=5.0)
    return x


CELLS = {  # case: its outcome, its record's status, what counts (errors="exclude", "zero")
    "passed scored": ("passed", "scored", 0.7, 0.7),
    "passed unscored": ("passed", "unscored", NAN, NAN),
    "passed error": ("passed", "error", NAN, 0.0),
    "failed scored": ("failed", "scored", 0.0, 0.0),  # failed counts 0 whatever was recorded
    "failed unscored": ("failed", "unscored", 0.0, 0.0),
    "failed error": ("failed", "error", 0.0, 0.0),
    "errored": ("errored", "error", NAN, 0.0),
    "timed_out": ("timed_out", "error", NAN, 0.0),
    "spend": ("passed", "scored", 1.0, 1.0),
    "pending": (None, None, NAN, NAN),  # no final outcome: nothing counts, whatever the policy
}


@functools.cache
def _cells(errors: str) -> pd.DataFrame:
    """The cases and records of a run with one case per cell, as one table by case."""
    s = eb.define_score("s", errors=errors)  # type: ignore[arg-type]

    @eb.scorer(s)
    def score(output: str) -> Any:
        values = {"passed scored": 0.7, "passed unscored": eb.Unscored("n"), "spend": 1.0}
        return values.get(output, "0.7")  # "passed error": an invalid value

    df = pd.DataFrame({"x": list(CELLS)}, index=list(CELLS))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the budget's and the invalid value's warnings
        run = eb.run(
            df,
            task=_cell_task,
            scorers=[score],
            timeout=0.2,
            max_cost=1.0,
            concurrency=1,
            store=None,
            progress=False,
        )
    table = run.scores.set_index("case_id")[["status", "counted"]].astype(object)
    return table.assign(outcome=run.cases.set_index("case_id")["outcome"].astype(object))


@pytest.mark.parametrize("errors", ["exclude", "zero"])
@pytest.mark.parametrize("case", list(CELLS))
def test_every_cell_of_the_rule(case: str, errors: str) -> None:
    outcome, status, if_excluded, if_zero = CELLS[case]
    row = _cells(errors).loc[case]
    assert (None if pd.isna(row["outcome"]) else row["outcome"]) == outcome
    assert (None if pd.isna(row["status"]) else row["status"]) == status
    expected = if_zero if errors == "zero" else if_excluded
    got = float(row["counted"])
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


async def _task(x: str, ctx: Any) -> str:
    # Async, and only "slow" ever waits: every other case ends in the first step of its call,
    # which the event loop runs before the deadline's timer however late that fires, so the
    # short timeout= below cannot cut them on a loaded machine (a sync task's thread hop could
    # take longer than it). "slow" waits for an event nobody sets: it always times out.
    if x == "fail":
        ctx.record_score("s", 1.0)
        ctx.fail("wrong")
    if x == "err":
        raise RuntimeError("boom")
    if x == "slow":
        await asyncio.Event().wait()
    return x


def _run_policy(errors: str) -> eb.Run:
    df = pd.DataFrame({"x": ["ok", "fail", "err", "slow", "bad", "skip"]})
    s = eb.define_score("s", errors=errors)  # type: ignore[arg-type]

    @eb.scorer(s)
    def score(output: str) -> Any:
        return {"ok": 1.0, "bad": "1.0", "skip": eb.Unscored("nothing"), "slow": 1.0}[output]

    return eb.run(df, task=_task, scorers=[score], timeout=0.2, store=None, progress=False)


def test_end_to_end_exclude_policy() -> None:
    run = _run_policy("exclude")
    assert list(run.cases["outcome"]) == [
        "passed",
        "failed",
        "errored",
        "timed_out",
        "passed",
        "passed",
    ]
    counted = run.scores["counted"].tolist()
    assert counted[:2] == [1.0, 0.0] and all(math.isnan(c) for c in counted[2:])
    row = run.summary().iloc[0]
    assert row["mean"] == 0.5
    assert (row["counted"], row["zeroed"], row["excluded"], row["unscored"], row["errors"]) == (
        2,
        1,
        3,
        1,
        3,
    )
    assert row["counted"] + row["excluded"] + row["unscored"] == row["n_cases"]


def test_end_to_end_zero_policy() -> None:
    run = _run_policy("zero")
    assert run.scores["counted"].tolist()[:5] == [1.0, 0.0, 0.0, 0.0, 0.0]
    row = run.summary().iloc[0]
    assert row["mean"] == pytest.approx(1 / 5)
    assert (row["counted"], row["zeroed"], row["excluded"], row["unscored"]) == (5, 4, 0, 1)


def test_mean_is_none_when_nothing_is_counted() -> None:
    df = pd.DataFrame({"x": ["a", "b"]})
    run = eb.run(df, task=lambda x: x, scorers=[lambda output: eb.Unscored("n/a")], store=None)
    assert math.isnan(run.summary().iloc[0]["mean"])
    assert run.headline.value is None and run.headline.ci is None
    assert "—" in run.headline.text


def _summary(values: list[float]) -> pd.Series:
    """The summary row of a run whose cases' values are `values`."""
    run = eb.run(
        pd.DataFrame({"v": values}),
        scorers=[eb.scorer(eb.define_score("s", primary=True))(lambda v: v)],
        output_column="v",
        store=None,
        progress=False,
    )
    return run.summary().iloc[0]


def test_wilson_and_t_intervals_bracket_the_mean() -> None:
    row = _summary([1.0, 1.0, 0.0, 1.0])
    mean, lo, hi = row["mean"], row["ci_low"], row["ci_high"]
    assert lo <= mean <= hi and lo >= 0 and hi <= 1
    assert (lo, hi) == pytest.approx(wilson(3, 4))
    row = _summary([0.2, 0.4, 0.9])
    assert row["ci_low"] < row["mean"] < row["ci_high"]
    # one value: the degenerate rule (docs/statistics.md), Wilson of the mean over 1 trial
    row = _summary([0.3])
    assert row["mean"] == 0.3 and (row["ci_low"], row["ci_high"]) == pytest.approx(wilson(0.3, 1))
    with pytest.warns(UserWarning, match="data has no rows"):
        assert math.isnan(_summary([])["mean"])


# Each example is one run in memory (about 10 ms).
@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=40))
def test_means_and_cis_stay_in_unit_interval(values: list[float]) -> None:
    row = _summary(values)
    assert 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0


@pytest.mark.parametrize(
    ("x", "text"),
    [(0.52, "52%"), (1.0, "100%"), (0.0, "0%"), (0.9996, "99.96%"), (0.001, "0.1%"), (None, "—")],
)
def test_percentages_never_round_to_the_bounds(x: float | None, text: str) -> None:
    run = eb.run(
        pd.DataFrame({"v": [x]}),
        scorers=[
            eb.scorer(eb.define_score("s", primary=True))(
                lambda v: eb.Unscored("none") if v is None or v != v else v
            )
        ],
        output_column="v",
        store=None,
        progress=False,
    )
    assert run.headline.text == f"s {text} · completed 100%"


def _headline_run(scores: list[eb.ScoreDefinition], values: dict[str, float]) -> eb.Run:
    df = pd.DataFrame({"x": ["a", "b", "err"]})

    def task(x: str, ctx: Any) -> str:
        if x == "err":
            raise ValueError("nope")
        for name, v in values.items():
            ctx.record_score(name, v)
        return x

    return eb.run(df, task=task, scores=scores, store=None)


def test_headline_uses_the_primary_score() -> None:
    a = eb.define_score("a", label="Pass", primary=True)
    b = eb.define_score("b")
    h = _headline_run([a, b], {"a": 1.0, "b": 0.0}).headline
    assert (h.score, h.label, h.value) == ("a", "Pass", 1.0)
    assert h.completion == pytest.approx(2 / 3)
    assert h.text == "Pass 100% over 2 of 3 cases · completed 67% (1 errored)"


def test_headline_single_score_without_primary() -> None:
    h = _headline_run([eb.define_score("only")], {"only": 0.5}).headline
    assert h.score == "only" and h.value == 0.5


def test_headline_falls_back_to_passed_rate() -> None:
    h = _headline_run([eb.define_score("a"), eb.define_score("b")], {"a": 1, "b": 1}).headline
    assert h.score is None and h.label == "Passed"
    assert h.value == pytest.approx(2 / 3)
    assert h.ci is not None and h.ci[0] <= h.value <= h.ci[1]


def test_headline_of_an_empty_run() -> None:
    with pytest.warns(UserWarning, match="data has no rows"):
        run = eb.run(pd.DataFrame({"x": []}), task=lambda x: x, store=None)
    assert run.headline.completion is None
    assert len(run.scores) == 0 and len(run.cases) == 0
