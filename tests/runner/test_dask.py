"""Scale-out on Dask: the same tables as a local run, functions that travel, a cluster-wide
limit, a worker killed mid-run, resume through the cluster.

One `LocalCluster(n_workers=2, threads_per_worker=2, processes=True)` serves the module.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal

import evalbook as eb
from _runner_helpers import dask_client, run

# how samples are cut into batches: no public name, checked on its own (no cluster)
from evalbook._runner.dask._driver import MAX_BATCH, batch_size, epoch_major, partition

pytestmark = pytest.mark.slow  # a real Dask LocalCluster

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

TIMING = ["started_at", "duration_s"]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    settings = {
        # a dead worker's leases come back quickly, and a case that kills its worker twice
        # is given up on (KilledWorker) without many restarts
        "distributed.scheduler.locks.lease-timeout": "2s",
        "distributed.scheduler.locks.lease-validation-interval": "500ms",
        "distributed.scheduler.allowed-failures": 1,
    }
    with dask_client(settings=settings) as c:
        yield c


def assert_same_frame(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Equal values and dtypes; a categorical's categories may be listed in another order
    (they follow the order cases finished in, which differs between any two runs)."""
    assert [str(t) for t in a.dtypes] == [str(t) for t in b.dtypes]
    assert_frame_equal(a, b, check_categorical=False)


def assert_same_tables(local: eb.Run, remote: eb.Run) -> None:
    assert_same_frame(local.cases.drop(columns=TIMING), remote.cases.drop(columns=TIMING))
    assert_same_frame(local.scores, remote.scores)
    assert_same_frame(local.summary(), remote.summary())
    assert_same_frame(local.unscored(), remote.unscored())
    assert_same_frame(local.wide(), remote.wide())
    assert local.headline == remote.headline


def ended_per_case(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in (path / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "case.ended":
            counts[event["case_id"]] = counts.get(event["case_id"], 0) + 1
    return counts


# -- batches (no cluster) --------------------------------------------------------------------


@given(
    n=st.integers(0, 5000),
    slots=st.integers(0, 64),
    concurrency=st.integers(1, 2000),
)
def test_batches_cover_every_case_once_in_order(n: int, slots: int, concurrency: int) -> None:
    size = batch_size(n, slots, concurrency)
    assert 1 <= size <= MAX_BATCH
    positions = list(range(0, 3 * n, 3))
    batches = partition(positions, size)
    assert [p for b in batches for p in b] == positions
    assert all(1 <= len(b) <= size for b in batches)
    if n and slots:  # running batches can hold the limit, unless the batch cap is reached
        assert size * slots >= min(concurrency, n) or size == MAX_BATCH


@given(n=st.integers(1, 60), k=st.integers(1, 6), size=st.integers(1, 80))
def test_a_cases_epochs_go_to_different_batches(n: int, k: int, size: int) -> None:
    batches = partition(epoch_major(range(n * k), k), size)
    assert sorted(p for b in batches for p in b) == list(range(n * k))
    for b in batches:
        cases = [p // k for p in b]
        # a batch holds a case twice only when it holds more samples than there are cases
        assert len(set(cases)) == len(cases) or len(b) > n


def test_import_evalbook_does_not_import_dask() -> None:
    code = (
        "import sys, evalbook, evalbook._runner._engine; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- the same tables -------------------------------------------------------------------------


def test_tables_match_a_local_run(client: Any, caplog: pytest.LogCaptureFixture) -> None:
    ids = [f"c{i:02d}" for i in range(24)]
    df = pd.DataFrame({"id": ids, "n": range(24)})
    correct = eb.define_score("correct", label="Correct")
    style = eb.define_score("style", grader=eb.Grader(kind="model", id="judge", model="m"))
    noted = eb.define_score("noted")
    passed = eb.define_score(
        "pass", combine=eb.all_of(correct, eb.at_least(style, 0.5)), primary=True
    )

    async def task(n: int, ctx: Any) -> Any:  # async: runs on the worker's event loop
        if n == 1:
            raise ValueError("boom")
        if n == 2:
            assert n < 0, "n is not negative"
        if n == 3:
            ctx.fail("refused")
        if n in (4, 5) and ctx.attempt == 1:
            raise ConnectionError("flaky")  # passes on the second attempt
        if n == 6 or (n == 7 and ctx.attempt == 1):
            # timed out (always / once); every other call ends in its first step, which the
            # event loop runs before the deadline's timer: timeout= cuts nothing else when loaded
            await asyncio.Event().wait()
        ctx.record_score(noted, n / 24 if n != 8 else "high", rationale=f"r{n}")
        return {"n": n, "text": f"out-{n}"} if n % 2 else n * 10

    @eb.scorer(correct)
    def exact(output: Any, n: int) -> Any:  # sync: runs in the worker's threads
        if n == 9:
            raise KeyError("missing")
        if n == 10:
            return True  # invalid: bool is not a score
        if n == 11:
            return eb.Unscored("no_reference")
        return 1.0 if n % 3 else 0.0

    @eb.scorer(style)
    async def judge(output: Any, n: int) -> Any:
        if n == 12:
            raise eb.SkipScore("too short")
        return eb.Score(n / 24, rationale="fine", metadata={"raw": n})

    options: dict[str, Any] = {
        "task": task,
        "scorers": [exact, judge],
        "scores": [noted, passed],
        "attempts": 2,
        "timeout": 1.0,
        "concurrency": 5,
    }
    local = run(df, **options)
    caplog.clear()
    remote = run(df, executor=client, **options)
    warned = [r.getMessage() for r in caplog.records if "invalid score" in r.getMessage()]
    assert len(warned) == 1 and "'c10'" in warned[0]  # once per scorer, by the driver
    outcomes = remote.cases["outcome"].astype(str).tolist()
    assert {"passed", "failed", "errored", "timed_out"} <= set(outcomes)
    assert remote.cases["attempts"].tolist()[4:8] == [2, 2, 2, 2]
    assert "invalid_score" in set(remote.scores["reason"].dropna())
    assert_same_tables(local, remote)


def test_scoring_stored_outputs_on_the_cluster(client: Any) -> None:
    df = pd.DataFrame({"answer": ["a", "b", "c"], "expected": ["a", "x", "c"]})
    options: dict[str, Any] = {
        "output_column": "answer",
        "scorers": [lambda output, expected: float(output == expected)],
    }
    assert_same_tables(run(df, **options), run(df, executor=client, **options))


def test_epochs_on_the_cluster_match_a_local_run(client: Any, tmp_path: Path) -> None:
    """Dask ships samples: each (case, epoch) runs once, with its own epoch, and the tables,
    reduced values and log are those of a local run."""
    df = pd.DataFrame({"q": [f"q{i}" for i in range(7)]})

    def task(q: str, epoch: int, ctx: Any) -> str:
        assert ctx.epoch == epoch
        return f"{q}-{epoch}"

    def odd(output: str, epoch: int) -> float:
        return float(output.endswith(f"-{epoch}") and epoch % 2 == 1)

    passes = eb.define_score("odd", reducer=eb.pass_at(2))
    options: dict[str, Any] = {"task": task, "scorers": [eb.scorer(passes)(odd)], "epochs": 3}
    local = run(df, **options)
    remote = run(df, executor=client, store=tmp_path, **options)
    assert_same_tables(local, remote)
    assert_same_frame(local.reduced(), remote.reduced())
    assert remote.cases["output"].tolist() == [f"q{i}-{e}" for i in range(7) for e in (1, 2, 3)]
    assert remote.path is not None
    ended = [
        (e["case_id"], e["epoch"])
        for e in map(json.loads, (remote.path / "events.jsonl").read_text().splitlines())
        if e["event"] == "case.ended"
    ]
    assert sorted(ended) == sorted((str(i), e) for i in range(7) for e in (1, 2, 3))


def test_scorer_timeout_reaches_the_workers(client: Any) -> None:
    async def slow(output: str) -> float:
        await asyncio.Event().wait()  # nobody ever sets it: nothing has to beat the deadline
        return 1.0

    df = pd.DataFrame({"answer": ["a", "b"]})
    done = run(df, output_column="answer", scorers=[slow], scorer_timeout=0.2, executor=client)
    assert set(done.scores["reason"]) == {"scorer_timed_out"}


# -- what travels ----------------------------------------------------------------------------


def test_a_notebook_judge_travels(client: Any) -> None:
    quality = eb.define_score("quality", grader=eb.Grader(kind="model", id="judge", model="fake"))

    def fake_model(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        text = messages[-1]["content"]
        score = 989898 if "B" in text else (40 if "C" in text else 80)  # 989898: off the scale
        return {"score": score, "justification": f"scripted for {text[-1]}"}

    options: dict[str, Any] = {
        "task": lambda q: q.upper(),
        "scorers": [eb.judge(quality, "Rate this answer: {output}", client=fake_model)],
    }
    df = pd.DataFrame({"q": ["a", "b", "c"]})
    remote = run(df, executor=client, **options)
    assert remote.scores["reason"].tolist()[1] == "invalid_score"
    assert_same_tables(run(df, **options), remote)


def test_a_function_that_cannot_travel_fails_before_any_case_runs(
    client: Any, tmp_path: Path
) -> None:
    lock = threading.Lock()

    def guarded(q: str) -> str:
        with lock:
            return q

    df = pd.DataFrame({"q": ["a", "b"]})
    with pytest.raises(eb.ConfigurationError, match=r"the task .*guarded.* cannot be sent to"):
        run(df, task=guarded, executor=client, store=tmp_path)
    with pytest.raises(
        eb.ConfigurationError,
        match=r"scorer '.*lambda>' \(scores: locked\) cannot be sent.*_thread.lock",
    ):
        run(
            df,
            task=lambda q: q,
            scorers=[eb.scorer("locked")(lambda output: lock.locked() or 1.0)],
            executor=client,
            store=tmp_path,
        )
    assert list(tmp_path.iterdir()) == []  # no run was started


def test_executor_dask_starts_and_closes_a_local_cluster() -> None:
    before = distributed.client._get_global_client()
    df = pd.DataFrame({"q": ["a", "b", "c"]})
    r = run(df, task=lambda q: q * 2, executor="dask")
    assert r.cases["output"].tolist() == ["aa", "bb", "cc"]
    assert distributed.client._get_global_client() is before  # its client is gone again


def test_bad_executor_is_a_configuration_error() -> None:
    df = pd.DataFrame({"q": ["a"]})
    with pytest.raises(eb.ConfigurationError, match=r'dask.distributed.Client or "dask"'):
        run(df, task=lambda q: q, executor="spark")
    with pytest.raises(eb.ConfigurationError, match=r"not <object"):
        run(df, task=lambda q: q, executor=object())


# -- a cluster-wide limit --------------------------------------------------------------------


def test_concurrency_is_a_cluster_wide_limit(client: Any, tmp_path: Path) -> None:
    counter = tmp_path / "counter"
    counter.write_text("0 0\n")
    pids = tmp_path / "pids"

    def update(delta: int) -> None:
        with counter.open("r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            now, peak = map(int, f.read().split())
            now += delta
            f.seek(0)
            f.truncate()
            f.write(f"{now} {max(now, peak)}\n")

    def task(n: int) -> int:
        update(+1)
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        import time

        time.sleep(0.05)
        update(-1)
        return n

    r = run(pd.DataFrame({"n": range(24)}), task=task, executor=client, concurrency=3)
    assert r.cases["outcome"].astype(str).tolist() == ["passed"] * 24
    now, peak = map(int, counter.read_text().split())
    assert now == 0 and 1 <= peak <= 3
    assert len(set(pids.read_text().split())) == 2  # both workers ran cases


# -- a worker dies mid-run -------------------------------------------------------------------


@pytest.mark.filterwarnings("ignore:Closing semaphore")  # the dead worker's leases
def test_a_killed_worker_loses_no_case_and_records_none_twice(client: Any, tmp_path: Path) -> None:
    flag = tmp_path / "killed"
    df = pd.DataFrame({"n": range(40)})

    def task(n: int) -> int:
        if n >= 8 and not flag.exists():  # the first worker to get here dies
            flag.touch()
            os._exit(1)
        return n * 2

    def half(output: int) -> float:
        return output % 4 / 2

    remote = run(df, task=task, scorers=[half], executor=client, concurrency=4, store=tmp_path)
    assert flag.exists()
    assert remote.path is not None
    assert ended_per_case(remote.path) == {str(i): 1 for i in range(40)}
    assert_same_tables(run(df, task=task, scorers=[half]), remote)


def test_a_case_that_always_kills_its_worker_is_errored(client: Any) -> None:
    def task(n: int) -> int:
        if n == 3:
            os._exit(1)
        return n

    r = run(pd.DataFrame({"n": range(6)}), task=task, executor=client, concurrency=6)
    cases = r.cases.set_index("case_id")
    assert cases.loc["3", "outcome"] == "errored"
    assert cases.loc["3", "error_type"] == "KilledWorker"
    assert (cases.drop(index="3")["outcome"] == "passed").all()
    assert cases.drop(index="3")["output"].tolist() == [0, 1, 2, 4, 5]


@pytest.mark.timeout(60)  # batches left running would hold the driver for 10 minutes
def test_cancelling_the_run_cancels_its_batches(client: Any, tmp_path: Path) -> None:
    async def slow(n: int) -> int:
        await asyncio.sleep(0 if n < 4 else 600)
        return n

    async def interrupted() -> None:
        df = pd.DataFrame({"n": range(12)})
        coro = eb.arun(df, slow, store=tmp_path, progress=False, executor=client, concurrency=12)
        await asyncio.wait_for(coro, timeout=3.0)

    def busy(dask_worker: Any) -> int:  # batches still running on a worker, cancelled or not
        return sum(
            ts.state in ("executing", "cancelled") for ts in dask_worker.state.tasks.values()
        )

    with pytest.raises(TimeoutError):
        asyncio.run(interrupted())
    assert not any(client.processing().values())  # the scheduler let go of the batches
    deadline = time.monotonic() + 20  # and the workers stop them (they check every 0.5 s)
    while any(client.run(busy).values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(client.run(busy).values())
    (stored,) = eb.runs(tmp_path)["status"].tolist()
    assert stored == "incomplete"  # and the run can be resumed


# -- resume ----------------------------------------------------------------------------------


def test_resume_runs_only_the_missing_cases_on_the_cluster(client: Any, tmp_path: Path) -> None:
    df = pd.DataFrame({"n": range(12)})
    calls = tmp_path / "calls"

    def interrupted(n: int) -> int:
        if n == 5:
            raise KeyboardInterrupt  # the driver is interrupted: cases 0-4 are stored
        return n + 1

    def task(n: int) -> int:
        with calls.open("a") as f:
            f.write(f"{n}\n")
        return n + 1

    def odd(output: int) -> float:
        return float(output % 2)

    store = tmp_path / "runs"
    with pytest.raises(KeyboardInterrupt):
        run(df, task=interrupted, scorers=[odd], concurrency=1, store=store, name="r")
    (folder,) = store.iterdir()
    resumed = run(df, task=task, scorers=[odd], executor=client, resume=folder, store=store)
    assert sorted(map(int, calls.read_text().split())) == list(range(5, 12))
    assert ended_per_case(folder) == {str(i): 1 for i in range(12)}
    assert_same_tables(run(df, task=task, scorers=[odd], name="r"), resumed)
    assert_same_tables(resumed, eb.load_run(folder))


# -- the benchmark keeps working (a tiny smoke run; no time is asserted) ----------------------


def test_dask_benchmark_smoke() -> None:
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_dask.py"
    out = subprocess.run(
        [sys.executable, str(script), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    rows = [line for line in out.stdout.splitlines() if line.startswith("| ") and "×" in line]
    assert len(rows) == 3, out.stdout


def test_transcripts_come_back_from_the_workers(client: Any, tmp_path: Path) -> None:
    from _runner_helpers import stepping

    df = pd.DataFrame(
        {"id": [f"c{i}" for i in range(12)], "question": [f"q{i}" for i in range(12)]}
    )
    local = run(df, task=stepping)
    remote = run(df, task=stepping, executor=client, store=tmp_path)
    assert len(remote.steps()) == 36
    assert_same_frame(remote.steps(), local.steps())
    assert remote.path is not None
    assert_same_frame(eb.load_run(remote.path).tool_calls(), local.tool_calls())


def test_scorers_get_the_transcript_on_the_workers(client: Any) -> None:
    from _runner_helpers import stepping

    def steps(transcript: Any) -> float:
        return 1 / len(transcript.messages)

    df = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(8)],
            "question": [f"q{i}" for i in range(8)],
            "calls": [["f"] if i % 2 else ["g"] for i in range(8)],
        }
    )
    scorers = [steps, eb.tool_calls_match("tools", "calls")]
    local = run(df, task=stepping, scorers=scorers)
    remote = run(df, task=stepping, scorers=scorers, executor=client)
    assert remote.scores["value"].tolist() == [1 / 3, 0.0, 1 / 3, 1.0] * 4
    assert_same_frame(remote.scores, local.scores)


def test_origins_are_classified_on_the_workers(client: Any) -> None:
    """`eb.EnvironmentFailure` and `environment_errors=` on a cluster, as locally."""

    def task(n: int) -> int:
        if n == 1:
            raise eb.EnvironmentFailure("sandbox down")
        if n == 2:
            raise BrokenPipeError("tool server gone")  # listed below
        if n == 3:
            raise KeyError("a bug")
        return n

    df = pd.DataFrame({"n": range(6)})
    options: dict[str, Any] = {
        "task": task,
        "scorers": [lambda output: 1.0],
        "environment_errors": (BrokenPipeError,),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # 2 of 6 failed outside the model
        local = run(df, **options)
        remote = run(df, executor=client, **options)
    assert remote.cases["origin"].tolist()[1:4] == ["environment", "environment", "task"]
    assert_same_tables(local, remote)
