"""Coverage of the 95 % CI of a mean when every case runs K epochs (within-case correlation).

Each simulated eval draws `--cases` cases, each with its own true pass probability from
Beta(a, b), and runs each case `--epochs` times (Bernoulli of that probability). The estimand
is the mean pass probability over cases, a / (a + b). Two intervals, both from the one
interval function of `_model/_stats.py` (`mean_ci`):

- naive: over the K×N sample values as if they were independent (what summary() computed
  before epochs: it is too narrow, as a case's epochs are correlated);
- case level: over the cases' reduced values (`reduce_scores`, reducer "mean"), the case
  being the unit of resampling.

Run: python benchmarks/sim_epoch_coverage.py [--sims 2000] [--cases 100] [--epochs 5]
         [--a 1.5] [--b 1.0] [--seed 2024]
"""

from __future__ import annotations

import argparse
import math
from typing import NamedTuple

import numpy as np
import pandas as pd

import evalbook as eb
from evalbook._model._epochs import reduce_scores
from evalbook._model._stats import mean_ci


class Coverage(NamedTuple):
    """What one simulation study found."""

    sims: int
    naive: float  # share of naive intervals holding the true mean
    case_level: float  # share of case-level intervals holding it
    width_ratio: float  # mean naive width / mean case-level width


def _frame(cases: int, epochs: int, values: np.ndarray) -> pd.DataFrame:
    """The long sample table of one score: `values` is cases × epochs."""
    n = cases * epochs
    return pd.DataFrame(
        {
            "case_id": pd.Categorical.from_codes(
                np.repeat(np.arange(cases), epochs),
                categories=pd.Index([f"c{i}" for i in range(cases)]),
            ),
            "epoch": np.tile(np.arange(1, epochs + 1), cases),
            "score": pd.Categorical.from_codes(
                np.zeros(n, dtype=np.int8), categories=pd.Index(["pass"])
            ),
            "status": pd.Categorical.from_codes(
                np.zeros(n, dtype=np.int8), categories=pd.Index(["scored", "unscored", "error"])
            ),
            "counted": values.reshape(-1).astype(np.float64),
            "reason": pd.Categorical.from_codes(
                np.full(n, -1), categories=pd.Index([], dtype=object)
            ),
        }
    )


def simulate(
    sims: int, cases: int = 100, epochs: int = 5, a: float = 1.5, b: float = 1.0, seed: int = 2024
) -> Coverage:
    """Coverage of the naive and the case-level 95 % CI over `sims` seeded evals."""
    rng = np.random.default_rng(seed)
    truth = a / (a + b)
    definition = [eb.define_score("pass")]
    hits_naive = hits_case = 0
    width_naive = width_case = 0.0
    for _ in range(sims):
        p = rng.beta(a, b, size=cases)
        values = (rng.random((cases, epochs)) < p[:, None]).astype(np.float64)
        _, lo, hi = mean_ci(values.reshape(-1))
        hits_naive += lo <= truth <= hi
        width_naive += hi - lo
        reduced = reduce_scores(_frame(cases, epochs, values), definition)
        _, lo, hi = mean_ci(reduced["value"].to_numpy())
        hits_case += lo <= truth <= hi
        width_case += hi - lo
    return Coverage(sims, hits_naive / sims, hits_case / sims, width_naive / width_case)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--a", type=float, default=1.5)
    parser.add_argument("--b", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    got = simulate(args.sims, args.cases, args.epochs, args.a, args.b, args.seed)
    icc = 1 / (args.a + args.b + 1)  # the intra-case correlation of a Beta-Bernoulli design
    mc = 1.96 * math.sqrt(0.95 * 0.05 / got.sims)  # Monte Carlo half-width at 95 % coverage
    print("## CI coverage with epochs\n")
    print(
        f"{got.sims} seeded sims (seed {args.seed}), {args.cases} cases × {args.epochs} epochs, "
        f"case pass probability ~ Beta({args.a:g}, {args.b:g}) (intra-case correlation "
        f"{icc:.2f}); Monte Carlo ±{mc:.1%}\n"
    )
    print("| interval | coverage of 95 % CI | mean width (relative to case level) |")
    print("|---|---|---|")
    print(f"| naive (K×N samples as independent) | {got.naive:.1%} | {got.width_ratio:.2f}× |")
    print(f"| case level (reduced case values) | {got.case_level:.1%} | 1.00× |")


if __name__ == "__main__":
    main()
