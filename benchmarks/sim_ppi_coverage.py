"""Coverage of the prediction-powered mean's 95 % CI when the labels are among the judged cases.

Each simulated eval has N judged cases; a person labelled a random n of them (¼, ½ or all).
A case's human value h is a 1–5 grade on [0, 1] (0, .25, .5, .75, 1 with probabilities
.10, .15, .25, .30, .20: mean 0.5875, the estimand). Three judges:

- good: h plus noise (sd 0.1), clipped to [0, 1];
- compressed: 0.6 + 0.4 (h − 0.5) plus noise (sd 0.05): biased, and a squeezed scale;
- uninformative: uniform on [0, 1], whatever h is.

Intervals per eval:

- nested (evalbook): `corrected_mean` of `_model/_agreement_stats.py`, the function
  `eb.agreement` calls — Var(h)/N + (1/n − 1/N) Var(f − h), t on n − 1 df; with every case
  labelled, the labels' own interval;
- old: the formula before issue 30, Var(f)/N + Var(f − h)/n with z (no covariance term);
- labels only: the labels' own interval (`mean_ci` of the n labels, the summary's rule), the
  width every row is compared with.

`--ppi-python` runs instead, in a venv with ppi-python (`pip install ppi-python`) and without
evalbook, the reference package on the paper's disjoint split (n labelled cases, N − n other
judged ones): classical PPI (lam=1) and PPI++ (lam tuned).

Run: python benchmarks/sim_ppi_coverage.py [--sims 2000] [--n 200] [--seed 30]
"""

from __future__ import annotations

import argparse
import math
from typing import NamedTuple

import numpy as np

GRADES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
PROBS = np.array([0.10, 0.15, 0.25, 0.30, 0.20])
TRUE_MEAN = float(GRADES @ PROBS)  # 0.5875
JUDGES = ("good", "compressed", "uninformative")
FRACTIONS = (("¼", 0.25), ("½", 0.5), ("all", 1.0))
Z95 = 1.959963984540054


class Row(NamedTuple):
    """What one design found: coverage of each interval, widths relative to the labels' own."""

    nested: float
    old: float
    labels: float
    nested_width: float  # mean nested width / mean labels-only width
    old_width: float
    narrower: int  # evals whose nested CI is narrower than the labels' own (all labelled)


def draw(rng: np.random.Generator, judge: str, n_cases: int) -> tuple[np.ndarray, np.ndarray]:
    """One eval: the human values and the judge's values of N cases."""
    h = rng.choice(GRADES, size=n_cases, p=PROBS)
    if judge == "good":
        f = np.clip(h + rng.normal(0, 0.1, n_cases), 0, 1)
    elif judge == "compressed":
        f = np.clip(0.6 + 0.4 * (h - 0.5) + rng.normal(0, 0.05, n_cases), 0, 1)
    else:
        f = rng.random(n_cases)
    return h, f


def _old(f: np.ndarray, h_l: np.ndarray, f_l: np.ndarray) -> tuple[float, float]:
    r = f_l - h_l
    value = f.mean() - r.mean()
    half = Z95 * math.sqrt(f.var(ddof=1) / f.size + r.var(ddof=1) / r.size)
    return value - half, value + half


def simulate(sims: int, judge: str, fraction: float, n_cases: int = 200, seed: int = 30) -> Row:
    """Coverage of the three intervals over `sims` seeded evals of one design."""
    from evalbook._model._agreement_stats import corrected_mean
    from evalbook._model._stats import mean_ci

    rng = np.random.default_rng([seed, JUDGES.index(judge), round(fraction * 4)])
    n = max(2, round(fraction * n_cases))
    hits = np.zeros(3)
    widths = np.zeros(3)
    narrower = 0
    for _ in range(sims):
        h, f = draw(rng, judge, n_cases)
        labelled = rng.permutation(n_cases)[:n]
        known = np.full(n_cases, np.nan)
        known[labelled] = h[labelled]
        got = corrected_mean(f, known)
        old = _old(f, h[labelled], f[labelled])
        _, lo, hi = mean_ci(h[labelled])
        for i, (low, high) in enumerate(((got.ci_low, got.ci_high), old, (lo, hi))):
            hits[i] += low <= TRUE_MEAN <= high
            widths[i] += high - low
        narrower += (got.ci_high - got.ci_low) < (hi - lo) - 1e-12 and n == n_cases
    cover = hits / sims
    return Row(*cover.tolist(), widths[0] / widths[2], widths[1] / widths[2], narrower)


def reference(
    sims: int, judge: str, fraction: float, n_cases: int = 200, seed: int = 30
) -> tuple[float, float]:
    """Coverage of ppi-python's classical PPI and PPI++ on the disjoint split."""
    from ppi_py import ppi_mean_ci

    rng = np.random.default_rng([seed, JUDGES.index(judge), round(fraction * 4), 1])
    n = round(fraction * n_cases)
    hits = np.zeros(2)
    for _ in range(sims):
        h, f = draw(rng, judge, n_cases)
        for i, lam in enumerate((1.0, None)):
            low, high = ppi_mean_ci(h[:n], f[:n], f[n:], alpha=0.05, lam=lam)
            hits[i] += float(np.ravel(low)[0]) <= TRUE_MEAN <= float(np.ravel(high)[0])
    return (float(hits[0] / sims), float(hits[1] / sims))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--n", type=int, default=200, help="judged cases per eval")
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--ppi-python", action="store_true", help="the reference package instead")
    args = parser.parse_args()
    mc = math.sqrt(0.95 * 0.05 / args.sims)
    if args.ppi_python:
        print(f"### ppi-python on the disjoint split ({args.sims:,} sims, N = {args.n}; "
              f"Monte Carlo ±{mc:.1%})\n")  # fmt: skip
        print("| judge | labelled | classical PPI (lam=1) | PPI++ |")
        print("|---|---|---|---|")
        for judge in JUDGES:
            for label, fraction in FRACTIONS[:2]:
                ppi, tuned = reference(args.sims, judge, fraction, args.n, args.seed)
                print(f"| {judge} | {label} | {ppi:.1%} | {tuned:.1%} |")
        return
    print(f"### Coverage of the corrected mean's 95 % CI ({args.sims:,} sims per design, "
          f"N = {args.n}, truth {TRUE_MEAN}; Monte Carlo ±{mc:.1%})\n")  # fmt: skip
    print("| judge | labelled | nested (now) | old formula | labels only | width now | "
          "width old | narrower than the labels' |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for judge in JUDGES:
        for label, fraction in FRACTIONS:
            r = simulate(args.sims, judge, fraction, args.n, args.seed)
            narrower = str(r.narrower) if fraction == 1.0 else "—"
            print(
                f"| {judge} | {label} | {r.nested:.1%} | {r.old:.1%} | {r.labels:.1%} | "
                f"{r.nested_width:.2f}× | {r.old_width:.2f}× | {narrower} |"
            )


if __name__ == "__main__":
    main()
