"""Harness overhead and latency-bound efficiency of evalbook against bare asyncio.

Run: python benchmarks/bench_core.py [--n 10000] [--repeats 5] [--quick]
Prints ratios (evalbook / bare) — absolute times on shared machines are noise. The run store
is off (`store=None`): its cost is bench_store.py's. The latency-bound table is the one that
matches real use (a model call takes 100 ms to 10 s); the echo tables show the harness alone.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("EVALBOOK_PROGRESS", "0")

from _work import bare, echo, echo_sync, echo_to_thread, evalbook_run, make_data, timed


def overhead(n: int, repeats: int, sync: bool = False, concurrency: int = 100) -> dict[str, float]:
    """Per-case time of evalbook and bare asyncio on the same work, alternating runs.

    The async echo task against `await task()`; with `sync`, the sync echo task (evalbook
    runs it in a worker thread) against `await asyncio.to_thread(task)`.
    """
    df = make_data(n)
    task, baseline = (echo_sync, echo_to_thread) if sync else (echo, echo)
    evalbook_run(make_data(50), concurrency, task)  # warm imports and caches
    asyncio.run(bare(make_data(50), concurrency, baseline))
    eb_times, bare_times, ratios = [], [], []
    for _ in range(repeats):
        gc.collect()
        t_bare, m_bare = timed(lambda: asyncio.run(bare(df, concurrency, baseline)))
        gc.collect()
        t_eb, m_eb = timed(evalbook_run, df, concurrency, task)
        assert all(abs(m_bare[k] - m_eb[k]) < 1e-12 for k in m_bare), (m_bare, m_eb)
        bare_times.append(t_bare)
        eb_times.append(t_eb)
        ratios.append(t_eb / t_bare)  # each pair ran back to back, under the same load
    eb_us = statistics.median(eb_times) / n * 1e6
    bare_us = statistics.median(bare_times) / n * 1e6
    return {"n": n, "evalbook_us": eb_us, "bare_us": bare_us, "ratio": statistics.median(ratios)}


def latency(n: int, concurrency: int, delay: float, sync: bool) -> dict[str, float]:
    """Efficiency = ideal time (n / concurrency × delay) / measured time."""
    if sync:

        def task(question: str) -> str:
            time.sleep(delay)
            return question

        t_eb, _ = timed(evalbook_run, make_data(n), concurrency, task)
        pool = ThreadPoolExecutor(max_workers=concurrency)

        async def in_thread(question: str) -> str:
            return await asyncio.get_running_loop().run_in_executor(pool, task, question)

        t_bare, _ = timed(lambda: asyncio.run(bare(make_data(n), concurrency, in_thread)))
        pool.shutdown()
    else:

        async def atask(question: str) -> str:
            await asyncio.sleep(delay)
            return question

        t_eb, _ = timed(evalbook_run, make_data(n), concurrency, atask)
        t_bare, _ = timed(lambda: asyncio.run(bare(make_data(n), concurrency, atask)))
    ideal = n / concurrency * delay
    return {"n": n, "evalbook": ideal / t_eb, "bare": ideal / t_bare}


def thread_hop(n: int, concurrency: int = 100) -> dict[str, float]:
    """Per-call cost of running a trivial sync function in a worker thread from the loop."""
    from evalbook._runner._calls import Threads

    def f(i: int) -> int:
        return i

    async def calls(submit: Any) -> None:
        it = iter(range(n))

        async def lane() -> None:
            for i in it:
                await submit(i)

        await asyncio.gather(*(lane() for _ in range(concurrency)))

    async def ours() -> None:
        threads = Threads()
        await calls(lambda i: threads.submit(f, i))

    async def executor() -> None:
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            await calls(lambda i: loop.run_in_executor(pool, f, i))

    asyncio.run(ours())  # the threads exist before the timed run (they are the process's)
    t_ours, _ = timed(lambda: asyncio.run(ours()))
    t_exec, _ = timed(lambda: asyncio.run(executor()))
    return {"evalbook_us": t_ours / n * 1e6, "executor_us": t_exec / n * 1e6}


def scorer_hop(n: int, repeats: int, concurrency: int = 100) -> dict[str, float]:
    """What the one thread hop per case for its sync scorers costs in a run.

    The same run (async echo, three sync scorers) with the hop, and with the scorers called
    inline on the event loop instead (`Threads.submit` replaced for the measurement only).
    """
    from evalbook._runner._calls import Threads

    real = Threads.submit

    def inline(self: Threads, fn: Any, *args: Any, **kwargs: Any) -> Any:
        future = self.inbox.loop.create_future()
        future.set_result(fn(*args, **kwargs))
        return future

    df = make_data(n)
    evalbook_run(make_data(50), concurrency)
    hop_times, inline_times = [], []
    try:
        for _ in range(repeats):
            gc.collect()
            Threads.submit = real  # type: ignore[method-assign]
            hop_times.append(timed(evalbook_run, df, concurrency)[0])
            gc.collect()
            Threads.submit = inline  # type: ignore[method-assign]
            inline_times.append(timed(evalbook_run, df, concurrency)[0])
    finally:
        Threads.submit = real  # type: ignore[method-assign]
    hop_us = statistics.median(hop_times) / n * 1e6
    inline_us = statistics.median(inline_times) / n * 1e6
    # each pair ran back to back, under the same load: the median of the pairs' differences
    cost = statistics.median(h - i for h, i in zip(hop_times, inline_times, strict=True))
    return {"hop_us": hop_us, "inline_us": inline_us, "cost_us": cost / n * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, nargs="*", default=[1_000, 10_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency-n", type=int, nargs="*", default=[2_000])
    parser.add_argument("--quick", action="store_true", help="tiny smoke run (N=200)")
    args = parser.parse_args()
    if args.quick:
        args.n, args.repeats, args.latency_n = [200], 1, [200]
    print(f"# {platform.platform()} · Python {platform.python_version()} · {os.cpu_count()} cores")
    print("\n## Harness overhead (echo task, 3 sync scorers, long table, means)\n")
    print("| task | N | evalbook µs/case | bare asyncio µs/case | ratio (median of pairs) |")
    print("|---|---|---|---|---|")
    for sync in (False, True):
        kind = "sync (bare: asyncio.to_thread)" if sync else "async"
        for n in args.n:
            r = overhead(n, args.repeats, sync)
            print(
                f"| {kind} | {n:,} | {r['evalbook_us']:.1f} | {r['bare_us']:.1f} "
                f"| {r['ratio']:.2f}× |"
            )
    print("\n## A thread hop (a sync call from the event loop), concurrency 100\n")
    hop = thread_hop(20_000)
    print("| evalbook's worker threads µs/call | loop.run_in_executor µs/call |")
    print("|---|---|")
    print(f"| {hop['evalbook_us']:.1f} | {hop['executor_us']:.1f} |")
    n = max(args.n)
    r = scorer_hop(n, args.repeats)
    print(f"\n## The sync scorers' thread hop in a run (async echo, 3 sync scorers, N={n:,})\n")
    print(
        "| one thread hop per case µs/case | inline on the loop µs/case | cost (median of pairs) |"
    )
    print("|---|---|---|")
    print(f"| {r['hop_us']:.1f} | {r['inline_us']:.1f} | {r['cost_us']:+.1f} µs/case |")
    print("\n## Latency-bound efficiency (50 ms per task, concurrency 100)\n")
    print("| task | N | evalbook | bare asyncio |")
    print("|---|---|---|---|")
    for n in args.latency_n:
        for sync in (False, True):
            r = latency(n, 100, 0.05, sync)
            kind = "sync (time.sleep, threads)" if sync else "async (asyncio.sleep)"
            print(f"| {kind} | {n:,} | {r['evalbook']:.1%} | {r['bare']:.1%} |")


if __name__ == "__main__":
    main()
