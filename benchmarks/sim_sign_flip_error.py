"""The sign-flip p-value's error where it is approximated, against the exact value.

`sign_flip_p` (`_model/_permutation.py`, what `eb.compare` calls for non-0/1 scores) is exact
up to EXACT_MAX non-zero deltas and on grids; beyond, for continuous deltas, it is a
saddle-point approximation. Just past the switch (m = EXACT_MAX + 1 and a few more) the
exact value can still be enumerated (`exact_p`, meet in the middle), so this script draws
deltas of several kinds there and reports the largest absolute error and the largest
relative error of the p-value `sign_flip_p` returns. A last row checks the lattice-corrected
saddle point alone (used for grids too large to convolve) against the exact convolution.

Run: python benchmarks/sim_sign_flip_error.py [--draws 25] [--seed 7]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

from evalbook._model._permutation import EXACT_MAX, exact_p, saddle_p, sign_flip_p

Draw = Callable[[np.random.Generator, int], np.ndarray]

KINDS: dict[str, Draw] = {
    "normal(0.05, 0.3)": lambda r, m: r.normal(0.05, 0.3, m),
    "difference of two betas": lambda r, m: r.beta(2, 2, m) - r.beta(2, 3, m),
    "heavy-tailed (t2 x 0.1, clipped to +-1)": lambda r, m: np.clip(
        r.standard_t(2, m) * 0.1, -1, 1
    ),
    "3 large deltas among small ones": lambda r, m: np.concatenate(
        [r.normal(0, 0.02, m - 3), [0.9, -0.8, 0.7]]
    ),
    "strong effect: normal(0.3, 0.3)": lambda r, m: r.normal(0.3, 0.3, m),
    "grid +-0.5 and one 0.123 (exact path)": lambda r, m: np.concatenate(
        [r.choice([-0.5, 0.5], m - 1, p=[0.3, 0.7]), [0.123]]
    ),
}

GRADES = np.array([-1.0, -0.75, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0])
WEIGHTS = np.array([1, 1, 2, 4, 6, 4, 2, 1]) / 21


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=25)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = (EXACT_MAX + 1, EXACT_MAX + 4)
    print(f"## Sign-flip p-value error past the exact range (m = {sizes[0]} and {sizes[1]})\n")
    print(f"{args.draws} seeded draws (seed {args.seed}) per kind and size\n")
    print("| deltas | smallest exact p | largest abs. error | largest rel. error |")
    print("|---|---|---|---|")
    for name, draw in KINDS.items():
        worst_abs = worst_rel = 0.0
        smallest = 1.0
        for m in sizes:
            for _ in range(args.draws):
                d = draw(rng, m)
                d = d[d != 0]
                exact = exact_p(d)
                got = float(sign_flip_p(d[None, :])[0])
                smallest = min(smallest, exact)
                worst_abs = max(worst_abs, abs(got - exact))
                worst_rel = max(worst_rel, abs(got - exact) / exact)
        print(f"| {name} | {smallest:.2g} | {worst_abs:.2g} | {worst_rel:.2%} |")
    cells = []
    for m in (100, 400, 1_500):
        worst_abs = worst_rel = 0.0
        for _ in range(args.draws):
            d = rng.choice(GRADES, m, p=WEIGHTS)
            exact = float(sign_flip_p(d[None, :])[0])  # the grid convolution
            got = float(saddle_p(d[None, :])[0])  # the lattice-corrected saddle point
            worst_abs = max(worst_abs, abs(got - exact))
            worst_rel = max(worst_rel, abs(got - exact) / exact)
        cells.append(f"m = {m}: {worst_abs:.2g} abs., {worst_rel:.2%} rel.")
    print(f"\nLattice correction alone (quarters) against the convolution: {'; '.join(cells)}")


if __name__ == "__main__":
    main()
