"""Where user functions run: sync ones always in a worker thread, with the deadline enforced."""

from __future__ import annotations

import asyncio
import os
import threading
import time
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _runner_helpers import run

# call() alone: its threads, deadlines and forks, with no run around it
from evalbook._runner._calls import AttemptTimeout, Threads, call


def where() -> str:
    return threading.current_thread().name


async def _calls(fn: Any, n: int, timeout: float | None = None) -> list[Any]:
    threads = Threads()
    calls = (call(fn, False, (), {}, threads, timeout) for _ in range(n))
    return await asyncio.gather(*calls, return_exceptions=True)


def test_a_sync_function_always_runs_in_a_worker_thread() -> None:
    names = asyncio.run(_calls(where, 40))
    assert threading.main_thread().name not in names
    assert all(isinstance(n, str) and n.startswith("evalbook") for n in names)


def test_a_sync_call_past_its_deadline_times_out_at_the_deadline() -> None:
    release = threading.Event()

    def hangs() -> str:
        release.wait()  # set only once the calls have timed out: it never returns in time
        return "late"

    async def main() -> tuple[list[Any], bool]:
        out = await _calls(hangs, 3, timeout=0.05)
        return out, release.is_set()

    try:
        out, released = asyncio.run(main())
    finally:
        release.set()
    # every call timed out while the function was still blocked (nothing released it)
    assert not released
    assert all(isinstance(o, AttemptTimeout) for o in out)


def test_an_exception_in_a_thread_reaches_the_caller() -> None:
    def boom() -> None:
        raise KeyError("x")

    assert isinstance(asyncio.run(_calls(boom, 1))[0], KeyError)


def test_a_sync_function_that_returns_a_coroutine_is_awaited() -> None:
    async def inner() -> str:
        return "awaited"

    def outer() -> Any:
        return inner()

    assert asyncio.run(_calls(outer, 2)) == ["awaited", "awaited"]


def test_timed_out_calls_do_not_starve_the_calls_after_them() -> None:
    """Threads still busy with abandoned calls are not counted as free ones."""
    release = threading.Event()

    def blocked() -> None:
        release.wait()  # set only at the end: these threads stay busy throughout

    async def main() -> list[Any]:
        threads = Threads()
        await asyncio.gather(
            *(call(blocked, False, (), {}, threads, 0.05) for _ in range(4)),
            return_exceptions=True,
        )
        # the calls after must complete inside their deadline: a generous one, as a thread
        # hop may be slow on a loaded machine (a starved call waits it out and times out)
        return await asyncio.gather(*(call(where, False, (), {}, threads, 5.0) for _ in range(4)))

    try:
        names = asyncio.run(main())
    finally:
        release.set()
    assert len(names) == 4 and all(isinstance(n, str) for n in names)


def test_the_issue_example_three_slow_cases_time_out_and_the_rest_run() -> None:
    """40 cases, three block 60 s, timeout=5: the run ends near the deadline, not after 60 s.

    Before, a fast first call moved the task onto the event loop: each sleep blocked every
    case and the deadline was only checked after the call returned. The 37 fast cases must
    finish inside the deadline, so it is a generous one (a thread hop may be slow on a loaded
    machine); the slow cases outlast it by far.
    """
    slow = {"c07", "c21", "c33"}
    release = threading.Event()

    def task(case_id: str) -> str:
        if case_id in slow:
            release.wait(60)  # set at the end of the test, long after the deadline
        return case_id.upper()

    data = pd.DataFrame({"id": [f"c{i:02d}" for i in range(40)]})
    t0 = time.perf_counter()
    try:
        result = run(
            data, task=task, scorers=[lambda output: 1.0], timeout=5, concurrency=8, name="slow"
        )
    finally:
        release.set()
    wall = time.perf_counter() - t0
    cases = result.cases.set_index("case_id")
    assert set(cases.index[cases["outcome"] == "timed_out"]) == slow
    assert (cases.loc[~cases.index.isin(slow), "outcome"] == "passed").all()
    # about the 5 s deadline, far below one 60 s block: impossible if any block held up the
    # run or the deadline waited for the call (25 s of room for a loaded machine)
    assert wall < 30


def test_a_blocking_sync_scorer_does_not_block_other_cases() -> None:
    """A scorer blocked on case a lets case b (and its scorer) finish meanwhile.

    Case w goes first and is fast: before, that moved the scorer onto the event loop, where
    a's wait blocked b for good (a scored 0).
    """
    b_done = threading.Event()

    def scorer(case_id: str) -> float:
        if case_id == "a":
            return 1.0 if b_done.wait(30) else 0.0  # room for a loaded machine to score b
        if case_id == "b":
            b_done.set()
        return 1.0

    data = pd.DataFrame({"id": ["w", "a", "b"]})
    result = run(data, task=lambda case_id: case_id, scorers=[scorer], concurrency=3)
    values = result.scores.set_index("case_id")["value"]
    assert values.to_dict() == {"w": 1.0, "a": 1.0, "b": 1.0}


def test_sync_scorers_of_a_case_run_off_the_event_loop() -> None:
    seen: list[str] = []

    @eb.scorer
    def first(output: str) -> float:
        seen.append(where())
        return 1.0

    @eb.scorer
    def second(output: str) -> float:
        seen.append(where())
        return 1.0

    run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x, scorers=[first, second])
    assert len(seen) == 4 and threading.main_thread().name not in seen


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_gets_worker_threads_of_its_own() -> None:
    """The parent's idle threads do not exist in a child: counting them would hang its calls."""
    assert asyncio.run(_calls(where, 2))  # the parent now has idle worker threads
    pid = os.fork()
    if pid == 0:  # the child: exit 0 only if a sync call completes
        try:
            out = asyncio.run(_calls(where, 2, timeout=5))
            os._exit(0 if all(isinstance(n, str) for n in out) else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
