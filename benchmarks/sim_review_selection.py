"""What `eb.review(select="stratified")` buys over `"random"` for a fixed label budget.

Each simulated eval has N = 1,000 judged cases and a budget of n = 50 labels. A case's human
grade h is 1–5 (probabilities .10, .15, .25, .30, .20), on [0, 1] as (h − 1) / 4. The judge
(f, on [0, 1]) is a 1–5 grade too:

- lenient: h, one point higher with probability .5 at grades 1–3 (a bias that depends on
  the grade: the case the strata are for), capped at 5;
- noisy: h ± 1 point at random with probability .4, clipped to 1–5 (no bias).

The n labelled cases are drawn by `pick_samples` (`_model/_label_pick.py`, what `eb.review`
calls) with `"random"` or `"stratified"` (proportional allocation over the judge's grades),
and the corrected mean is `corrected_mean` (`_model/_agreement_stats.py`, what `eb.agreement`
calls). Per design: the estimator's root mean squared error against the human mean of the
population the cases are drawn from (0.5875), the mean CI width, and the CI's coverage of it.
The interval is the one `eb.agreement` reports, computed as for a uniform draw: a stratified
draw makes the estimate itself closer (its RMSE) while the interval, which does not know the
strata, stays as wide and covers a little more than 95 %.

Run: python benchmarks/sim_review_selection.py [--sims 2000] [--seed 20]
"""

from __future__ import annotations

import argparse

import numpy as np

from evalbook._model._agreement_stats import corrected_mean
from evalbook._model._label_pick import pick_samples

PROBS = np.array([0.10, 0.15, 0.25, 0.30, 0.20])
TRUE_MEAN = float(np.array([0.0, 0.25, 0.5, 0.75, 1.0]) @ PROBS)  # 0.5875, the estimand
N, BUDGET = 1_000, 50


def _eval(rng: np.random.Generator, judge: str) -> tuple[np.ndarray, np.ndarray]:
    """One eval's human and judge grades, on [0, 1]."""
    h = rng.choice(5, size=N, p=PROBS) + 1
    if judge == "lenient":
        f = np.minimum(h + ((h <= 3) & (rng.random(N) < 0.5)), 5)
    else:
        step = np.where(rng.random(N) < 0.4, rng.choice([-1, 1], size=N), 0)
        f = np.clip(h + step, 1, 5)
    return (h - 1) / 4, (f - 1) / 4


def simulate(judge: str, select: str, sims: int, seed: int) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    errors, widths, covered = [], [], 0
    for s in range(sims):
        h, f = _eval(rng, judge)
        picked = pick_samples(f, BUDGET, select, seed=s)
        labels = np.full(N, np.nan)
        labels[picked] = h[picked]
        value, low, high = corrected_mean(f, labels)
        truth = TRUE_MEAN
        errors.append(value - truth)
        widths.append(high - low)
        covered += low <= truth <= high
    e = np.array(errors)
    return {
        "rmse": float(np.sqrt(np.mean(e**2))),
        "width": float(np.mean(widths)),
        "coverage": covered / sims,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    print(f"## Label selection: N = {N:,} judged cases, {BUDGET} labels, {args.sims:,} sims\n")
    print("| judge | select | RMSE of the corrected mean | mean CI width | coverage |")
    print("|---|---|---|---|---|")
    for judge in ("lenient", "noisy"):
        rows = {sel: simulate(judge, sel, args.sims, args.seed) for sel in ("random", "stratified")}
        for sel, r in rows.items():
            print(f"| {judge} | {sel} | {r['rmse']:.4f} | {r['width']:.4f} | "
                  f"{100 * r['coverage']:.1f} % |")  # fmt: skip
        change = rows["stratified"]["rmse"] / rows["random"]["rmse"] - 1
        print(f"| {judge} | stratified vs random | {100 * change:+.1f} % | | |")
    print()


if __name__ == "__main__":
    main()
