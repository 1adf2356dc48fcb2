"""Power of the test `eb.compare` runs, at the mde `eb.mde` reports: the target is 80 %.

For each design the mde is computed from the design's true parameters (as `eb.mde` gives it
from a pilot that estimated them well); then `--sims` seeded comparisons are drawn with that
true effect and the test the comparison would run is applied (`_model/_paired.py`, the
functions `compare()` calls): the share with p < 0.05 is the power. The same at the mde of
the formula before issue 30 (z quantiles, the sd under the alternative) for contrast.

- 0/1 values, no clusters: the exact McNemar test; n pairs, a share p_d of them discordant
  (the improvements and regressions drawn as a multinomial).
- continuous values: the sign-flip permutation test on n normal deltas (sd 0.2).
- clustered: the clustered t test on C clusters of 5 cases, delta = effect + a cluster
  effect (sd 0.1) + case noise (sd 0.2).

Run: python benchmarks/sim_power.py [--sims 2000] [--seed 30]
"""

from __future__ import annotations

import argparse
import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

Z = NormalDist().inv_cdf(0.975) + NormalDist().inv_cdf(0.8)  # the old formula's 2.80

MCNEMAR_DESIGNS = ((50, 0.12), (200, 0.12), (1069, 0.1234), (400, 0.3))
CONTINUOUS_DESIGNS = (10, 30, 100)
CLUSTER_DESIGNS = (10, 20)
SD, SD_CLUSTER, SD_CASE, PER = 0.2, 0.1, 0.2, 5


class Power(NamedTuple):
    """One design: the mde reported now and its power; the old mde and its power."""

    mde: float
    power: float
    old_mde: float
    old_power: float


def _old_mcnemar_mde(n: int, p_d: float) -> float:
    """The old mde: z · sd / √n with sd² = p_d − δ² (the deltas' variance under the
    alternative, what a comparison with that effect reported), solved for δ."""
    d = Z * math.sqrt(p_d / n)
    for _ in range(100):
        d = Z * math.sqrt(max(p_d - d * d, 0.0) / n)
    return d


def mcnemar(sims: int, n: int, p_d: float, seed: int = 30) -> Power:
    from evalbook._model._paired import mcnemar_p
    from evalbook._model._power import mde_of

    def power_at(delta: float, rng: np.random.Generator) -> float:
        p01, p10 = (delta, 0.0) if delta >= p_d else ((p_d + delta) / 2, (p_d - delta) / 2)
        counts = rng.multinomial(n, [p01, p10, 1 - p01 - p10], size=sims)
        p = mcnemar_p(counts[:, 0], counts[:, 1])
        return float(np.mean(p < 0.05))

    mde = mde_of(n, math.nan, discordant=p_d)
    old = _old_mcnemar_mde(n, p_d)
    rng = np.random.default_rng([seed, n])
    return Power(mde, power_at(mde, rng), old, power_at(old, rng))


def continuous(sims: int, n: int, seed: int = 30) -> Power:
    from evalbook._model._permutation import sign_flip_p
    from evalbook._model._power import mde_of

    rng = np.random.default_rng([seed, n, 1])
    mde, old = mde_of(n, SD), Z * SD / math.sqrt(n)
    powers = []
    for delta in (mde, old):
        d = rng.normal(delta, SD, size=(sims, n))
        powers.append(float(np.mean(sign_flip_p(d) < 0.05)))
    return Power(mde, powers[0], old, powers[1])


def clustered(sims: int, clusters: int, seed: int = 30) -> Power:
    from evalbook._model._paired import clustered_t
    from evalbook._model._power import mde_of

    rng = np.random.default_rng([seed, clusters, 2])
    n = clusters * PER
    se = math.sqrt((SD_CLUSTER**2 + SD_CASE**2 / PER) / clusters)  # the true clustered SE
    mde = mde_of(n, se * math.sqrt(n), per_cluster=PER)
    old = Z * se
    codes = np.repeat(np.arange(clusters), PER)
    powers = []
    for delta in (mde, old):
        hits = 0
        for _ in range(sims):
            d = delta + rng.normal(0, SD_CLUSTER, clusters)[codes] + rng.normal(0, SD_CASE, n)
            hits += clustered_t(d, codes)[2] < 0.05
        powers.append(hits / sims)
    return Power(mde, powers[0], old, powers[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    mc = math.sqrt(0.8 * 0.2 / args.sims)
    print(f"### Power at the reported mde ({args.sims:,} sims per design; Monte Carlo "
          f"±{mc:.1%}; target 80 %)\n")  # fmt: skip
    print("| test | design | mde now | power | old mde | power at the old mde |")
    print("|---|---|---|---|---|---|")
    rows = [
        *(("exact McNemar", f"n = {n:,}, {p:.1%} discordant", mcnemar(args.sims, n, p, args.seed))
          for n, p in MCNEMAR_DESIGNS),
        *(("sign-flip", f"n = {n}, sd {SD}", continuous(args.sims, n, args.seed))
          for n in CONTINUOUS_DESIGNS),
        *(("clustered t", f"{c} clusters × {PER}", clustered(args.sims, c, args.seed))
          for c in CLUSTER_DESIGNS),
    ]  # fmt: skip
    for test, design, got in rows:
        print(
            f"| {test} | {design} | {got.mde * 100:.2f} pp | {got.power:.1%} | "
            f"{got.old_mde * 100:.2f} pp | {got.old_power:.1%} |"
        )


if __name__ == "__main__":
    main()
