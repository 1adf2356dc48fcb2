"""A BaseException from user code is that sample's error, not the run's end (issue 15)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DF = pd.DataFrame({"x": [0, 1, 2]})


class Custom(BaseException):
    """A user's own BaseException (not KeyboardInterrupt or SystemExit)."""


def _raising(kind: type[BaseException]) -> Callable[[int], int]:
    def task(x: int) -> int:
        if x == 1:
            raise kind("boom")
        return x

    return task


def _araising(kind: type[BaseException]) -> Callable[[int], Any]:
    async def task(x: int) -> int:
        await asyncio.sleep(0)
        if x == 1:
            raise kind("boom")
        return x

    return task


KINDS = [Custom, GeneratorExit, asyncio.CancelledError]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("make", [_raising, _araising], ids=["sync", "async"])
@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_task_raising_a_base_exception_errors_that_case_only(
    kind: type[BaseException], make: Callable[..., Any], concurrency: int
) -> None:
    run = eb.run(
        DF,
        task=make(kind),
        scorers=[lambda output: 1.0],
        concurrency=concurrency,
        timeout=30,
        store=None,
        progress=False,
    )
    cases = run.cases.set_index("case_id")
    assert list(cases["outcome"]) == ["passed", "errored", "passed"]
    assert cases.loc["1", "error_type"] == kind.__name__
    assert cases.loc["1", "error_message"] == "boom"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("is_async", [False, True])
@pytest.mark.parametrize("scorer_timeout", [None, 30])
def test_a_scorer_raising_a_base_exception_is_that_record_only(
    kind: type[BaseException], is_async: bool, scorer_timeout: float | None
) -> None:
    def bad(output: int) -> float:
        if output == 1:
            raise kind("boom")
        return 1.0

    async def abad(output: int) -> float:
        return bad(output)

    @eb.scorer
    def good(output: int) -> float:
        return 0.5

    run = eb.run(
        DF,
        output_column="x",
        scorers=[eb.scorer(abad if is_async else bad), good],
        scorer_timeout=scorer_timeout,
        store=None,
        progress=False,
    )
    by = run.scores.set_index(["case_id", "score"])
    name = "abad" if is_async else "bad"
    assert by.loc[("1", name), "reason"] == "scorer_raised"
    assert by.loc[("1", name), "message"] == f"{kind.__name__}: boom"
    assert by.loc[("0", name), "value"] == 1.0
    assert list(by.xs("good", level="score")["value"]) == [0.5] * 3
