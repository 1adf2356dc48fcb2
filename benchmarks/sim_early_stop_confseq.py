"""The null-boundary design of `sim_early_stop.py` with the `confseq` package's betting
confidence sequence on the same draws (docs/spend-less.md: confseq is the reference).

Run in a venv with confseq and without evalbook (confseq 0.0.11 needs numpy < 2, Boost
headers and scikit-build to build):

    python -m venv /tmp/vcs && /tmp/vcs/bin/pip install "pybind11>=2.11" scikit-build cmake \\
        ninja setuptools wheel "numpy<2" && apt-get install libboost-dev && \\
        /tmp/vcs/bin/pip install --no-build-isolation confseq
    /tmp/vcs/bin/python benchmarks/sim_early_stop_confseq.py [--sims 2000] [--seed 18]

The draws are `sim_early_stop.py`'s (its `_deltas`, the same seed, one draw per sample for all
runs at once), so the rates compare on the same runs: paired deltas in {−1, 0, +1}, 20 % of
pairs differing, true delta −X (X = 2 pp); each run's deltas rescaled to [0, 1] for
`confseq.betting.betting_cs` (α = 0.05, running intersection), a look after every sample.
"""

from __future__ import annotations

import argparse

import numpy as np

MAX_DROP = 0.02
DISCORDANT = 0.2


def draws(delta: float, sims: int, cases: int, seed: int) -> np.ndarray:
    """`cases × sims` paired deltas, drawn as `sim_early_stop.decide` draws them."""
    rng = np.random.default_rng(seed)
    up, down = (DISCORDANT + delta) / 2, (DISCORDANT - delta) / 2
    out = np.empty((cases, sims))
    for n in range(cases):
        u = rng.random(sims)
        out[n] = np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))
    return out


def main() -> None:
    from confseq.betting import betting_cs  # only here: a reference, in its own venv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    x = draws(-MAX_DROP, args.sims, args.cases, args.seed)
    wrong = 0
    for s in range(args.sims):
        low, high = betting_cs((x[:, s] + 1) / 2, alpha=0.05, running_intersection=True)
        low, high = 2 * np.asarray(low) - 1, 2 * np.asarray(high) - 1
        wrong += bool(((low > -MAX_DROP) | (high < -MAX_DROP)).any())
    print(f"| confseq betting_cs on the same draws | {args.sims:,} | {wrong / args.sims:.1%} |")


if __name__ == "__main__":
    main()
