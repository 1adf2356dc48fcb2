"""A coroutine that swallows its cancellation is left behind at the deadline (docs/concepts.md).

`_calls.within` runs a call with a deadline as a task of its own, cancels it once at the
deadline and does not wait for it to end: tasks (`timeout=`), scorers (`scorer_timeout=`) and
judge clients (a judge's `timeout=`, or the run's `scorer_timeout=`) alike.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# an abandoned call's clean-up, driven call by call: no run can time it this exactly
from evalbook._runner import _calls
from evalbook._runner._calls import AttemptTimeout, close_abandoned, within

HARD_TIMEOUT = 60  # seconds; every deadline in the child is 0.3 s


async def _stubborn(log: list[str], give_up_after: int | None = None) -> str:
    """Swallows every cancellation (raises after `give_up_after` of them, if given)."""
    swallowed = 0
    try:
        while True:
            try:
                await asyncio.sleep(0.01)
            except asyncio.CancelledError:
                swallowed += 1
                log.append("swallowed")
                if give_up_after is not None and swallowed >= give_up_after:
                    raise ValueError("late failure") from None
    finally:
        log.append("finally")


def _in_loop(main: Callable[[], Any]) -> tuple[Any, list[dict[str, Any]]]:
    """Run `main()` on a fresh loop; its result and what reached the loop's exception handler."""
    caught: list[dict[str, Any]] = []
    loop = asyncio.new_event_loop()
    loop.set_exception_handler(lambda _loop, context: caught.append(context))
    try:
        result = loop.run_until_complete(main())
    finally:
        loop.close()
    gc.collect()  # a task destroyed pending, or with an unretrieved exception, reports here
    return result, caught


def test_within_hands_on_the_result_and_the_exception_as_they_are() -> None:
    async def value() -> int:
        await asyncio.sleep(0)
        return 7

    async def own_timeout() -> None:
        raise TimeoutError("the user's own")

    async def main() -> tuple[int, BaseException]:
        got = await within(value(), 5)
        try:
            await within(own_timeout(), 5)
        except BaseException as exc:  # a user's TimeoutError is not the deadline
            return got, exc
        raise AssertionError("no exception")

    (got, exc), caught = _in_loop(main)
    assert got == 7
    assert type(exc) is TimeoutError and str(exc) == "the user's own"
    assert caught == []


def test_at_the_deadline_a_swallowing_coroutine_is_left_behind_then_closed() -> None:
    log: list[str] = []

    async def main() -> tuple[float, bool, int, int]:
        t0 = time.monotonic()
        with pytest.raises(AttemptTimeout):
            await within(_stubborn(log), 0.05)
        took = time.monotonic() - t0
        (task,) = [t for t in _calls._ABANDONED if t.get_loop() is asyncio.get_running_loop()]
        await asyncio.sleep(0.05)
        alive = not task.done()  # still running: it swallowed the one cancellation
        closed = await close_abandoned()
        return took, alive, closed, sum(t.get_loop() is task.get_loop() for t in _calls._ABANDONED)

    (took, alive, closed, left), caught = _in_loop(main)
    assert took < 5  # returned at the deadline, not when the coroutine ended
    assert alive and closed == 1 and left == 0
    assert log == ["swallowed", "finally"]  # closing ran its finally block
    assert caught == []  # nothing destroyed pending, no exception left unretrieved


def test_an_abandoned_call_that_fails_later_leaves_no_unretrieved_exception() -> None:
    log: list[str] = []

    async def main() -> int:
        with pytest.raises(AttemptTimeout):
            await within(_stubborn(log, give_up_after=2), 0.05)
        (task,) = [t for t in _calls._ABANDONED if t.get_loop() is asyncio.get_running_loop()]
        await asyncio.sleep(0.05)  # the first cancellation reaches it (and is swallowed)
        task.cancel()  # the second: it raises ValueError, and nobody awaits it
        await asyncio.sleep(0.05)
        assert task.done() and isinstance(task.exception(), ValueError)
        return await close_abandoned()

    closed, caught = _in_loop(main)
    assert closed == 0 and log == ["swallowed", "swallowed", "finally"]
    assert caught == []


def test_a_cancelled_caller_does_not_wait_for_the_call() -> None:
    log: list[str] = []

    async def main() -> float:
        waiting = asyncio.ensure_future(within(_stubborn(log), None))
        await asyncio.sleep(0.05)
        t0 = time.monotonic()
        waiting.cancel()  # Ctrl-C, or an outer deadline
        with pytest.raises(asyncio.CancelledError):
            await waiting
        took = time.monotonic() - t0
        await close_abandoned()
        return took

    took, caught = _in_loop(main)
    assert took < 5 and log == ["swallowed", "finally"]
    assert caught == []


# -- eb.run in a fresh interpreter, killed after HARD_TIMEOUT so a regression cannot hang CI --

CHILD = textwrap.dedent(
    """
    import asyncio, json, sys, time, warnings
    import pandas as pd
    import evalbook as eb

    warnings.simplefilter("always")

    async def swallow():
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                pass  # refuses to be cancelled

    # x >= 1 ends in the first step of its call, which the event loop runs before the 0.3 s
    # deadline's timer however late that fires: on a loaded machine too, only x = 0 times out
    async def stubborn(x):
        if x < 1:
            await swallow()
        return 1.0

    async def client(messages, tool):
        await swallow()

    df = pd.DataFrame({"x": range(4)})
    opts = dict(store=None, progress=False)
    begin = time.monotonic()
    which = sys.argv[1]
    if which == "task":
        run = eb.run(df, task=stubborn, concurrency=4, timeout=0.3, **opts)
    elif which == "scorer":
        run = eb.run(df, output_column="x", scorers=[stubborn], scorer_timeout=0.3, **opts)
    elif which == "judge timeout=":
        judge = eb.judge("q", "rate {output}", client=client, retries=0, timeout=0.3)
        run = eb.run(df, output_column="x", scorers=[judge], **opts)
    else:  # a judge under the run's scorer_timeout=
        judge = eb.judge("q", "rate {output}", client=client, retries=0)
        run = eb.run(df, output_column="x", scorers=[judge], scorer_timeout=0.3, **opts)
    print(json.dumps({
        "outcomes": run.cases["outcome"].astype(str).tolist(),
        "reasons": run.scores["reason"].dropna().tolist(),
        "messages": run.scores["message"].dropna().tolist(),
        "run_s": time.monotonic() - begin,
        "returned_at": time.time(),
    }))
    """
)


@pytest.mark.parametrize("where", ["task", "scorer", "judge timeout=", "judge scorer_timeout="])
def test_a_run_with_a_swallowing_coroutine_returns_at_the_deadline_and_the_process_exits(
    where: str, record_property: Callable[[str, Any], None]
) -> None:
    began = time.time()
    done = subprocess.run(
        [sys.executable, "-X", "dev", "-c", CHILD, where],
        capture_output=True,
        text=True,
        timeout=HARD_TIMEOUT,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    exit_s = time.time() - began
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    line = (
        f"{where}: run returned after {report['run_s']:.2f} s, process exited "
        f"{time.time() - report['returned_at']:.2f} s later ({exit_s:.1f} s in all)"
    )
    print(line)
    record_property("figures", line)
    # -X dev shows every asyncio complaint: a task destroyed pending, an unretrieved exception
    for complaint in ("destroyed but it is pending", "never retrieved", "never awaited"):
        assert complaint not in done.stderr, done.stderr[-3000:]
    if where == "task":
        assert report["outcomes"] == ["timed_out", "passed", "passed", "passed"]
    elif where == "scorer":
        assert report["reasons"] == ["scorer_timed_out"]
    elif where == "judge timeout=":
        assert report["reasons"] == ["judge_raised"] * 4
        assert report["messages"] == ["TimeoutError: no reply within timeout=0.3s"] * 4
    else:
        assert report["reasons"] == ["scorer_timed_out"] * 4


def test_ctrl_c_stops_a_run_whose_calls_swallow_their_cancellation(
    tmp_path: Path, record_property: Callable[[str, Any], None]
) -> None:
    script = textwrap.dedent(
        """
        import asyncio, os, signal, sys, time
        import pandas as pd
        import evalbook as eb

        async def stubborn(x):
            if x < 2:
                if x == 0:  # Ctrl-C while both calls are in flight, long before their deadline
                    asyncio.get_running_loop().call_later(0.3, os.kill, os.getpid(),
                                                          signal.SIGINT)
                while True:
                    try:
                        await asyncio.sleep(10)
                    except asyncio.CancelledError:
                        pass
            return 1.0

        begin = time.monotonic()
        try:
            eb.run(pd.DataFrame({"x": range(40)}), task=stubborn, concurrency=4, timeout=30,
                   store=sys.argv[1], progress=False)
        except KeyboardInterrupt:
            print(f"interrupted {time.monotonic() - begin:.2f}")
        print(eb.runs(sys.argv[1])["status"].tolist())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=HARD_TIMEOUT,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("interrupted ") and lines[1] == "['incomplete']"
    line = f"Ctrl-C with 2 swallowing calls in flight: run stopped {lines[0].split()[1]} s in"
    print(line)
    record_property("figures", line)


def test_on_dask_a_swallowing_coroutine_does_not_outlive_its_batch(
    record_property: Callable[[str, Any], None],
) -> None:
    pytest.importorskip("distributed")
    script = textwrap.dedent(
        """
        import asyncio, time
        import pandas as pd, evalbook as eb
        import distributed

        async def stubborn(x):
            if x < 1:
                while True:
                    try:
                        await asyncio.sleep(10)
                    except asyncio.CancelledError:
                        pass
            return x

        begin = time.monotonic()
        with (
            distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                     dashboard_address=None) as cluster,
            distributed.Client(cluster) as client,
        ):
            run = eb.run(pd.DataFrame({"x": range(4)}), task=stubborn, timeout=0.3,
                         executor=client, store=None, progress=False)
            print(run.cases["outcome"].astype(str).tolist())
        print(f"closed {time.monotonic() - begin:.2f}")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=HARD_TIMEOUT,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    # before: the worker's loop kept the abandoned coroutine and the cluster's close timed out
    assert done.returncode == 0, done.stderr[-3000:]
    assert "join timed out" not in done.stderr
    outcomes, closed = done.stdout.strip().splitlines()[-2:]
    assert outcomes == "['timed_out', 'passed', 'passed', 'passed']"
    line = f"dask, a swallowing task of 4: run and cluster closed after {closed.split()[1]} s"
    print(line)
    record_property("figures", line)
