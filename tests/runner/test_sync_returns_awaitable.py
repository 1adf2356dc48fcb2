"""A sync scorer or task that returns an awaitable: awaited once, on the loop, under its
deadline (docs/concepts.md, "Sync wrappers of async code")."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Generator
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DF = pd.DataFrame({"x": ["a", "b"]})


class Again:
    """An awaitable (not a coroutine, so nothing warns of it never being awaited)."""

    def __await__(self) -> Generator[Any, None, None]:
        return iter(())


async def grade(output: str) -> float:
    await asyncio.sleep(0)
    return 0.5


def _scores(run: eb.Run, score: str) -> pd.DataFrame:
    return run.scores[run.scores["score"] == score]


def _run(*scorers: Any, **options: Any) -> eb.Run:
    return eb.run(
        DF, task=lambda x: x, scorers=list(scorers), store=None, progress=False, **options
    )


@pytest.mark.parametrize("scorer_timeout", [None, 5.0])
def test_a_sync_wrapper_of_async_code_is_scored(scorer_timeout: float | None) -> None:
    wrapper = eb.scorer("wrapped")(lambda output: grade(output))

    class Ready:
        def __await__(self) -> Generator[Any, None, float]:
            yield from asyncio.sleep(0).__await__()
            return 1.0

    @eb.scorer
    def custom(output: str) -> Ready:  # any awaitable, not only a coroutine
        return Ready()

    run = _run(wrapper, custom, scorer_timeout=scorer_timeout)
    assert _scores(run, "wrapped")["value"].tolist() == [0.5, 0.5]
    assert _scores(run, "custom")["value"].tolist() == [1.0, 1.0]
    assert set(run.scores["status"]) == {"scored"}


def test_scorer_timeout_bounds_the_awaited_part() -> None:
    async def stuck() -> float:
        await asyncio.Event().wait()  # nobody ever sets it: nothing has to beat the deadline
        return 1.0

    @eb.scorer
    def hands_back(output: str) -> Any:
        return stuck()

    run = _run(hands_back, scorer_timeout=0.2)
    assert _scores(run, "hands_back")["reason"].tolist() == ["scorer_timed_out"] * 2


def test_one_deadline_covers_the_sync_part_and_the_awaited_part() -> None:
    # each part alone is well inside the deadline; together they are past it
    async def later() -> float:
        await asyncio.sleep(0.3)
        return 1.0

    @eb.scorer
    def two_halves(output: str) -> Any:
        time.sleep(0.3)
        return later()

    run = _run(two_halves, scorer_timeout=0.5)
    assert _scores(run, "two_halves")["reason"].tolist() == ["scorer_timed_out"] * 2


def test_an_awaitable_that_raises_is_that_scores_error() -> None:
    async def boom() -> float:
        raise ValueError("the judge is down")

    async def skip() -> float:
        raise eb.SkipScore("no reference answer")

    raising = eb.scorer("raising")(lambda output: boom())
    skipping = eb.scorer("skipping")(lambda output: skip())
    quick = eb.scorer("quick")(lambda output: 1.0)
    run = _run(raising, skipping, quick)
    rows = _scores(run, "raising")
    assert rows["reason"].tolist() == ["scorer_raised"] * 2
    assert rows["message"].str.contains("ValueError: the judge is down").all()
    assert _scores(run, "skipping")["reason"].tolist() == ["no reference answer"] * 2
    assert _scores(run, "quick")["value"].tolist() == [1.0, 1.0]  # the case's others keep theirs
    assert run.cases["outcome"].tolist() == ["passed", "passed"]


@pytest.mark.parametrize("scorer_timeout", [None, 5.0])
def test_an_awaitable_that_returns_an_awaitable_is_invalid_score(
    scorer_timeout: float | None, caplog: pytest.LogCaptureFixture
) -> None:
    async def chain() -> Again:
        return Again()

    sync_chain = eb.scorer("sync_chain")(lambda output: chain())

    @eb.scorer
    async def async_chain(output: str) -> Again:  # an async scorer's result: the same rule
        return Again()

    with caplog.at_level(logging.WARNING, logger="evalbook"):
        run = _run(sync_chain, async_chain, scorer_timeout=scorer_timeout)
    for name in ("sync_chain", "async_chain"):
        rows = _scores(run, name)
        assert rows["status"].tolist() == ["error"] * 2 and set(rows["reason"]) == {"invalid_score"}
        assert rows["message"].str.contains("Again object").all()
        assert rows["message"].str.contains("awaits a scorer's result once").all()
    warned = [r for r in caplog.records if "invalid" in r.getMessage()]
    assert len(warned) == 2  # once per scorer, as for any invalid score


# -- tasks: the same rule -------------------------------------------------------------------


def _task_run(task: Any, **options: Any) -> eb.Run:
    return eb.run(
        DF, task=task, scorers=[lambda output: 1.0], store=None, progress=False, **options
    )


def test_a_sync_task_that_returns_a_coroutine_has_it_awaited() -> None:
    async def answer(x: str) -> str:
        await asyncio.sleep(0)
        return x.upper()

    run = _task_run(lambda x: answer(x))
    assert run.cases["output"].tolist() == ["A", "B"]
    assert run.cases["outcome"].tolist() == ["passed", "passed"]


def test_timeout_bounds_a_sync_tasks_awaited_part() -> None:
    async def stuck() -> str:
        await asyncio.Event().wait()  # nobody ever sets it: nothing has to beat the deadline
        return "late"

    run = _task_run(lambda x: stuck(), timeout=0.2)
    assert run.cases["outcome"].tolist() == ["timed_out", "timed_out"]


def test_a_sync_tasks_awaitable_that_raises_is_the_cases_error_or_failure() -> None:
    async def boom(x: str) -> str:
        if x == "a":
            raise ValueError("down")
        raise AssertionError("wrong")

    run = _task_run(lambda x: boom(x))
    cases = run.cases
    assert cases["outcome"].tolist() == ["errored", "failed"]
    assert cases["error_type"].tolist() == ["ValueError", "AssertionError"]


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_task_whose_awaited_result_is_awaitable_again_errors(kind: str) -> None:
    async def chain() -> Again:
        return Again()

    async def async_task(x: str) -> Again:
        return Again()

    task = (lambda x: chain()) if kind == "sync" else async_task
    run = _task_run(task, attempts=2)
    cases = run.cases
    assert cases["outcome"].tolist() == ["errored", "errored"]
    assert cases["attempts"].tolist() == [2, 2]  # an error like any other: retried
    assert cases["error_type"].tolist() == ["TypeError", "TypeError"]
    assert cases["error_message"].str.contains("awaits a task's result once").all()
    assert cases["output"].isna().all()
    assert set(run.scores["reason"]) == {"case_errored"}
