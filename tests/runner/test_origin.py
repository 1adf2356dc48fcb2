"""Where each failure came from (docs/origin.md): `origin` on every errored or timed-out sample
and every error record, the headline's note and the warning above 10 %, and a retry of
some origins only. Provider failures through the real SDK: tests/judges/test_origin_provider.py."""

from __future__ import annotations

import asyncio
import time
import warnings
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from evalbook._runner._resume import RetryErrors


class ToolDown(Exception):
    """A tool server that is not there: listed in environment_errors= below."""


def call_tool(x: str) -> str:
    """A tool of the user's: it says itself when its environment failed."""
    if x.startswith("env"):
        raise eb.EnvironmentFailure(f"tool server for {x} answered 503")
    return x


def _run(df: pd.DataFrame, task: Any, **options: Any) -> eb.Run:
    options.setdefault("scorers", [lambda output: 1.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return eb.run(df, task=task, store=None, progress=False, **options)


def test_a_tool_raising_environment_failure_is_the_environments() -> None:
    def agent(x: str) -> str:
        try:
            return call_tool(x)
        except eb.EnvironmentFailure as exc:  # the agent gives up, in its own words
            raise RuntimeError("agent stopped") from exc

    run = _run(pd.DataFrame({"x": ["a", "env-1", "b"]}), agent)
    assert run.cases["outcome"].tolist() == ["passed", "errored", "passed"]
    assert run.cases["origin"].tolist()[1] == "environment"
    assert run.cases["origin"].isna().tolist() == [True, False, True]
    assert run.scores["origin"].tolist()[1] == "environment"
    assert run.summary()["errors"].iloc[0] == 1  # summary() keeps its counts
    assert "origin" not in run.summary().columns


def test_environment_errors_names_the_types_that_are_the_environments() -> None:
    def task(x: str) -> str:
        if x == "down":
            raise ToolDown("connection refused")
        if x == "bug":
            raise KeyError(x)
        return x

    df = pd.DataFrame({"x": ["down", "bug"]})
    assert _run(df, task).cases["origin"].tolist() == ["task", "task"]
    listed = _run(df, task, environment_errors=(ToolDown,))
    assert listed.cases["origin"].tolist() == ["environment", "task"]
    assert _run(df, task, environment_errors=[ToolDown]).cases["origin"].iloc[0] == "environment"


@pytest.mark.parametrize("bad", ["ToolDown", ToolDown("x"), (ToolDown, 3), 7])
def test_environment_errors_that_are_not_types_is_a_configuration_error(bad: Any) -> None:
    called: list[str] = []
    with pytest.raises(eb.ConfigurationError, match="environment_errors= takes exception types"):
        eb.run(pd.DataFrame({"x": ["a"]}), task=called.append, environment_errors=bad, store=None)
    assert called == []  # before any case runs


def test_a_scorer_raising_is_the_graders_and_a_derived_score_inherits_it() -> None:
    broken = eb.define_score("broken")
    fine = eb.define_score("fine")

    @eb.scorer(broken)
    def breaks(output: str) -> float:
        raise ValueError("the scorer has a bug")

    @eb.scorer(fine)
    def ok(output: str) -> float:
        return 1.0

    both = eb.define_score("both", combine=eb.all_of(broken, fine), primary=True)
    run = _run(pd.DataFrame({"x": ["a"]}), lambda x: x, scorers=[breaks, ok], scores=[both])
    assert run.cases["origin"].isna().all()  # the sample itself did not fail
    by_score = dict(zip(run.scores["score"], run.scores["origin"], strict=True))
    assert by_score["broken"] == "grader" and by_score["both"] == "grader"
    assert pd.isna(by_score["fine"])
    assert "outside the model" not in run.headline.text


def test_a_task_that_raises_or_overruns_is_the_tasks() -> None:
    async def task(x: str) -> str:
        if x == "slow":
            await asyncio.sleep(5)
        if x == "bug":
            raise ZeroDivisionError
        return x

    t0 = time.perf_counter()
    run = _run(pd.DataFrame({"x": ["slow", "bug", "fine"]}), task, timeout=0.2)
    assert time.perf_counter() - t0 < 4
    assert run.cases["outcome"].tolist() == ["timed_out", "errored", "passed"]
    assert run.cases["origin"].tolist()[:2] == ["task", "task"]


def test_the_final_attempt_decides_the_origin() -> None:
    tries: dict[str, int] = {}

    def task(x: str) -> str:
        tries[x] = tries.get(x, 0) + 1
        if tries[x] == 1:
            raise eb.EnvironmentFailure("cold start")
        raise KeyError("then a bug")

    run = _run(pd.DataFrame({"x": ["a"]}), task, attempts=2)
    assert run.cases["origin"].tolist() == ["task"]


def _flaky_data(n: int, failing: set[int]) -> tuple[pd.DataFrame, Any]:
    def task(i: int) -> int:
        if i in failing:
            raise eb.EnvironmentFailure("sandbox down")
        if i == n - 1:
            raise KeyError("task bug")
        return i

    return pd.DataFrame({"i": range(n)}), task


def test_the_headline_says_how_many_failed_outside_the_model_and_warns_above_10_percent() -> None:
    df, task = _flaky_data(20, {0, 1, 2})  # 3 of 20 = 15 %: above 10 %
    with pytest.warns(RuntimeWarning, match="may reflect infrastructure") as caught:
        run = eb.run(df, task=task, scorers=[lambda output: 1.0], store=None, progress=False)
    text = str(caught[0].message)
    assert "--retry-errors RUN --origin provider,environment" in text
    assert "3 samples failed outside the model (environment 3), 15% of the samples" in text
    assert run.headline.text == (
        "lambda 100% over 16 of 20 cases · completed 80% (4 errored) · "
        "3 samples failed outside the model (environment 3)"
    )
    assert run.headline.origins == {"task": 1, "environment": 3}
    assert run.headline.infra_share == pytest.approx(0.15)


def test_no_warning_at_10_percent_or_less() -> None:
    df, task = _flaky_data(20, {0, 1})  # exactly 10 %
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = eb.run(df, task=task, scorers=[lambda output: 1.0], store=None, progress=False)
    assert run.headline.text.endswith("2 samples failed outside the model (environment 2)")


def test_a_retry_of_some_origins_runs_only_those() -> None:
    df, task = _flaky_data(10, {0, 1, 2})
    first = _run(df, task)
    counts = first.cases["origin"].value_counts()
    assert counts[counts > 0].to_dict() == {"environment": 3, "task": 1}
    calls: list[int] = []

    def fixed(i: int) -> int:
        calls.append(i)
        if i == 9:
            raise KeyError("still a bug")
        return i

    retry = RetryErrors(first, "again", origins=frozenset({"provider", "environment"}))
    assert retry.counts() == {"errored": 3, "timed_out": 0, "not_run": 0}
    again = _run(df, fixed, resume=retry)
    assert sorted(calls) == [0, 1, 2]  # the task's own failure is not run again
    assert again.cases["outcome"].tolist() == ["passed"] * 9 + ["errored"]
    assert again.cases["origin"].tolist()[-1] == "task"  # kept as it was
    assert "outside the model" not in again.headline.text
    every = RetryErrors(first, "all")
    assert every.counts()["errored"] == 4
