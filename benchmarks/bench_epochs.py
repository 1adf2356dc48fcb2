"""Epochs: per-sample harness time with epochs=K against per-case time with epochs=1, and
`run.reduced()` + `summary()` of 100k cases × 5 epochs × 3 scores (time and peak RSS).

Run: python benchmarks/bench_epochs.py [--n 2000] [--epochs 5] [--rounds 5] [--cases 100000]
The harness ratio alternates rounds (epochs=1 over n·K cases, then epochs=K over n cases: the
same number of samples, the reference work of bench_core.py, `store=None`) and reports the
median of the per-round ratios. The reduction runs in a fresh subprocess so that its peak RSS
is its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
os.environ.setdefault("EVALBOOK_PROGRESS", "0")

from _work import SCORERS, echo, make_data


def _harness(n: int, k: int, rounds: int, concurrency: int) -> dict[str, float]:
    import evalbook as eb

    flat, repeated = make_data(n * k), make_data(n)
    ratios: list[float] = []
    per_one: list[float] = []
    per_k: list[float] = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        eb.run(
            flat, echo, scorers=list(SCORERS), concurrency=concurrency, store=None, progress=False
        ).summary()
        t1 = time.perf_counter()
        eb.run(
            repeated,
            echo,
            scorers=list(SCORERS),
            epochs=k,
            concurrency=concurrency,
            store=None,
            progress=False,
        ).summary()
        t2 = time.perf_counter()
        per_one.append((t1 - t0) / (n * k) * 1e6)
        per_k.append((t2 - t1) / (n * k) * 1e6)
        ratios.append((t2 - t1) / (t1 - t0))
    return {
        "us_per_case_epochs1": statistics.median(per_one),
        "us_per_sample_epochsK": statistics.median(per_k),
        "ratio": statistics.median(ratios),
    }


def _reduce_child(cases: int, k: int) -> dict[str, float]:
    import numpy as np
    import pandas as pd

    import evalbook as eb

    rng = np.random.default_rng(1)
    n = cases
    # one sample per row (each case's K epochs), outputs drawn per sample
    df = pd.DataFrame({"output": rng.random(n)})
    defs = [
        eb.define_score("mean_score"),
        eb.define_score("median_score", reducer="median"),
        eb.define_score("pass_score", reducer=eb.pass_at(2)),
    ]
    scorers = [
        eb.scorer(defs[0])(lambda output, epoch: (output * epoch) % 1.0),
        eb.scorer(defs[1])(lambda output, epoch: (output + epoch / 7) % 1.0),
        eb.scorer(defs[2])(lambda output, epoch: 1.0 if (output * epoch) % 1.0 > 0.5 else 0.0),
    ]
    run = eb.run(df, output_column="output", scorers=scorers, epochs=k, store=None, progress=False)
    _ = run.scores  # the long table exists in real use before anyone asks for a summary
    t0 = time.perf_counter()
    reduced = run.reduced()
    summary = run.summary()
    elapsed = time.perf_counter() - t0
    assert len(reduced) == n * 3 and len(summary) == 3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"reduce_summary_s": elapsed, "peak_mb": peak, "records": n * k * 3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=2000, help="cases of the harness rounds")
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument("--cases", type=int, default=100_000, help="cases of the reduction")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_reduce_child(args.cases, args.epochs)))
        return
    h = _harness(args.n, args.epochs, args.rounds, args.concurrency)
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            "--cases",
            str(args.cases),
            "--epochs",
            str(args.epochs),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    r = json.loads(out.stdout.strip().splitlines()[-1])
    k = args.epochs
    print(f"## Epochs (K = {k})\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(
        f"| harness time per sample, epochs={k} vs per case, epochs=1 ({args.n:,} cases × {k}; "
        f"{h['us_per_sample_epochsK']:.0f} vs {h['us_per_case_epochs1']:.0f} µs) "
        f"| {h['ratio']:.2f}× | ≤ 1.2× |"
    )
    print(
        f"| run.reduced() + summary(), {args.cases:,} cases × {k} epochs × 3 scores "
        f"({r['records']:,} records) | {r['reduce_summary_s']:.2f} s | ≤ 2 s |"
    )
    print(f"| peak RSS of that run | {r['peak_mb']:.0f} MB | ≤ 2,000 MB |")


if __name__ == "__main__":
    main()
