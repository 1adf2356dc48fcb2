"""Coverage of the summary's 95 % CI for values in [0, 1] that are not 0/1, at small n.

Each design draws n case values from a known distribution: pass@k values of K epochs (a
case's pass probability from a Beta, its K epochs Binomial; skewed towards 1 as pass@k with
k ≥ 2 is), judge-like scores (a clipped normal, a Beta) and a two-value grid. The interval is
`grouped_ci` of `_model/_stats.py`, the function `run.summary()` calls (all simulated samples
of one design are the groups of one call); beside it, for reference, the plain t interval
(mean ± t975(n − 1) · s/√n, its part within [0, 1]) that the summary used before, and the
width of the summary's interval relative to it.

Run: python benchmarks/sim_bounded_coverage.py [--sims 2000] [--seed 3]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from math import comb
from typing import NamedTuple

import numpy as np

from evalbook._model._stats import grouped_ci, t975

Draw = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]


def _pass_at(a: float, b: float, epochs: int, k: int) -> Draw:
    table = np.array(
        [
            1.0 - (comb(epochs - c, k) / comb(epochs, k) if epochs - c >= k else 0.0)
            for c in range(epochs + 1)
        ]
    )

    def draw(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
        return np.asarray(table[rng.binomial(epochs, rng.beta(a, b, shape))])

    return draw


def _clipped(mu: float, sd: float) -> Draw:
    return lambda rng, shape: np.clip(rng.normal(mu, sd, shape), 0.0, 1.0)


DESIGNS: dict[str, Draw] = {
    "pass@3 of 5, Beta(3, 0.4)": _pass_at(3, 0.4, 5, 3),
    "pass@3 of 5, Beta(2, 0.5)": _pass_at(2, 0.5, 5, 3),
    "pass@2 of 5, Beta(6, 0.7)": _pass_at(6, 0.7, 5, 2),
    "pass@1 of 3, Beta(1.2, 0.3)": _pass_at(1.2, 0.3, 3, 1),
    "pass@1 of 5, Beta(2, 2)": _pass_at(2, 2, 5, 1),
    "judge N(0.4, 0.1)": _clipped(0.4, 0.1),
    "judge N(0.85, 0.08)": _clipped(0.85, 0.08),
    "grid 0.3 / 0.5": lambda rng, shape: rng.choice([0.3, 0.5], shape),
    "Beta(8, 1)": lambda rng, shape: rng.beta(8, 1, shape),
}
SIZES = (20, 30, 50)


class Coverage(NamedTuple):
    sims: int
    summary: float  # share of the summary's intervals holding the true mean
    plain_t: float  # the same for the plain t interval
    width_ratio: float  # mean width of the summary's interval / the t interval's


def simulate(draw: Draw, n: int, sims: int, seed: int) -> Coverage:
    rng = np.random.default_rng(seed)
    truth = float(draw(rng, (2_000_000,)).mean())
    values = draw(rng, (sims, n))
    got = grouped_ci(values.reshape(-1), np.repeat(np.arange(sims), n), sims)
    mean = values.mean(axis=1)
    half = t975(n - 1) * values.std(axis=1, ddof=1) / np.sqrt(n)
    t_low, t_high = np.maximum(0.0, mean - half), np.minimum(1.0, mean + half)
    spread = t_high > t_low  # no spread: the summary's own degenerate rule, not t's
    t_low, t_high = np.where(spread, t_low, got.low), np.where(spread, t_high, got.high)
    return Coverage(
        sims,
        float(((got.low <= truth) & (truth <= got.high)).mean()),
        float(((t_low <= truth) & (truth <= t_high)).mean()),
        float((got.high - got.low).mean() / (t_high - t_low).mean()),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=3)
    args = parser.parse_args()
    print(f"{'design':<28}  {'n':>3}  {'summary':>7}  {'plain t':>7}  {'width vs t':>10}")
    for k, (name, draw) in enumerate(DESIGNS.items()):
        for n in SIZES:
            c = simulate(draw, n, args.sims, args.seed + 100 * k + n)
            print(
                f"{name:<28}  {n:>3}  {c.summary:>7.1%}  {c.plain_t:>7.1%}  {c.width_ratio:>9.2f}×"
            )


if __name__ == "__main__":
    main()
