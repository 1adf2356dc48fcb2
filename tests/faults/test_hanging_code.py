"""Hanging user code: abandoned calls never lower concurrency or block exit (docs/concepts.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from evalbook._runner import _calls  # a worker pool that never takes a call up: no public way

pytestmark = pytest.mark.slow  # hanging code, most of it in child processes


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """An event the hanging calls wait on; set at the end so their threads finish."""
    event = threading.Event()
    yield event
    event.set()


def test_four_hanging_cases_at_concurrency_4_do_not_starve_the_others(
    release: threading.Event,
) -> None:
    df = pd.DataFrame({"x": list(range(12))})

    def task(x: int) -> int:
        if x < 4:  # the first four cases take every slot of concurrency=4
            release.wait()  # set only after the run: they never return in time
        return x

    # The other eight must finish inside the deadline, behind 8 blocked threads: a generous
    # one, as a thread hop may be slow on a loaded machine.
    run = eb.run(
        df,
        task=task,
        scorers=[lambda output: 1.0],
        concurrency=4,
        timeout=5,
        attempts=2,
        store=None,
        progress=False,
    )
    cases = run.cases.set_index("case_id")
    hung = [str(i) for i in range(4)]
    assert list(cases.loc[hung, "outcome"]) == ["timed_out"] * 4
    assert list(cases.loc[hung, "attempts"]) == [2] * 4  # retries get threads of their own too
    rest = cases.drop(index=hung)
    assert list(rest["outcome"]) == ["passed"] * 8
    assert all(_timed_out_message(m, 5) for m in cases.loc[hung, "error_message"])


def _timed_out_message(message: str, timeout: float) -> bool:
    """Whether `message` is one of the two honest words for a task cut at `timeout`.

    A retry's call waits for a fresh worker thread (the old ones are still blocked); on a
    loaded machine that thread may not get to run before the deadline, and then the case
    says so rather than that the task took too long (src/evalbook/_runner/_engine.py).
    """
    return message in (
        f"the task took longer than {timeout}s",
        f"the task never started within {timeout}s (no worker thread was free)",
    )


def test_a_case_whose_call_never_started_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # A pool that never takes the job up: the case did not run, so it did not "take longer".
    monkeypatch.setattr(_calls._POOL, "put", lambda job: None)
    run = eb.run(
        pd.DataFrame({"x": [1]}), task=lambda x: x, timeout=0.2, store=None, progress=False
    )
    message = run.cases["error_message"].iloc[0]
    assert run.cases["outcome"].iloc[0] == "timed_out"
    assert "never started within 0.2s" in message and "took longer" not in message


def test_a_process_with_abandoned_calls_exits() -> None:
    script = textwrap.dedent(
        """
        import time, pandas as pd, evalbook as eb

        def task(x):
            time.sleep(600)

        def scorer(output):
            time.sleep(600)
            return 1.0

        df = pd.DataFrame({"x": range(4)})
        run = eb.run(df, task=task, concurrency=4, timeout=0.3, store=None, progress=False)
        print("task", list(run.cases["outcome"]))
        run = eb.run(df, output_column="x", scorers=[scorer], scorer_timeout=0.3,
                     store=None, progress=False)
        print("scorer", sorted(set(run.scores["reason"])))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "task ['timed_out', 'timed_out', 'timed_out', 'timed_out']" in done.stdout
    assert "scorer ['scorer_timed_out']" in done.stdout


def test_a_process_with_an_abandoned_sync_judge_call_exits() -> None:
    script = textwrap.dedent(
        """
        import time, pandas as pd, evalbook as eb

        def client(messages, tool):
            time.sleep(600)

        df = pd.DataFrame({"x": ["a"]})
        # the judge's own timeout=0.3 must act before the run's scorer_timeout=: a generous
        # 30 s (the vote still has steps to take once its call is cut); without it, a short one
        for kw, scorer_timeout in (({"timeout": 0.3}, 30), ({}, 0.3)):
            judge = eb.judge("q", "rate {output}", client=client, retries=0, **kw)
            run = eb.run(df, output_column="x", scorers=[judge], scorer_timeout=scorer_timeout,
                         store=None, progress=False)
            print(sorted(set(run.scores["reason"])))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['judge_raised']", "['scorer_timed_out']"]


# -- `while True` in a subprocess, killed after a hard timeout so a regression cannot hang CI --

# Seconds for a whole child, its start and imports included (slow on a loaded machine); every
# deadline below is at most 5 s, and a run stuck on a call never returns at all.
HARD_TIMEOUT = 120
CHILD_HEAD = textwrap.dedent(
    """
    import asyncio, json, sys, time
    import pandas as pd
    import evalbook as eb

    def spin():
        while True:  # hangs for ever, holding a worker thread (and the GIL, by turns)
            pass

    def report(run, begin):
        print(json.dumps({
            "outcomes": run.cases["outcome"].astype(str).value_counts().to_dict(),
            "attempts": run.cases["attempts"].tolist(),
            "messages": run.cases["error_message"].dropna().tolist(),
            "reasons": run.scores["reason"].dropna().value_counts().to_dict(),
            "scored": int((run.scores["status"] == "scored").sum()),
            "run_s": time.monotonic() - begin,
            "returned_at": time.time(),
        }))

    begin = time.monotonic()
    data = pd.DataFrame({"x": range(20)})
    """
)


def _child(body: str) -> tuple[dict[str, Any], float]:
    """Run CHILD_HEAD + body in a fresh interpreter; its report and seconds from return to exit."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD_HEAD + textwrap.dedent(body)],
        capture_output=True,
        text=True,
        timeout=HARD_TIMEOUT,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    exited_at = time.time()
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report, exited_at - report["returned_at"]


def _figures(
    record_property: Callable[[str, Any], None], what: str, report: dict[str, Any], exit_s: float
) -> None:
    line = (
        f"{what}: run returned after {report['run_s']:.1f} s, process exited "
        f"{exit_s:.1f} s later; outcomes {report['outcomes']}, scored {report['scored']}, "
        f"reasons {report['reasons']}"
    )
    print(line)
    record_property("figures", line)
    record_property("run_s", round(report["run_s"], 2))
    record_property("exit_after_return_s", round(exit_s, 2))


@pytest.mark.parametrize("attempts", [1, 3])
def test_four_while_true_sync_tasks_time_out_the_rest_complete_and_the_process_exits(
    attempts: int, record_property: Callable[[str, Any], None]
) -> None:
    report, exit_s = _child(
        f"""
        def task(x):
            if x < 4:  # the first four cases take every slot of concurrency=4, for ever
                spin()
            return x

        # the 16 others must finish inside the deadline while up to 12 threads spin for the
        # GIL: a generous one, for a loaded machine
        run = eb.run(data, task=task, scorers=[lambda output: 1.0], concurrency=4, timeout=5,
                     attempts={attempts}, store=None, progress=False)
        report(run, begin)
        """
    )
    _figures(record_property, f"4 while-True tasks of 20, attempts={attempts}", report, exit_s)
    outcomes = {k: v for k, v in report["outcomes"].items() if v}
    assert outcomes == {"passed": 16, "timed_out": 4}
    assert report["attempts"][:4] == [attempts] * 4  # each retry got a thread of its own
    assert report["scored"] == 16
    assert len(report["messages"]) == 4
    assert all(_timed_out_message(m, 5) for m in report["messages"])


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_scorer_that_never_returns_is_scorer_timed_out_and_the_process_exits(
    kind: str, record_property: Callable[[str, Any], None]
) -> None:
    report, exit_s = _child(
        """
        def sync_scorer(output):
            if output < 4:
                spin()
            return 1.0

        async def async_scorer(output):
            if output < 4:
                await asyncio.Event().wait()  # nobody ever sets it
            return 1.0

        scorer = sync_scorer if sys.argv[-1] == "sync" else async_scorer
        run = eb.run(data, output_column="x", scorers=[scorer], concurrency=4,
                     scorer_timeout=SCORER_TIMEOUT, store=None, progress=False)
        report(run, begin)
        """.replace("sys.argv[-1]", repr(kind))
        # The 16 others must be scored inside the deadline. A sync scorer's thread hop beside
        # 4 spinning threads may be slow on a loaded machine: a generous deadline. An async
        # scorer that returns at once ends in the first step of its call, which the event loop
        # runs before the deadline's timer however late that fires: a short one will do.
        .replace("SCORER_TIMEOUT", "5" if kind == "sync" else "1")
    )
    _figures(record_property, f"{kind} scorer hanging on 4 cases of 20", report, exit_s)
    assert report["scored"] == 16
    assert report["reasons"] == {"scorer_timed_out": 4}
    assert {k: v for k, v in report["outcomes"].items() if v} == {"passed": 20}


@pytest.mark.parametrize("where", ["task", "scorer"])
def test_async_code_that_swallows_its_cancellation_is_abandoned_at_the_deadline(
    where: str,
) -> None:
    report, _ = _child(
        """
        # x >= 1 ends in the first step of its call, which the event loop runs before the
        # deadline's timer however late that fires: the short deadline cuts only x = 0
        async def stubborn(x):
            if x < 1:
                while True:
                    try:
                        await asyncio.sleep(10)
                    except asyncio.CancelledError:
                        pass  # refuses to be cancelled
            return 1.0

        small = data.iloc[:4]
        if WHERE == "task":
            run = eb.run(small, task=stubborn, concurrency=4, timeout=0.5, store=None,
                         progress=False)
        else:
            run = eb.run(small, output_column="x", scorers=[stubborn], concurrency=4,
                         scorer_timeout=0.5, store=None, progress=False)
        report(run, begin)
        """.replace("WHERE", repr(where))
    )
    if where == "task":
        assert report["outcomes"]["timed_out"] == 1
    else:
        assert report["reasons"] == {"scorer_timed_out": 1}
