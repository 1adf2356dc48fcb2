"""Slices: `run.summary(by=...)` with 50 slices on 1M records against a pandas groupby.

A run of 100k cases × 10 scores (1M sample records; half the scores 0/1, half graded) whose
data has a `topic` column of `--slices` values. Timed, alternating, `--repeats` times:

- evalbook: `run.summary(by="topic")` (mean, Wilson / t CI, every count, n_clusters per
  (slice, score)), with the run's tables built (`run.scores`, `run.reduced()`: they are
  built once per run, whatever is summarised);
- pandas: the built long table with the slice column joined, grouped by (topic, score) for
  mean, count and std of `counted` (no CI, no counts by status).

The ratio is the median of the per-round ratios. A second line times the first
`summary(by=)` of a fresh run, table building included, against the same groupby plus the
join (what a user without evalbook would do from `run.scores`).

Run: python benchmarks/bench_slices.py [--cases 100000] [--scores 10] [--slices 50]
         [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

import evalbook as eb


def make_run(n: int, k: int, slices: int, seed: int = 1) -> eb.Run:
    """An in-memory run of n cases × k scores whose data has a `topic` of `slices` values."""
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"output": rng.random(n), "topic": rng.integers(0, slices, n).astype(str)})
    scorers = []
    for j in range(k):
        d = eb.define_score(f"s{j}")
        if j % 2:
            scorers.append(eb.scorer(d)(lambda output: 1.0 if output > 0.4 else 0.0))
        else:
            scorers.append(eb.scorer(d)(lambda output: output))
    return eb.run(df, output_column="output", scorers=scorers, store=None, progress=False)


def _groupby(long: pd.DataFrame) -> pd.DataFrame:
    return long.groupby(["topic", "score"], observed=True, sort=False)["counted"].agg(
        ["mean", "count", "std"]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--scores", type=int, default=10)
    parser.add_argument("--slices", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    n, k = args.cases, args.scores
    run = make_run(n, k, args.slices)
    topic = run.data["topic"].to_numpy()
    long = run.scores.assign(topic=np.repeat(topic, k))  # the built long table, sliced
    run.summary(by="topic")  # builds the tables once (as any first summary does)
    ratios, ours, theirs = [], [], []
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        got = run.summary(by="topic")
        t1 = time.perf_counter()
        _groupby(long)
        t2 = time.perf_counter()
        ours.append(t1 - t0)
        theirs.append(t2 - t1)
        ratios.append((t1 - t0) / (t2 - t1))
    assert len(got) == args.slices * k
    fresh = make_run(n, k, args.slices, seed=2)
    t0 = time.perf_counter()
    fresh.summary(by="topic")  # builds run.scores and run.reduced() first
    t1 = time.perf_counter()
    scores = fresh.scores  # cached now: the same long table, joined and grouped by pandas
    _groupby(scores.assign(topic=np.repeat(fresh.data["topic"].to_numpy(), k)))
    t2 = time.perf_counter()
    records = n * k
    print(f"### Slices: summary(by=) of {n:,} cases × {k} scores ({records:,} records)\n")
    print("| measure | evalbook | pandas | ratio | target |")
    print("|---|---|---|---|---|")
    print(
        f"| summary(by=topic), {args.slices} slices, tables built, vs a groupby of the built "
        f"long table | {statistics.median(ours):.3f} s | {statistics.median(theirs):.3f} s | "
        f"{statistics.median(ratios):.2f}× | ≤ 2× |"
    )
    print(
        f"| first summary(by=) of a fresh run (tables built too) vs join + groupby | "
        f"{t1 - t0:.3f} s | {t2 - t1:.3f} s | {(t1 - t0) / (t2 - t1):.2f}× | — |"
    )


if __name__ == "__main__":
    main()
