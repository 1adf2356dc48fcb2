"""Slices in a comparison: `eb.compare(a, b, by="topic")` of two 100k × 10 runs, 20 slices.

Two in-memory runs of 100k cases × 10 scores (half 0/1, half graded; 1M records each) over
the same data, whose `topic` column has `--slices` values. Timed, alternating, `--repeats`
times, with the runs' tables built (they are built once per run, whatever is compared):

- `compare(a, b, by="topic")`: every (slice, score) row's paired test, CI, rho, mde, Holm
  across the rows, and the cases table with the slice column;
- `compare(a, b)`: the same without slices;
- pandas: the two long tables' counted values side by side with the slice column joined,
  grouped by (topic, score) for the mean delta, its count and sd (no test, no CI).

Reported: the median time of `compare(by=)` (target ≤ 2 s) and its median per-round ratios
to the other two.

Run: python benchmarks/bench_compare_slices.py [--cases 100000] [--scores 10] [--slices 20]
         [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

import evalbook as eb


def make_run(df: pd.DataFrame, k: int, shift: float, name: str) -> eb.Run:
    """A run of k scores over `df` (its `output` column); run b's outputs are shifted."""
    data = df.assign(output=np.clip(df["output"] + shift, 0, 1))
    scorers = []
    for j in range(k):
        d = eb.define_score(f"s{j}")
        if j % 2:
            scorers.append(eb.scorer(d)(lambda output: 1.0 if output > 0.4 else 0.0))
        else:
            scorers.append(eb.scorer(d)(lambda output: output))
    return eb.run(
        data, output_column="output", scorers=scorers, name=name, store=None, progress=False
    )


def _pandas(a: eb.Run, b: eb.Run, topic: pd.Series) -> pd.DataFrame:
    long = a.scores[["case_id", "score", "counted"]].copy()
    long["delta"] = b.scores["counted"].to_numpy() - long["counted"].to_numpy()
    long["topic"] = topic.to_numpy()[long["case_id"].cat.codes.to_numpy()]
    return long.groupby(["topic", "score"], observed=True, sort=False)["delta"].agg(
        ["mean", "count", "std"]
    )


def _time(call: object) -> float:
    t0 = time.perf_counter()
    call()  # type: ignore[operator]
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--scores", type=int, default=10)
    parser.add_argument("--slices", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    n, k = args.cases, args.scores
    df = pd.DataFrame({"output": rng.random(n), "topic": rng.integers(0, args.slices, n)})
    df["topic"] = "t" + df["topic"].astype(str)
    a, b = make_run(df, k, 0.0, "a"), make_run(df, k, 0.02, "b")
    for run in (a, b):  # built once per run, whatever is compared
        run.scores, run.reduced()
    rows = len(eb.compare(a, b, by="topic").summary)
    by_s, plain_s, pandas_s, to_plain, to_pandas = [], [], [], [], []
    for _ in range(args.repeats):
        t_by = _time(lambda: eb.compare(a, b, by="topic"))
        t_plain = _time(lambda: eb.compare(a, b))
        t_pandas = _time(lambda: _pandas(a, b, df["topic"]))
        by_s.append(t_by)
        plain_s.append(t_plain)
        pandas_s.append(t_pandas)
        to_plain.append(t_by / t_plain)
        to_pandas.append(t_by / t_pandas)
    print("## compare(by=)\n")
    print(
        f"two runs of {n:,} cases × {k} scores, {args.slices} slices ({rows} summary rows), "
        f"median of {args.repeats} alternating rounds\n"
    )
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| `compare(a, b, by='topic')` | {statistics.median(by_s):.2f} s | ≤ 2 s |")
    print(f"| `compare(a, b)` | {statistics.median(plain_s):.2f} s | — |")
    groupby = statistics.median(pandas_s)
    print(f"| pandas groupby of the deltas by (topic, score) | {groupby:.2f} s | — |")
    print(f"| by= / without | {statistics.median(to_plain):.2f}× | — |")
    print(f"| by= / pandas groupby | {statistics.median(to_pandas):.2f}× | — |")


if __name__ == "__main__":
    main()
