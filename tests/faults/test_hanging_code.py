"""Hanging user code: abandoned calls never lower concurrency or block exit (docs/concepts.md)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pandas as pd
import pytest

import evalbook as eb
from evalbook._runner import _calls


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
            release.wait(30)
        return x

    run = eb.run(
        df,
        task=task,
        scorers=[lambda output: 1.0],
        concurrency=4,
        timeout=1,
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
    assert all("took longer than 1" in m for m in cases.loc[hung, "error_message"])


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
        for kw in ({"timeout": 0.3}, {}):
            judge = eb.judge("q", "rate {output}", client=client, retries=0, **kw)
            run = eb.run(df, output_column="x", scorers=[judge], scorer_timeout=0.6,
                         store=None, progress=False)
            print(sorted(set(run.scores["reason"])))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["['judge_raised']", "['scorer_timed_out']"]
