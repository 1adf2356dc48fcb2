"""Coverage of the 95 % CI of a mean on clustered cases, with and without `cluster=`.

Each simulated eval has C clusters (passages) of m cases (questions) each. A cluster's pass
probability is drawn from Beta(a, b) with mean `--mean` and intra-cluster correlation ρ
(a + b = 1/ρ − 1: the beta-binomial design), and each case passes with that probability.
The estimand is the mean pass probability, `--mean`. Two intervals per eval, both computed
by `grouped_ci` of `_model/_stats.py`, the function `run.summary()` calls (every simulated
eval is one group of one call, so 2,000 evals are one pass of numpy; tests check that
`summary()` gives exactly these intervals on real `eb.run` output):

- without cluster= (what `summary()` gives by default): each case its own cluster, 0/1
  values, so the Wilson interval, as if the cases were independent;
- with cluster= (`summary(cluster="passage")`): the cluster-robust t on C − 1 df.

Run: python benchmarks/sim_cluster_coverage.py [--sims 2000] [--mean 0.6] [--seed 17]
"""

from __future__ import annotations

import argparse
from typing import NamedTuple

import numpy as np

from evalbook._model._stats import GroupedCI, grouped_ci

DESIGNS = ((20, 10), (50, 4))  # (clusters, cases per cluster)
ICCS = (("strong", 0.3), ("mild", 0.05))


class Coverage(NamedTuple):
    """What one simulated design found."""

    sims: int
    plain: float  # share of intervals without cluster= that hold the true mean
    clustered: float  # the same with cluster=
    width_ratio: float  # mean clustered width / mean plain width


def intervals(
    values: np.ndarray, group: np.ndarray, evals: int, cluster: np.ndarray
) -> tuple[GroupedCI, GroupedCI]:
    """The 95 % intervals of each simulated eval (`group` numbers them): without cluster= and
    with it, as `run.summary()` and `run.summary(cluster=...)` compute them."""
    return grouped_ci(values, group, evals), grouped_ci(values, group, evals, cluster)


def simulate(
    sims: int, clusters: int, per: int, icc: float, mean: float = 0.6, seed: int = 17
) -> Coverage:
    """Coverage of both intervals over `sims` seeded evals of one design."""
    rng = np.random.default_rng(seed)
    total = 1.0 / icc - 1.0
    p = rng.beta(mean * total, (1.0 - mean) * total, size=(sims, clusters))
    values = (rng.random((sims, clusters, per)) < p[:, :, None]).astype(np.float64).reshape(-1)
    n = clusters * per
    group = np.repeat(np.arange(sims), n)
    cluster = np.repeat(np.arange(sims * clusters), per)  # codes unique across evals
    plain, clustered = intervals(values, group, sims, cluster)
    hit_plain = (plain.low <= mean) & (mean <= plain.high)
    hit_clustered = (clustered.low <= mean) & (mean <= clustered.high)
    ratio = float(np.mean(clustered.high - clustered.low) / np.mean(plain.high - plain.low))
    return Coverage(sims, float(hit_plain.mean()), float(hit_clustered.mean()), ratio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--mean", type=float, default=0.6)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    print(f"### Coverage of the 95 % CI on clustered cases ({args.sims:,} sims per design)\n")
    print("| design | ICC | without cluster= | with cluster= | width ratio |")
    print("|---|---|---|---|---|")
    for c, m in DESIGNS:
        for label, icc in ICCS:
            got = simulate(args.sims, c, m, icc, args.mean, args.seed)
            print(
                f"| {c} clusters × {m} | {label} ({icc}) | {got.plain:.1%} | "
                f"{got.clustered:.1%} | {got.width_ratio:.2f} |"
            )


if __name__ == "__main__":
    main()
