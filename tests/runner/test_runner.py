"""The runner: binding, outcomes, attempts, timeouts, concurrency, configuration errors.

The scores a run records (through `ctx`, scorers, several scores, derived scores) are in
test_runner_scores.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _runner_helpers import DF, exact, run, upper


def test_basic_run() -> None:
    r = run(DF, task=upper, scorers=[exact])
    assert r.name == "upper"
    assert list(r.cases["output"]) == ["A", "B", "C"]
    assert list(r.scores["value"]) == [1.0, 1.0, 0.0]
    assert r.headline.text == "exact 67% · completed 100%"


def test_parameters_bound_by_name() -> None:
    seen: list[tuple[Any, ...]] = []

    def task(row: dict[str, Any], case_id: str, question: str) -> str:
        seen.append((row, case_id, question))
        return question

    def scorer(output: str, **kwargs: Any) -> float:
        assert set(kwargs) == {
            "id",
            "question",
            "expected",
            "row",
            "case_id",
            "epoch",
            "transcript",
        }
        return 1.0

    r = run(
        pd.DataFrame({"id": [7], "question": ["q"], "expected": ["e"]}), task=task, scorers=[scorer]
    )
    assert seen == [({"id": 7, "question": "q", "expected": "e"}, "7", "q")]
    assert r.scores["status"].tolist() == ["scored"]


def test_case_ids_from_index_or_id_column() -> None:
    df = pd.DataFrame({"question": ["a", "b"]}, index=[10, 20])
    assert run(df, task=upper).cases["case_id"].tolist() == ["10", "20"]


def test_duplicate_case_ids_are_rejected_before_any_case_runs() -> None:
    calls = []
    df = pd.DataFrame({"id": ["x", "x"], "question": ["a", "b"]})
    with pytest.raises(eb.ConfigurationError, match=r"duplicate case ids.*'x'"):
        run(df, task=lambda question: calls.append(question))
    assert calls == []


def test_signature_error_before_any_case_runs() -> None:
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    def needs_missing(output: str, reference: str) -> float:
        return 1.0

    with pytest.raises(eb.ScorerSignatureError) as info:
        run(DF, task=task, scorers=[needs_missing])
    msg = str(info.value)
    assert "needs_missing" in msg and "'reference'" in msg and "expected" in msg and "output" in msg
    assert calls == []


def test_task_signature_error() -> None:
    with pytest.raises(eb.ScorerSignatureError, match="'answer'"):
        run(DF, task=lambda answer: answer)


def test_defaults_and_kwargs_are_fine() -> None:
    r = run(
        DF,
        task=lambda question, missing="d": question + missing,
        scorers=[lambda output, other=1: 1.0],
    )
    assert r.cases["output"].tolist() == ["ad", "bd", "cd"]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (
            {"scores": [eb.define_score("p", primary=True), eb.define_score("q", primary=True)]},
            "at most one primary",
        ),
        ({"scores": [eb.define_score("p", combine=eb.all_of("nope"))]}, "'nope'"),
        ({"scorers": [exact, eb.scorer("exact")(lambda output: 1.0)]}, "bound to two scorers"),
        ({"scores": [eb.define_score("exact", label="other")]}, "two different score definitions"),
        ({"concurrency": 0}, "concurrency"),
        ({"attempts": 0}, "attempts"),
        ({"timeout": -1}, "timeout"),
        ({"output_column": "question"}, "either task"),
        ({"scores": ["unknown"]}, "unknown"),
    ],
)
def test_configuration_errors(kwargs: dict[str, Any], match: str) -> None:
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    kwargs.setdefault("scorers", [exact])
    with pytest.raises(eb.ConfigurationError, match=match):
        run(DF, task=task, **kwargs)
    assert calls == []


def test_derived_cycle_is_rejected() -> None:
    a = eb.define_score("a", combine=eb.all_of("b"))
    b = eb.define_score("b", combine=eb.all_of("a"))
    with pytest.raises(eb.ConfigurationError, match="cycle"):
        run(DF, task=upper, scores=[a, b])


def test_output_column_scores_existing_outputs() -> None:
    df = DF.assign(answer=["A", "b", "x"])
    r = run(
        df, output_column="answer", scorers=[lambda answer, expected: float(answer == expected)]
    )
    assert r.scores["value"].tolist() == [1.0, 0.0, 1.0]
    assert r.cases["attempts"].tolist() == [0, 0, 0]


def test_outcomes_and_scorers_never_called_on_errored_cases() -> None:
    called: list[str] = []

    def task(question: str) -> str:
        if question == "b":
            raise KeyError("missing")
        if question == "c":
            assert question == "z", "not z"
        return question

    def spy(output: str) -> float:
        called.append(output)
        return 1.0

    r = run(DF, task=task, scorers=[spy])
    assert r.cases["outcome"].tolist() == ["passed", "errored", "failed"]
    assert r.cases["error_type"].tolist()[1:] == ["KeyError", "AssertionError"]
    assert called == ["a"]
    assert r.scores["reason"].tolist()[1:] == ["case_errored", "case_failed"]


def test_attempts_retry_errored_cases_and_count_the_last() -> None:
    tries: dict[str, int] = {}

    def flaky(question: str) -> str:
        tries[question] = tries.get(question, 0) + 1
        if question == "a" and tries[question] < 2:
            raise ConnectionError("flaky")
        if question == "b":
            raise ConnectionError("always")
        if question == "c":
            raise AssertionError("failed cases are not retried")
        return question

    r = run(DF, task=flaky, scorers=[lambda output: 1.0], attempts=3)
    assert r.cases["outcome"].tolist() == ["passed", "errored", "failed"]
    assert r.cases["attempts"].tolist() == [2, 3, 1]
    assert tries == {"a": 2, "b": 3, "c": 1}


@pytest.mark.parametrize("is_async", [False, True])
def test_timeouts(is_async: bool) -> None:
    release = threading.Event()  # never set while a run is on: case b hangs for good
    if is_async:

        async def task(question: str) -> str:
            if question == "b":
                await asyncio.Event().wait()  # nobody ever sets it
            return question
    else:

        def task(question: str) -> str:  # type: ignore[misc]
            if question == "b":
                release.wait()
            return question

    try:
        # a and c must finish inside the deadline, so it is a generous one (a loaded machine
        # may take a while for a thread hop); only b, which never returns, waits it out
        r = run(DF, task=task, timeout=5)
        assert r.cases["outcome"].tolist() == ["passed", "timed_out", "passed"]
        assert r.cases["attempts"].tolist() == [1, 1, 1]
        # a timed-out case is retried, then stays timed out: with only b in the run, nothing
        # has to beat the deadline, so a short one does
        retried = run(DF.iloc[[1]], task=task, timeout=0.2, attempts=2)
    finally:
        release.set()  # the abandoned threads finish
    assert retried.cases["outcome"].tolist() == ["timed_out"]
    assert retried.cases["attempts"].tolist() == [2]


def test_a_users_own_timeout_error_is_an_error_not_a_timeout() -> None:
    def task(question: str) -> str:
        raise TimeoutError("socket")

    r = run(DF, task=task, timeout=5)
    assert set(r.cases["outcome"]) == {"errored"}


@pytest.mark.parametrize("is_async", [False, True])
def test_concurrency_holds_for_sync_and_async_tasks(is_async: bool) -> None:
    lock = threading.Lock()
    active = peak = 0
    limit = 0
    full = threading.Event()  # set once `limit` tasks are active at once

    def enter() -> None:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
            if active == limit:
                full.set()

    def leave() -> None:
        nonlocal active
        with lock:
            active -= 1

    # Each task holds its slot until `limit` tasks are active together (at most 30 s, which
    # only a run that never reaches the limit waits out), then a little longer: the peak is
    # reached for sure, however loaded the machine, and a run that lets more than `limit`
    # run at once shows it (the extra tasks start while the first ones still wait).
    if is_async:

        async def task(x: int) -> int:
            enter()
            give_up = time.monotonic() + 30
            while not full.is_set() and time.monotonic() < give_up:
                await asyncio.sleep(0.001)
            await asyncio.sleep(0.02)
            leave()
            return x
    else:

        def task(x: int) -> int:  # type: ignore[misc]
            enter()
            full.wait(30)
            time.sleep(0.02)
            leave()
            return x

    df = pd.DataFrame({"x": range(40)})
    limit = 5
    run(df, task=task, concurrency=5)
    assert full.is_set() and peak == 5  # reached, never passed
    peak, limit = 0, 1
    full.clear()
    run(df, task=task, concurrency=1)
    assert full.is_set() and peak == 1


def test_blocking_sync_tasks_run_in_threads() -> None:
    df = pd.DataFrame({"x": range(8)})
    names: set[str] = set()
    lock = threading.Lock()
    active = 0
    together = threading.Event()  # set once two tasks run at the same time

    def task(x: int) -> int:
        nonlocal active
        names.add(threading.current_thread().name)
        with lock:
            active += 1
            if active == 2:
                together.set()
        # blocks until a second task runs beside it: only possible in two threads (a task on
        # the event loop would block it, and wait out the 30 s in vain)
        if not together.wait(30):
            together.set()  # the others need not wait too: the test fails on `names` anyway
        with lock:
            active -= 1
        return x

    run(df, task=task, concurrency=8)
    assert all(n.startswith("evalbook") for n in names) and len(names) > 1


def test_cases_start_in_input_order_with_concurrency_one() -> None:
    order: list[int] = []
    run(pd.DataFrame({"x": [3, 1, 2]}), task=lambda x: order.append(x), concurrency=1)
    assert order == [3, 1, 2]


def test_async_task_and_async_scorer() -> None:
    async def task(question: str) -> str:
        await asyncio.sleep(0)
        return question.upper()

    s = eb.define_score("s")

    @eb.scorer(s)
    async def judge(output: str, expected: str) -> float:
        await asyncio.sleep(0)
        return float(output == expected)

    r = run(DF, task=task, scorers=[judge, lambda output: 1.0])
    assert r.scores["value"].tolist() == [1.0, 1.0, 1.0, 1.0, 0.0, 1.0]


def test_run_inside_a_running_event_loop() -> None:
    async def main() -> eb.Run:
        return run(DF, task=upper, scorers=[exact])

    r = asyncio.run(main())
    assert r.headline.value == pytest.approx(2 / 3)


def test_arun() -> None:
    r = asyncio.run(eb.arun(DF, task=upper, scorers=[exact], store=None, progress=False))
    assert r.scores["value"].tolist() == [1.0, 1.0, 0.0]


def test_data_may_be_records() -> None:
    r = run([{"question": "a", "expected": "A"}], task=upper, scorers=[exact])
    assert r.headline.value == 1.0


def test_ctrl_c_inside_a_running_loop_cancels_the_run(tmp_path: Any) -> None:
    import signal

    calls: list[int] = []
    began = threading.Event()  # the run is under way: its first case has started
    loops: list[asyncio.AbstractEventLoop] = []  # the loop the run's cases ran on

    async def slow(x: int) -> int:
        if not calls:
            loops.append(asyncio.get_running_loop())
            began.set()
        calls.append(x)
        await asyncio.sleep(0.05)
        return x

    def interrupt() -> None:
        # once the run is under way (not after a fixed time: a loaded machine may take
        # longer than that to start it), at most 60 s
        began.wait(60)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    async def notebook_cell() -> None:
        threading.Thread(target=interrupt, daemon=True).start()
        eb.run(
            pd.DataFrame({"x": range(400)}),
            task=slow,
            concurrency=1,
            store=tmp_path,
            progress=False,
        )

    # Like a Jupyter kernel: a running loop, and Python's own SIGINT handler (asyncio.run would
    # install one that only cancels its main task).
    loop = asyncio.new_event_loop()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        loop.run_until_complete(notebook_cell())
    loop.close()
    assert time.monotonic() - t0 < 10  # far less than the 20 s the 400 cases would take
    # The run stopped, and nothing goes on in the background: its loop has been closed by
    # the time the interrupt is re-raised (a watch for more calls could miss a slow one).
    assert len(loops) == 1 and loops[0].is_closed()
    assert len(calls) < 400
    listed = eb.runs(tmp_path)
    assert listed["status"].tolist() == ["incomplete"]


def test_a_run_is_not_rendered_on_the_way_out_of_asyncio_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the class that renders a run's repr: the runner's result is an instance of it before it
    # becomes the public eb.Run (which inherits the repr)
    owner = next(c for c in eb.Run.__mro__ if "__repr__" in vars(c))
    calls: list[int] = []
    real = owner.__repr__

    def counting(self: eb.Run) -> str:
        calls.append(1)
        return real(self)

    monkeypatch.setattr(owner, "__repr__", counting)
    run = eb.run(pd.DataFrame({"q": ["a"]}), task=lambda q: q, store=None, progress=False)
    assert calls == []  # asyncio.run reprs its task (and so its result) twice on Python 3.11
    assert "<Run" in repr(run) and calls == [1]


def test_duration_covers_the_attempts_not_the_scoring() -> None:
    scoring: list[float] = []  # when the scorer began and ended (Unix seconds)

    def slow_scorer(output: str) -> float:
        scoring.append(time.time())
        time.sleep(0.5)
        scoring.append(time.time())
        return 1.0

    run = eb.run(
        pd.DataFrame({"q": ["a"]}),
        task=lambda q: q,
        scorers=[slow_scorer],
        store=None,
        progress=False,
    )
    assert run.scores["value"].tolist() == [1.0]
    case = run.cases.iloc[0]
    ended = case["started_at"].timestamp() + case["duration_s"]
    began_scoring, ended_scoring = scoring
    # The attempt ends before scoring begins, however long either takes on a loaded machine:
    # counted in, the 0.5 s of scoring would put the end past the scorer's own end. The 0.1 s
    # only allows for the two clocks (Unix time, and the monotonic one durations come from).
    assert case["duration_s"] >= 0
    assert ended <= began_scoring + 0.1 < ended_scoring
