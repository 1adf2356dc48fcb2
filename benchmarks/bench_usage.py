"""Usage recording: per-case time with `ctx.record_usage` each case against without it.

Run: python benchmarks/bench_usage.py [--n 2000] [--rounds 7] [--sleep-ms 1] [--concurrency 100]
The reference work of bench_core.py (the three reference scorers, `store=None`) with a 1 ms
task (`asyncio.sleep`). Both tasks take `ctx`; one also records a usage dict each case (with
`prices=`, so the cost is computed too). Rounds alternate the two and the median of the
per-round ratios is reported; the target is <= 1.05 (5 % added).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("EVALBOOK_PROGRESS", "0")

from _work import SCORERS, make_data

PRICES = {"m": (0.15, 0.60)}
USAGE = {"prompt_tokens": 120, "completion_tokens": 30}


def tasks(sleep_s: float) -> tuple[Any, Any]:
    """The task without and with usage recording (the same sleep, the same `ctx`)."""

    async def plain(question: str, ctx: Any) -> str:
        await asyncio.sleep(sleep_s)
        return question

    async def metered(question: str, ctx: Any) -> str:
        await asyncio.sleep(sleep_s)
        ctx.record_usage(USAGE, model="m")
        return question

    return plain, metered


def measure(n: int, rounds: int, sleep_s: float, concurrency: int) -> dict[str, float]:
    import evalbook as eb

    df = make_data(n)
    plain, metered = tasks(sleep_s)

    def once(task: Any) -> float:
        t0 = time.perf_counter()
        r = eb.run(
            df,
            task,
            scorers=list(SCORERS),
            concurrency=concurrency,
            store=None,
            progress=False,
            prices=PRICES,
        )
        r.summary()
        return (time.perf_counter() - t0) / n

    once(plain), once(metered)  # warm imports and caches
    without, with_usage, ratios = [], [], []
    for i in range(rounds):
        order = (plain, metered) if i % 2 == 0 else (metered, plain)
        times = {task: once(task) for task in order}
        without.append(times[plain] * 1e6)
        with_usage.append(times[metered] * 1e6)
        ratios.append(times[metered] / times[plain])
    return {
        "us_per_case_without": statistics.median(without),
        "us_per_case_with": statistics.median(with_usage),
        "ratio": statistics.median(ratios),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sleep-ms", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=100)
    args = parser.parse_args()
    m = measure(args.n, args.rounds, args.sleep_ms / 1000, args.concurrency)
    print(
        f"## Usage recording ({args.sleep_ms:g} ms task, {args.n} cases, "
        f"concurrency {args.concurrency}, median of {args.rounds} rounds)\n"
    )
    print("| cases | without record_usage | with record_usage | with / without |")
    print("|---|---|---|---|")
    print(
        f"| {args.n} | {m['us_per_case_without']:.1f} µs/case | "
        f"{m['us_per_case_with']:.1f} µs/case | {m['ratio']:.3f}× (target ≤ 1.05×) |"
    )


if __name__ == "__main__":
    main()
