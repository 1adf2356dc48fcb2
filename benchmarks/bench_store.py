"""Cost of the run store: the reference work with `store=` a folder vs `store=None`.

The reference work is the one of `bench_core.py` (`_work.py`: an echo task, three sync
scorers, then the long table and the per-score means), 10,000 cases. Both variants run
alternately after a warm-up; each round pairs one run of each, at the given size and at a
fifth of it. Printed: the median wall and CPU times, the ratio of the medians, the median of
the per-round ratios, the store's cost split into a per-case and a per-run part, and the
bytes the store wrote per (case, score) record. The bars: store on ≤ 1.5× store off with the
echo task, ≤ 1.1× with a 1 ms task (`--sleep-ms 1`). The log is written in pure Python.

    python benchmarks/bench_store.py [--cases 10000] [--rounds 15] [--sleep-ms 0]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from _work import SCORERS, echo, make_data

import evalbook as eb


def _sleeping(seconds: float) -> Any:
    async def task(question: str) -> str:
        await asyncio.sleep(seconds)  # a stand-in for a model call
        return question

    return task


def _once(data: Any, task: Any, store: Path | None) -> tuple[float, float]:
    """Wall and CPU time (the whole process) of one run, its long table and its means."""
    gc.collect()  # start each run from the same heap: no collection of the last run's garbage
    w0, c0 = time.perf_counter(), time.process_time()
    run = eb.run(data, task=task, scorers=list(SCORERS), store=store, progress=False)
    _ = run.scores
    run.summary()
    return time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument(
        "--sleep-ms", type=float, default=0.0, help="per-case task latency (default 0: worst case)"
    )
    args = parser.parse_args()
    os.environ["EVALBOOK_PROGRESS"] = "0"
    task = _sleeping(args.sleep_ms / 1000) if args.sleep_ms else echo
    data = make_data(args.cases)
    root = Path(tempfile.mkdtemp(prefix="evalbook-bench-"))
    try:
        _once(data, task, None)
        _once(data, task, root)
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        small = make_data(args.cases // 5)
        off_small: list[float] = []
        on_small: list[float] = []
        for _ in range(args.rounds):
            off.append(_once(data, task, None))
            on.append(_once(data, task, root))
            off_small.append(_once(small, task, None)[0])
            on_small.append(_once(small, task, root)[0])
        folder = max(root.iterdir(), key=lambda f: (f / "events.jsonl").stat().st_size)
        sizes = {f.name: f.stat().st_size for f in folder.iterdir()}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"cases: {args.cases}, scores: {len(SCORERS)}, task latency: {args.sleep_ms} ms, "
        f"rounds: {args.rounds} (alternating, after one warm-up each)"
    )
    for k, what in enumerate(("wall", "cpu")):
        t_off = [t[k] for t in off]
        t_on = [t[k] for t in on]
        m_off, m_on = statistics.median(t_off), statistics.median(t_on)
        paired = statistics.median(b[k] / a[k] for a, b in zip(off, on, strict=True))
        print(f"{what:4} store=None   median {m_off * 1000:7.1f} ms  ({_ms(t_off)})")
        print(f"{what:4} store=folder median {m_on * 1000:7.1f} ms  ({_ms(t_on)})")
        print(f"{what:4} ratio on/off: {m_on / m_off:.2f}x (medians), {paired:.2f}x (per round)")
    _costs(args.cases, [t[0] for t in off], [t[0] for t in on], off_small, on_small)
    records = args.cases * len(SCORERS)
    total = sum(sizes.values())
    print(
        f"one run folder: {total / 1e6:.2f} MB, {total / records:.0f} bytes per record "
        f"(events.jsonl {sizes.get('events.jsonl', 0) / records:.0f}, "
        f"scores.parquet {sizes.get('scores.parquet', 0) / records:.1f})"
    )


def _costs(
    n: int, off: list[float], on: list[float], off_small: list[float], on_small: list[float]
) -> None:
    """Split each variant's time into a per-run and a per-case part (n and n/5 cases).

    Medians of the per-round figures, so each pair of runs shares the machine's state.
    """
    k = n - n // 5
    per_case = statistics.median((a - b) / k for a, b in zip(off, off_small, strict=True))
    extra = [b - a for a, b in zip(off, on, strict=True)]
    extra_small = [b - a for a, b in zip(off_small, on_small, strict=True)]
    store_case = statistics.median((a - b) / k for a, b in zip(extra, extra_small, strict=True))
    store_run = statistics.median(e - store_case * n for e in extra)
    print(
        f"wall costs: store=None {per_case * 1e6:.1f} µs per case; the store adds "
        f"{store_case * 1e6:.1f} µs per case and {store_run * 1000:.0f} ms per run "
        f"(from {n} and {n // 5} cases)"
    )


def _ms(times: list[float]) -> str:
    return ", ".join(f"{t * 1000:.0f}" for t in times)


if __name__ == "__main__":
    main()
