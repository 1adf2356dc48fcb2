"""The paired comparison on clustered cases: false positives with and without `cluster=`,
power, and whether `mde` is the effect the test detects 80 % of the time.

Every simulated comparison calls `paired()` of `_model/_paired.py`, the function that
`eb.compare` calls per (slice, score) row (with `cluster=`: `clusters=` the case's cluster
code; without: none, so 0/1 scores get the exact McNemar test).

Clustered design (questions on a passage, the DROP/RACE pattern): C clusters of m cases. A
case's ease is U(0, 1), built as Φ(θ_c + e_i) with a shared passage part θ_c ~ N(0, τ²) and
e_i ~ N(0, 1 − τ²); run a passes with probability ease, run b with ease + s_c + δ (within
[0, 1]), where s_c ~ N(0, σ²) is how much better or worse b does on passage c. The s_c make the
paired deltas of one passage correlated; under the null (δ = 0) the mean delta is 0 by
symmetry. "strong": τ = 0.8, σ = 0.3; "mild": τ = 0.4, σ = 0.15.

Power: N = 200 independent cases, a ~ Bernoulli(0.5), b ~ Bernoulli(0.65) (+15 pp).
MDE: on a design (ease ~ U(0, 1), b passes with ease + δ), the effect at which the simulated
power is 80 % (interpolated on a grid of δ, the true delta of each computed from 10⁶ draws)
against the mean `mde` the comparisons report there.

Run: python benchmarks/sim_paired_cluster.py [--sims 2000] [--seed 17]
"""

from __future__ import annotations

import argparse
import math
from statistics import NormalDist
from typing import NamedTuple

import numpy as np

from evalbook._model._paired import paired

DESIGNS = {  # name: (clusters, cases per cluster, tau, sigma)
    "20×10 strong": (20, 10, 0.8, 0.30),
    "20×10 mild": (20, 10, 0.4, 0.15),
    "50×4 strong": (50, 4, 0.8, 0.30),
    "50×4 mild": (50, 4, 0.4, 0.15),
}
_PHI = np.vectorize(NormalDist().cdf)


class Rates(NamedTuple):
    """Rejection rates at 5 % of one design."""

    sims: int
    plain: float  # without cluster=
    clustered: float  # with cluster=


def _clustered(
    rng: np.random.Generator, clusters: int, per: int, tau: float, sigma: float, delta: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    codes = np.repeat(np.arange(clusters), per)
    theta = rng.normal(0.0, tau, clusters)[codes]
    e = rng.normal(0.0, math.sqrt(1 - tau * tau), codes.size)
    ease = _PHI(theta + e)
    shift = rng.normal(0.0, sigma, clusters)[codes]
    a = (rng.random(codes.size) < ease).astype(np.float64)
    b = (rng.random(codes.size) < np.clip(ease + shift + delta, 0.0, 1.0)).astype(np.float64)
    return a, b, codes


def false_positives(sims: int, design: str, seed: int) -> Rates:
    """How often each test rejects a true null at 5 % on a clustered design."""
    clusters, per, tau, sigma = DESIGNS[design]
    rng = np.random.default_rng(seed)
    plain = clustered = 0
    for _ in range(sims):
        a, b, codes = _clustered(rng, clusters, per, tau, sigma, 0.0)
        plain += paired(a, b).p_value < 0.05
        clustered += paired(a, b, clusters=codes).p_value < 0.05
    return Rates(sims, plain / sims, clustered / sims)


def power_15pp(sims: int, seed: int, n: int = 200) -> float:
    """Power of the paired test (exact McNemar) for 50 % → 65 % on n independent cases."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(sims):
        a = (rng.random(n) < 0.50).astype(np.float64)
        b = (rng.random(n) < 0.65).astype(np.float64)
        hits += paired(a, b).p_value < 0.05
    return hits / sims


class MdeCheck(NamedTuple):
    """The effect detected 80 % of the time against the reported mde."""

    effect_at_80: float
    mde: float
    curve: list[tuple[float, float, float]]  # (true delta, power, mean mde)

    @property
    def error(self) -> float:
        return self.mde / self.effect_at_80 - 1


def mde_check(sims: int, seed: int, n: int = 200, clusters: int | None = None) -> MdeCheck:
    """Simulated power over a grid of effects; with `clusters`, n cases in that many
    clusters (the "strong" design) and `cluster=`."""
    rng = np.random.default_rng(seed)
    grid = np.linspace(0.04, 0.20, 9) if clusters is None else np.linspace(0.06, 0.30, 9)
    curve = []
    for step in grid:
        truth_rng = np.random.default_rng(seed + 1)
        ease = truth_rng.random(1_000_000)
        if clusters is None:
            true = float(np.clip(ease + step, 0, 1).mean() - ease.mean())
        else:  # the shift's spread around the lift, as in the clustered design
            s = truth_rng.normal(0.0, DESIGNS["50×4 strong"][3], ease.size)
            true = float(np.clip(ease + s + step, 0, 1).mean() - ease.mean())
        hits, mdes = 0, 0.0
        for _ in range(sims):
            if clusters is None:
                u = rng.random(n)
                a = (rng.random(n) < u).astype(np.float64)
                b = (rng.random(n) < np.minimum(1.0, u + step)).astype(np.float64)
                r = paired(a, b)
            else:
                _, _, tau, sigma = DESIGNS["50×4 strong"]
                a, b, codes = _clustered(rng, clusters, n // clusters, tau, sigma, float(step))
                r = paired(a, b, clusters=codes)
            hits += r.p_value < 0.05
            mdes += r.mde
        curve.append((true, hits / sims, mdes / sims))
    powers = np.array([c[1] for c in curve])
    trues = np.array([c[0] for c in curve])
    k = int(np.searchsorted(powers, 0.8))  # power rises with the effect
    k = min(max(k, 1), len(curve) - 1)
    w = (0.8 - powers[k - 1]) / (powers[k] - powers[k - 1])
    effect = float(trues[k - 1] + w * (trues[k] - trues[k - 1]))
    mde = float(curve[k - 1][2] + w * (curve[k][2] - curve[k - 1][2]))
    return MdeCheck(effect, mde, curve)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args()
    mc = 1.96 * math.sqrt(0.05 * 0.95 / args.sims)
    print("## Paired comparison on clustered cases\n")
    print(f"{args.sims} seeded sims per row (seed {args.seed}); Monte Carlo ±{mc:.1%} at 5 %\n")
    print("| design | false positives without cluster= | with cluster= |")
    print("|---|---|---|")
    for i, design in enumerate(DESIGNS):
        r = false_positives(args.sims, design, args.seed + i)
        print(f"| {design} | {r.plain:.1%} | {r.clustered:.1%} |")
    print(f"\nPower, 50 % → 65 % at N = 200 unclustered: {power_15pp(args.sims, args.seed):.1%}\n")
    for label, check in (
        ("N = 200 unclustered (exact McNemar)", mde_check(args.sims, args.seed)),
        ("50×4 strong, cluster= (clustered t)", mde_check(args.sims, args.seed, clusters=50)),
    ):
        print(
            f"MDE, {label}: power 80 % at a true delta of {check.effect_at_80:.4f}; "
            f"mean reported mde there {check.mde:.4f} ({check.error:+.1%})"
        )


if __name__ == "__main__":
    main()
