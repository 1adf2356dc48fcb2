"""Usage, budgets and rate limits on Dask: usage travels with the records, `max_cost=` stops
new batches (and samples inside running ones), a wrapped client's rate limit holds over the
whole cluster, and its shared state is gone when the run ends.

One `LocalCluster(n_workers=2, threads_per_worker=2, processes=True)` serves the module.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _openai_server import Server
from _runner_helpers import dask_client, run

# the Dask driver and limiter driven directly: a batch's engine, ledger and cluster limiter
from evalbook._model._results import PASSED, Finished, Results
from evalbook._model._tally import Tally
from evalbook._runner._engine import Engine
from evalbook._runner._limits import limiter_for
from evalbook._runner._options import RunOptions
from evalbook._runner._plan import make_plan
from evalbook._runner.dask._driver import DaskRunner

pytestmark = pytest.mark.slow  # a real Dask LocalCluster

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

PRICES = {"m": (1.0, 2.0)}  # USD per 1M tokens in, out


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_client() as c:
        yield c


def ended_per_case(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for line in (path / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "case.ended":
            counts[event["case_id"]] = counts.get(event["case_id"], 0) + 1
    return counts


def shared_names(client: Any) -> list[str]:
    """The evalbook variables and locks/semaphores the scheduler still holds (a variable is
    deleted by a message the scheduler handles soon after the run returns)."""

    def names(dask_scheduler: Any) -> list[str]:
        ext = dask_scheduler.extensions
        held = [*ext["variables"].variables, *ext["semaphores"].max_leases]
        return sorted(n for n in held if str(n).startswith("evalbook-"))

    deadline = time.monotonic() + 5
    while (left := list(client.run_on_scheduler(names))) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


# -- usage travels with the records ---------------------------------------------------------


def metered(n: int, ctx: Any) -> int:
    ctx.record_usage({"prompt_tokens": 100 * n, "completion_tokens": 10 * n}, model="m")
    if n % 3 == 0:
        ctx.record_usage(input_tokens=5, output_tokens=1, cost=0.5)  # priced by the caller
    if n % 4 == 0:
        ctx.record_usage(input_tokens=7, output_tokens=2, model="unpriced")
    if n == 5:
        ctx.record_usage(input_tokens=-1, model="m")  # invalid: unknown, never a crash
    return n


def test_usage_from_workers_matches_a_local_run(client: Any, caplog: Any) -> None:
    df = pd.DataFrame({"n": range(12)})
    options: dict[str, Any] = {"task": metered, "epochs": 2, "prices": PRICES}
    with pytest.warns(RuntimeWarning, match=r"no price for 'unpriced' \(6 calls\)"):
        local = run(df, **options)
    caplog.clear()
    with pytest.warns(RuntimeWarning, match=r"no price for 'unpriced' \(6 calls\)"):
        remote = run(df, executor=client, concurrency=4, **options)
    usage = remote.usage()
    assert len(usage) == 24  # every sample recorded, once
    assert_frame_equal(local.usage(), usage, check_categorical=False)
    columns = ["case_id", "epoch", "input_tokens", "output_tokens", "cost"]
    assert_frame_equal(local.cases[columns], remote.cases[columns], check_categorical=False)
    latency = ["latency_p50_s", "latency_p95_s"]  # measured where each sample ran
    assert_frame_equal(
        local.usage_summary().drop(columns=latency), remote.usage_summary().drop(columns=latency)
    )
    # the costs were computed on the workers with the run's prices: 100 n tokens in at $1/1M
    row = usage.set_index(["case_id", "epoch"]).loc[("2", 1)]
    assert row["cost"] == pytest.approx((200 * 1.0 + 20 * 2.0) / 1e6)
    assert usage["invalid"].notna().sum() == 2  # case 5, both epochs
    assert "invalid usage recorded for case '5'" in caplog.text  # warned on the driver


def test_a_batch_applied_twice_counts_its_cost_once(client: Any) -> None:
    df = pd.DataFrame({"n": range(3)})
    plan = make_plan(df, metered, [], [], None, None)
    runner = DaskRunner(client, plan)
    options = RunOptions(store=None, progress=False, max_cost=10.0)
    results = Results(plan.case_ids, 0)
    engine = Engine(plan, options, None, results=results)  # type: ignore[arg-type]  # no sample runs here
    usage = {"task": Tally(calls=1, cost=1.5)}
    rows = [(p, Finished(PASSED, 1, p, None, None, 0.0, 0.0, [], usage)) for p in range(3)]
    done = [False] * 3
    runner.apply(engine, rows, done)
    runner.apply(engine, rows, done)  # a batch Dask ran again after its worker died
    assert engine.ledger.spent == pytest.approx(4.5)
    assert done == [True] * 3


# -- max_cost= ------------------------------------------------------------------------------


def test_max_cost_stops_new_batches_and_resume_finishes(client: Any, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    n = 200

    def task(n: int, ctx: Any) -> int:
        with calls.open("a") as f:
            f.write(f"{n}\n")
        ctx.record_usage(cost=1.0)
        return n

    df = pd.DataFrame({"n": range(n)})
    store = tmp_path / "runs"
    with pytest.warns(RuntimeWarning, match=r"reached its budget max_cost=\$3 ") as caught:
        stopped = run(df, task=task, executor=client, concurrency=1, max_cost=3, store=store)
    ran = len(calls.read_text().split())
    outcomes = stopped.cases["outcome"]
    assert outcomes.notna().sum() == ran  # every sample that ran is kept, none twice
    message = str(caught[0].message)
    assert f"{n - ran} sample(s) did not start" in message
    print(f"max_cost=3 at $1 a sample, concurrency=1: {ran} of {n} samples ran")
    # one sample at a time over the cluster, each reading the run's live total before it
    # starts: exactly the three that reach the budget (as a local run), though the cases
    # went out in 13-case batches, four at a time
    assert ran == 3
    assert eb.runs(store)["status"].tolist() == ["incomplete"]
    assert shared_names(client) == []

    (folder,) = store.iterdir()
    # the same budget again: the kept $3 count, so no sample starts
    with pytest.warns(RuntimeWarning, match=rf"{n - 3} sample\(s\) did not start"):
        run(df, task=task, executor=client, concurrency=4, resume=folder, max_cost=3, store=store)
    assert len(calls.read_text().split()) == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no budget warning now
        resumed = run(df, task=task, executor=client, concurrency=4, resume=folder, store=store)
    assert (resumed.cases["outcome"] == "passed").all()
    assert sorted(map(int, calls.read_text().split())) == list(range(n))  # none ran twice
    assert ended_per_case(folder) == {str(i): 1 for i in range(n)}
    assert resumed.usage_summary()["cost"].item() == n


def test_past_the_budget_only_the_samples_in_flight_finish(client: Any, tmp_path: Path) -> None:
    calls = tmp_path / "calls"

    def task(n: int, ctx: Any) -> int:
        with calls.open("a") as f:
            f.write(f"{n}\n")
        ctx.record_usage(cost=1.0)
        return n

    df = pd.DataFrame({"n": range(100)})
    with pytest.warns(RuntimeWarning, match=r"reached its budget"):
        run(df, task=task, executor=client, concurrency=4, max_cost=3)
    ran = len(calls.read_text().split())
    print(f"max_cost=3 at $1 a sample, concurrency=4: {ran} of 100 samples ran")
    # the last sample to start saw at most $2 recorded, with at most 3 others in flight
    assert 3 <= ran <= 3 + 4 - 1


def test_a_budget_reached_before_the_run_starts_submits_nothing(client: Any) -> None:
    def task(n: int, ctx: Any) -> int:
        ctx.record_usage(cost=1.0)
        return n

    with pytest.warns(RuntimeWarning, match=r"5 sample\(s\) did not start"):
        r = run(pd.DataFrame({"n": range(5)}), task=task, executor=client, max_cost=0)
    assert r.cases["outcome"].isna().all()


# -- a cluster-wide rate limit ---------------------------------------------------------------


def limited(n: int, rpm: float | None, tpm: float | None, tokens: float) -> tuple[float, int]:
    """A fake client call: wait as the wrapped client's limiter says, then 'send' it."""
    wait = limiter_for("fake-client", rpm, tpm).acquire(tokens)
    time.sleep(wait)
    return time.time(), os.getpid()


async def limited_async(
    n: int, rpm: float | None, tpm: float | None, tokens: float
) -> tuple[float, int]:
    """The same from an async client: `acquire` is called on the worker's event loop."""
    wait = limiter_for("fake-client", rpm, tpm).acquire(tokens)
    await asyncio.sleep(wait)
    return time.time(), os.getpid()


def measured_rate(r: eb.Run, burst: float) -> float:
    """Calls a second after the burst: (n - burst) / (last - first send)."""
    sent = sorted(t for t, _ in r.cases["output"])
    return (len(sent) - burst) / (sent[-1] - sent[0])


@pytest.mark.parametrize(
    ("task", "rpm", "tpm", "tokens"),
    [(limited, 600.0, None, 0.0), (limited_async, None, 60_000.0, 100.0)],
    ids=["requests_per_minute-sync", "tokens_per_minute-async"],
)
def test_the_rate_limit_holds_over_the_cluster(
    client: Any,
    record_property: Any,
    task: Any,
    rpm: float | None,
    tpm: float | None,
    tokens: float,
) -> None:
    n, per_s = 30, 10.0  # 600 requests, or 60,000 tokens of 100 a call, per minute
    df = pd.DataFrame({"n": range(n), "rpm": [rpm] * n, "tpm": [tpm] * n, "tokens": tokens})
    r = run(df, task=task, executor=client, concurrency=8)
    assert (r.cases["outcome"] == "passed").all()
    assert len({pid for _, pid in r.cases["output"]}) == 2  # both workers made calls
    rate = measured_rate(r, burst=per_s)  # one second's worth goes at once
    figure = f"{n} calls over 2 workers: {rate:.2f}/s after a burst of {per_s:g}, limit {per_s:g}/s"
    print(figure)
    record_property("rate_limit", figure)
    assert rate <= per_s * 1.1
    assert rate >= per_s * 0.5  # the limit is a limit, not a stall
    assert shared_names(client) == []  # the run's buckets are gone


def test_settled_tokens_count_against_the_cluster_wide_limit(
    client: Any, record_property: Any
) -> None:
    def task(n: int) -> tuple[float, int]:
        limiter = limiter_for("fake-client", None, 240_000.0)  # 4,000 tokens a second
        time.sleep(limiter.acquire(100.0))  # estimated 100 tokens ...
        limiter.settle(400.0)  # ... the reply says 500
        return time.time(), os.getpid()

    r = run(pd.DataFrame({"n": range(24)}), task=task, executor=client, concurrency=1)
    rate = measured_rate(r, burst=4_000 / 500)
    figure = f"24 calls of 500 tokens (100 estimated): {rate:.2f}/s, limit 8/s"
    print(figure)
    record_property("settled_rate", figure)
    assert 8 * 0.5 <= rate <= 8 * 1.1  # booked at 100 a call, it would be 40/s


@pytest.fixture
def local_server() -> Iterator[Server]:
    """The loopback OpenAI-compatible server, in this process (the workers call it too)."""
    s = Server()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()


def test_a_wrapped_openai_client_is_limited_over_the_cluster(
    client: Any, local_server: Server, record_property: Any
) -> None:
    server = local_server
    openai = pytest.importorskip("openai")
    client.run(os.environ.update, {"NO_PROXY": "127.0.0.1,localhost"})  # as the fixture here
    sdk = openai.OpenAI(base_url=server.url, api_key="test", max_retries=0)
    wrapped = eb.wrap_openai(sdk, requests_per_minute=600)  # 10 a second, a burst of 10

    def task(q: str) -> tuple[str, int]:
        reply = wrapped.chat.completions.create(
            model="m", messages=[{"role": "user", "content": q}]
        )
        return reply.choices[0].message.content, os.getpid()

    n = 30
    r = run(
        pd.DataFrame({"q": [f"question {i}" for i in range(n)]}),
        task=task,
        executor=client,
        concurrency=8,
    )
    assert (r.cases["outcome"] == "passed").all()
    assert len({pid for _, pid in r.cases["output"]}) == 2  # both workers called the server
    arrivals = server.arrivals()
    rate = (n - 10) / (arrivals[-1] - arrivals[0])
    figure = (
        f"{server.count()} requests to the local server from 2 workers: {rate:.2f}/s, limit 10/s"
    )
    print(figure)
    record_property("wrap_openai_rate", figure)
    assert server.count() == n
    assert rate <= 10 * 1.1
    totals = r.usage_summary()
    assert totals["calls"].item() == n
    assert totals["input_tokens"].item() == server.input_tokens  # the server's own count
    assert totals["output_tokens"].item() == server.output_tokens


def test_without_a_cluster_the_same_calls_are_limited_locally() -> None:
    n = 12
    df = pd.DataFrame({"n": range(n), "rpm": 300.0, "tpm": None, "tokens": 0.0})
    r = run(df, task=limited, concurrency=4)
    assert measured_rate(r, burst=5) <= 5 * 1.1


@pytest.mark.filterwarnings("ignore:Port .* is already in use")  # its dashboard
def test_an_in_process_cluster_shares_budget_and_limits_in_the_process() -> None:
    # workers on the scheduler's own event loop: a blocking scheduler call would stall it
    def task(n: int, ctx: Any) -> int:
        ctx.record_usage(cost=1.0)
        return n

    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as inproc,
    ):
        with pytest.warns(RuntimeWarning, match=r"37 sample\(s\) did not start"):
            r = run(
                pd.DataFrame({"n": range(40)}),
                task=task,
                executor=inproc,
                concurrency=1,
                max_cost=3,
            )
        assert r.cases["outcome"].notna().sum() == 3
        df = pd.DataFrame({"n": range(30), "rpm": 600.0, "tpm": None, "tokens": 0.0})
        limited_run = run(df, task=limited_async, executor=inproc, concurrency=8)
        rate = measured_rate(limited_run, burst=10)
        print(f"in-process cluster: 30 async calls at {rate:.2f}/s, limit 10/s")
        assert rate <= 10 * 1.1


def test_a_limiter_that_cannot_ask_the_scheduler_limits_in_its_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from evalbook._runner.dask._limits import ClusterLimiter

    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        limiter = ClusterLimiter("tcp://127.0.0.1:9", "run", "client", 120.0, None)
        waits = [limiter.acquire(0.0) for _ in range(4)]  # 2 a second, a burst of 2
    assert waits == pytest.approx([0.0, 0.0, 0.5, 1.0], abs=0.1)
    assert caplog.text.count("could not be asked") == 1  # warned once, then local
