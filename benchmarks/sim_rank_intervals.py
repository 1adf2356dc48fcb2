"""Do a leaderboard's rank intervals hold the true ranks, and how long does a board take?

Each simulated board has R runs with known, distinct true pass rates (or mean values) over
the same N cases; every run's per-case values are drawn independently (0/1 with its rate, or
a value in [0, 1] around it), the board's rank intervals and tiers come from
`_compare/_ranks.py`'s `rank_intervals`, the function `eb.leaderboard` calls. Counted:

- coverage: the share of runs whose true rank (1 = highest true mean) lies in
  [rank_low, rank_high]; and the share of boards on which every run's does (the simultaneous
  guarantee Holm's adjustment gives: at least 95 %);
- the share of pairs the board separates (how informative the intervals are), and the share
  of boards that separate two runs whose true means are equal (Holm: at most 5 %; spread 0
  makes every run equally good).

Then the time of one board of 50 runs x 10,000 cases, 0/1 and continuous values.

Run: python benchmarks/sim_rank_intervals.py [--boards 2000] [--seed 5]
"""

from __future__ import annotations

import argparse
import time
from typing import NamedTuple

import numpy as np

from evalbook._compare._ranks import rank_intervals

DESIGNS = (
    # (runs, cases, spread of the true means, kind); spread 0: every run equally good
    (8, 300, 0.0, "binary"),
    (8, 300, 0.0, "continuous"),
    (8, 300, 0.15, "binary"),
    (12, 500, 0.05, "binary"),
    (8, 300, 0.15, "continuous"),
    (20, 1000, 0.10, "binary"),
)


class Coverage(NamedTuple):
    boards: int
    per_run: float  # share of runs whose true rank is in its interval
    every_run: float  # share of boards where every run's is
    separated: float  # share of pairs separated
    any_false: float  # share of boards that separate two runs of equal true means


def simulate(runs: int, cases: int, spread: float, kind: str, boards: int, seed: int) -> Coverage:
    """`boards` boards of one design, seeded."""
    rng = np.random.default_rng(seed)
    held, all_held, separated, any_false = 0, 0, 0.0, 0
    for _ in range(boards):
        truth = 0.5 + spread * (rng.permutation(runs) / max(runs - 1, 1) - 0.5)
        truth = np.round(truth, 12)  # spread 0: exactly equal
        if kind == "binary":
            values = (rng.random((runs, cases)) < truth[:, None]).astype(float)
        else:
            values = np.clip(rng.normal(truth[:, None], 0.25, (runs, cases)), 0.0, 1.0)
            truth = _clipped_means(truth, 0.25)
        r = rank_intervals(values, values.mean(axis=1))
        # a run's true ranks: from 1 + the runs truly better to R - the runs truly worse
        best = 1 + (truth[None, :] > truth[:, None]).sum(axis=1)
        worst = runs - (truth[None, :] < truth[:, None]).sum(axis=1)
        ok = (r.rank_low <= worst) & (best <= r.rank_high)
        any_false += bool((r.separable & (truth[None, :] == truth[:, None])).any())
        held += int(ok.sum())
        all_held += bool(ok.all())
        separated += float(r.separable[np.triu_indices(runs, k=1)].mean())
    return Coverage(
        boards, held / (boards * runs), all_held / boards, separated / boards, any_false / boards
    )


def _clipped_means(mu: np.ndarray, sd: float) -> np.ndarray:
    """The mean of clip(N(mu, sd), 0, 1): what the continuous runs' values average to."""
    from math import erf, exp, pi, sqrt

    def phi(z: float) -> float:
        return exp(-z * z / 2) / sqrt(2 * pi)

    def cdf(z: float) -> float:
        return 0.5 * (1 + erf(z / sqrt(2)))

    out = []
    for m in mu.tolist():
        a, b = (0 - m) / sd, (1 - m) / sd
        inside = m * (cdf(b) - cdf(a)) + sd * (phi(a) - phi(b))
        out.append(inside + (1 - cdf(b)))
    return np.array(out)


def board_seconds(kind: str, seed: int) -> float:
    """Seconds for one board of 50 runs x 10,000 cases."""
    rng = np.random.default_rng(seed)
    truth = np.linspace(0.6, 0.7, 50)
    if kind == "binary":
        values = (rng.random((50, 10_000)) < truth[:, None]).astype(float)
    else:
        values = np.clip(rng.normal(truth[:, None], 0.2, (50, 10_000)), 0.0, 1.0)
    start = time.perf_counter()
    rank_intervals(values, values.mean(axis=1))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    print(
        "runs  cases  spread  kind        boards  per run  every run  pairs separated"
        "  boards with a false separation"
    )
    for k, (runs, cases, spread, kind) in enumerate(DESIGNS):
        c = simulate(runs, cases, spread, kind, args.boards, args.seed + k)
        print(
            f"{runs:>4}  {cases:>5}  {spread:>6}  {kind:<10}  {c.boards:>6}  {c.per_run:>7.1%}"
            f"  {c.every_run:>9.1%}  {c.separated:>15.1%}  {c.any_false:>30.1%}"
        )
    for kind in ("binary", "continuous"):
        print(
            f"one board of 50 runs x 10,000 cases ({kind}): {board_seconds(kind, args.seed):.2f} s"
        )


if __name__ == "__main__":
    main()
