"""Cost of the run store: a 10,000-case run with `store=` a folder vs `store=None`.

Runs both variants alternately (after a warm-up), several rounds, and prints the median
wall time of each and their ratio. The issue's bar: store on ≤ 1.3× store off.

    python benchmarks/bench_store.py [--cases 10000] [--rounds 5] [--sleep-ms 0]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import pandas as pd

import evalbook as eb


def _data(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "question": [f"question {i}" for i in range(n)],
            "expected": [f"QUESTION {i}" for i in range(n)],
        }
    )


SLEEP_S = 0.0


def _task(question: str) -> str:
    if SLEEP_S:
        time.sleep(SLEEP_S)  # a stand-in for a model call
    return question.upper()


@eb.scorer
def exact(output: str, expected: str) -> float:
    return float(output == expected)


@eb.scorer
def short(output: str) -> float:
    return 1.0 if len(output) < 12 else 0.5


def _once(data: pd.DataFrame, store: Path | None) -> tuple[float, float]:
    """Wall time and CPU time (of the whole process) of one run."""
    w0, c0 = time.perf_counter(), time.process_time()
    eb.run(data, task=_task, scorers=[exact, short], store=store, progress=False)
    return time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--sleep-ms", type=float, default=0.0, help="per-case task latency (default 0: worst case)"
    )
    args = parser.parse_args()
    global SLEEP_S
    SLEEP_S = args.sleep_ms / 1000
    os.environ["EVALBOOK_PROGRESS"] = "0"
    data = _data(args.cases)
    root = Path(tempfile.mkdtemp(prefix="evalbook-bench-"))
    try:
        _once(data, None)
        _once(data, root)
        off: list[tuple[float, float]] = []
        on: list[tuple[float, float]] = []
        for _ in range(args.rounds):
            off.append(_once(data, None))
            on.append(_once(data, root))
        size = sum(f.stat().st_size for f in next(root.iterdir()).iterdir())
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"cases: {args.cases}, task latency: {args.sleep_ms} ms, rounds: {args.rounds} "
        "(alternating, after one warm-up each)"
    )
    for k, what in enumerate(("wall", "cpu")):
        t_off = [t[k] for t in off]
        t_on = [t[k] for t in on]
        m_off, m_on = statistics.median(t_off), statistics.median(t_on)
        print(f"{what:4} store=None   median {m_off * 1000:7.1f} ms  ({_ms(t_off)})")
        print(f"{what:4} store=folder median {m_on * 1000:7.1f} ms  ({_ms(t_on)})")
        print(f"{what:4} ratio (on / off, medians): {m_on / m_off:.2f}x")
    print(f"one run folder: {size / 1e6:.2f} MB")


def _ms(times: list[float]) -> str:
    return ", ".join(f"{t * 1000:.0f}" for t in times)


if __name__ == "__main__":
    main()
