"""The engine's extension points: an `Executor` runs the cases, a `RunSink` hears of them."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

import pandas as pd
import pytest

import evalbook as eb

# the engine's extension points (Executor, RunSink) and parts, which have no public name
from evalbook._model._contract import Rec, error_rec
from evalbook._model._results import Finished
from evalbook._runner._calls import Threads
from evalbook._runner._engine import Engine, Executor, LocalExecutor, warn_invalid
from evalbook._runner._options import RunOptions
from evalbook._runner._plan import make_plan


class Reversed:
    """An executor of its own: one case at a time, last case first."""

    def __init__(self) -> None:
        self.order: list[int] = []

    async def execute(self, engine: Engine, positions: Sequence[int], /) -> None:
        for pos in reversed(positions):
            self.order.append(pos)
            await engine.case(pos)


class Collect:
    """A sink that keeps what it is told."""

    def __init__(self) -> None:
        self.started: list[tuple[int, int]] = []
        self.ended: dict[int, Finished] = {}

    def case_started(self, start: tuple[int, int, int], /) -> None:
        self.started.append(start[:2])

    def case_ended(self, pos: int, case: Finished) -> None:
        self.ended[pos] = case


def _engine_run(executor: Executor) -> Collect:
    data = pd.DataFrame({"x": ["a", "b", "c"]})

    def task(x: str) -> str:
        if x == "b":
            raise ValueError("no b")
        return x.upper()

    plan = make_plan(data, task, [lambda output: float(output == "A")], [], None)
    sink = Collect()

    async def main() -> None:
        options = RunOptions(attempts=2, store=None)
        engine = Engine(plan, options, Threads(), results=None, sink=sink)
        await executor.execute(engine, range(3))

    asyncio.run(main())
    return sink


def test_any_executor_drives_the_engine_and_the_sink_hears_every_attempt() -> None:
    executor = Reversed()
    sink = _engine_run(executor)
    assert executor.order == [2, 1, 0]
    assert sink.started == [(2, 1), (1, 1), (1, 2), (0, 1)]  # b errored, so it was tried again
    assert [sink.ended[p].output for p in range(3)] == ["A", None, "C"]
    assert sink.ended[1].error_type == "ValueError" and sink.ended[1].attempts == 2
    assert [sink.ended[p].records[0].value for p in (0, 2)] == [1.0, 0.0]


def test_the_local_executor_runs_every_case_once() -> None:
    sink = _engine_run(LocalExecutor(2))
    assert sorted(sink.ended) == [0, 1, 2]
    assert sorted(sink.started) == [(0, 1), (1, 1), (1, 2), (2, 1)]


def test_the_invalid_score_warning_is_logged_once_per_scorer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    warned: set[str] = set()
    bad = error_rec("invalid_score", "a str is not a score")
    with caplog.at_level(logging.WARNING, logger="evalbook"):
        warn_invalid(warned, "c1", [("s", Rec(1, 1.0)), ("s", bad)])
        warn_invalid(warned, "c2", [("s", bad), ("t", bad)])
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "'s'" in messages[0] and "'c1'" in messages[0]
    assert "'t'" in messages[1] and "'c2'" in messages[1]
    assert warned == {"s", "t"}


def test_a_run_warns_once_for_a_scorer_that_keeps_returning_junk(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def junk(output: str) -> object:
        return "not a number"

    data = pd.DataFrame({"x": list("abcd")})
    with caplog.at_level(logging.WARNING, logger="evalbook"):
        run = eb.run(data, task=lambda x: x, scorers=[junk], store=None, progress=False)
    assert (run.scores["status"] == "error").all()
    assert sum("invalid score" in r.getMessage() for r in caplog.records) == 1


def test_a_sync_scorer_that_returns_a_coroutine_has_it_awaited() -> None:
    async def later(output: str) -> float:
        await asyncio.sleep(0)
        return float(output == "A")

    def sync_front(output: str) -> object:
        return later(output)  # e.g. a wrapper around an async client

    data = pd.DataFrame({"x": ["a", "b"]})
    run = eb.run(data, task=lambda x: x.upper(), scorers=[sync_front], store=None, progress=False)
    assert run.scores["value"].tolist() == [1.0, 0.0]


def test_sync_and_async_scorers_of_one_case_all_land_in_their_place() -> None:
    @eb.scorer("first", "second")
    def both(output: str) -> dict[str, float]:
        return {"first": 1.0, "second": 0.5}

    @eb.scorer("third")
    async def third(output: str) -> float:
        return 0.25

    @eb.scorer("fourth")
    def fourth(output: str) -> float:
        return 0.0

    data = pd.DataFrame({"x": ["a"]})
    run = eb.run(
        data, task=lambda x: x.upper(), scorers=[third, both, fourth], store=None, progress=False
    )
    got = dict(zip(run.scores["score"].astype(str), run.scores["value"], strict=True))
    assert got == {"third": 0.25, "first": 1.0, "second": 0.5, "fourth": 0.0}


def test_run_options_are_frozen() -> None:
    """The one options value of a run (no public surface: `run.options` is a plain dict)."""
    options = RunOptions(concurrency=2)
    with pytest.raises(AttributeError):
        options.concurrency = 3  # type: ignore[misc]
