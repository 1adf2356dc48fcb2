"""Harness overhead and latency-bound efficiency of evalbook against bare asyncio.

Run: python benchmarks/bench_core.py [--n 10000] [--repeats 5] [--quick]
Prints ratios (evalbook / bare) — absolute times on shared machines are noise.
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

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("EVALBOOK_PROGRESS", "0")

from _work import bare, evalbook_run, make_data, timed


def overhead(n: int, repeats: int, concurrency: int = 100) -> dict[str, float]:
    """Per-case time of evalbook and bare asyncio on the same work, alternating runs."""
    df = make_data(n)
    evalbook_run(make_data(50), concurrency)  # warm imports and caches
    asyncio.run(bare(make_data(50), concurrency))
    eb_times, bare_times, ratios = [], [], []
    for _ in range(repeats):
        gc.collect()
        t_bare, m_bare = timed(lambda: asyncio.run(bare(df, concurrency)))
        gc.collect()
        t_eb, m_eb = timed(evalbook_run, df, concurrency)
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
    print("| N | evalbook µs/case | bare asyncio µs/case | ratio (median of pairs) |")
    print("|---|---|---|---|")
    for n in args.n:
        r = overhead(n, args.repeats)
        print(f"| {n:,} | {r['evalbook_us']:.1f} | {r['bare_us']:.1f} | {r['ratio']:.2f}× |")
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
