"""Throughput of `eb.run(executor=<dask Client>)` against the local runner, on this machine.

Run: python benchmarks/bench_dask.py [--workers 2] [--threads 2] [--repeats 3] [--quick]

Three workloads, each run locally and on a `LocalCluster(processes=True)` (the cluster is started
once, outside the timings, and warmed up):

- latency: an async task that waits 50 ms (a model API call), concurrency 64;
- cpu: a sync task that burns ~5 ms of pure-Python CPU (a heavy scorer or a local model),
  concurrency 8 — the local runner shares one GIL, the cluster has one per worker process;
- overhead: an instant task with three cheap scorers, concurrency 64 (per-case cost).

Prints cases per second (median of `--repeats` alternating runs) and dask / local.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("EVALBOOK_PROGRESS", "0")

from _work import SCORERS, make_data

import evalbook as eb

DELAY = 0.05
BURN_S = 0.005


async def wait(question: str) -> str:
    await asyncio.sleep(DELAY)
    return question


def burn(question: str) -> str:
    end = time.thread_time() + BURN_S
    x = 0
    while time.thread_time() < end:
        x += 1
    return question


async def instant(question: str) -> str:
    return question


WORKLOADS: dict[str, tuple[Callable[..., Any], int, tuple[Any, ...]]] = {
    "latency (async, 50 ms)": (wait, 64, ()),
    "cpu (sync, 5 ms CPU)": (burn, 8, ()),
    "overhead (instant + 3 scorers)": (instant, 64, SCORERS),
}


def timed(n: int, task: Any, concurrency: int, scorers: Any, executor: Any) -> float:
    df = make_data(n)
    t0 = time.perf_counter()
    r = eb.run(
        df,
        task=task,
        scorers=list(scorers),
        concurrency=concurrency,
        store=None,
        progress=False,
        executor=executor,
    )
    elapsed = time.perf_counter() - t0
    assert (r.cases["outcome"] == "passed").all()
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="threads per worker")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="small N, one repeat (smoke run)")
    args = ap.parse_args()
    sizes = {"latency": 2000, "cpu": 400, "overhead": 10000}
    if args.quick:
        sizes = {"latency": 128, "cpu": 40, "overhead": 500}
        args.repeats = 1

    from distributed import Client, LocalCluster

    t0 = time.perf_counter()
    with (
        LocalCluster(
            n_workers=args.workers,
            threads_per_worker=args.threads,
            processes=True,
            dashboard_address=None,
        ) as cluster,
        Client(cluster) as client,
    ):
        start_s = time.perf_counter() - t0
        timed(50, instant, 8, SCORERS, client)  # warm the workers (imports, first batch)
        timed(50, instant, 8, SCORERS, None)
        print(
            f"# evalbook on Dask: {args.workers} workers × {args.threads} threads "
            f"(LocalCluster, processes) vs the local runner"
        )
        print(
            f"# {platform.system()} {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}; cluster start {start_s:.1f} s (not timed)"
        )
        print("| workload | N | concurrency | local cases/s | dask cases/s | dask / local |")
        print("|---|---|---|---|---|---|")
        for label, (task, concurrency, scorers) in WORKLOADS.items():
            n = sizes[label.split()[0]]
            local: list[float] = []
            remote: list[float] = []
            for _ in range(args.repeats):
                local.append(timed(n, task, concurrency, scorers, None))
                remote.append(timed(n, task, concurrency, scorers, client))
            lr = n / statistics.median(local)
            dr = n / statistics.median(remote)
            print(f"| {label} | {n:,} | {concurrency} | {lr:,.0f} | {dr:,.0f} | {dr / lr:.2f}× |")


if __name__ == "__main__":
    main()
