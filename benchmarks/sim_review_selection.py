"""What `eb.review(select="stratified")` buys over `"random"` for a fixed label budget.

Each simulated eval has N = 1,000 judged cases and a budget of n = 50 labels. A case's human
grade h is 1–5 (probabilities .10, .15, .25, .30, .20), on [0, 1] as (h − 1) / 4. The judge
(f, on [0, 1]) is a 1–5 grade too:

- lenient: h, one point higher with probability .5 at grades 1–3 (a bias that depends on
  the grade), capped at 5;
- noisy: h ± 1 point at random with probability .4, clipped to 1–5 (no bias);
- uneven: exact at grades 4–5, a uniform guess among 1–3 at grades 1–3 (an error rate that
  differs by grade: the judge's 4s and 5s need no correction, its 1–3s a large one).

The n labelled cases are drawn by `pick_samples` (`_model/_label_pick.py`, what `eb.review`
calls) with `"random"` or `"stratified"` (proportional allocation over the judge's grades).
The corrected mean is what `eb.agreement` reports: `corrected_mean` (the uniform interval)
for a random draw, and for a stratified one both `stratified_corrected_mean` over the draw's
strata (`label_strata`; what `eb.agreement` uses for the labels of `run.labels()`, which keep
their draw) and `corrected_mean` (what labels passed on without their draw get). Per design:
the estimator's root mean squared error against the human mean of the population the cases
are drawn from (0.5875), the mean CI width, and the CI's coverage of it.

Run: python benchmarks/sim_review_selection.py [--sims 2000] [--seed 20]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from evalbook._model._agreement_stats import corrected_mean, stratified_corrected_mean
from evalbook._model._label_pick import label_strata, pick_samples

PROBS = np.array([0.10, 0.15, 0.25, 0.30, 0.20])
TRUE_MEAN = float(np.array([0.0, 0.25, 0.5, 0.75, 1.0]) @ PROBS)  # 0.5875, the estimand
N, BUDGET = 1_000, 50
JUDGES = ("lenient", "noisy", "uneven")
# (selection, interval): random with its (uniform) interval; stratified with the stratified
# interval (labels that keep their draw) and with the uniform one (labels without it)
DESIGNS = (("random", "uniform"), ("stratified", "stratified"), ("stratified", "uniform"))


def _eval(rng: np.random.Generator, judge: str) -> tuple[np.ndarray, np.ndarray]:
    """One eval's human and judge grades, on [0, 1]."""
    h = rng.choice(5, size=N, p=PROBS) + 1
    if judge == "lenient":
        f = np.minimum(h + ((h <= 3) & (rng.random(N) < 0.5)), 5)
    elif judge == "noisy":
        step = np.where(rng.random(N) < 0.4, rng.choice([-1, 1], size=N), 0)
        f = np.clip(h + step, 1, 5)
    else:
        f = np.where(h >= 4, h, rng.integers(1, 4, size=N))
    return (h - 1) / 4, (f - 1) / 4


def simulate(judge: str, sims: int, seed: int) -> dict[tuple[str, str], dict[str, float]]:
    """Every design's RMSE, mean CI width and coverage on the same `sims` evals."""
    rng = np.random.default_rng(seed)
    errors: dict[tuple[str, str], list[float]] = {d: [] for d in DESIGNS}
    widths: dict[tuple[str, str], list[float]] = {d: [] for d in DESIGNS}
    covered = dict.fromkeys(DESIGNS, 0)
    for s in range(sims):
        h, f = _eval(rng, judge)
        for select in ("random", "stratified"):
            picked = pick_samples(f, BUDGET, select, seed=s)
            labels = np.full(N, np.nan)
            labels[picked] = h[picked]
            for design in (d for d in DESIGNS if d[0] == select):
                if design[1] == "stratified":
                    value, low, high = stratified_corrected_mean(f, labels, label_strata(f))[0]
                else:
                    value, low, high = corrected_mean(f, labels)
                errors[design].append(value - TRUE_MEAN)
                widths[design].append(high - low)
                covered[design] += low <= TRUE_MEAN <= high
    return {
        d: {
            "rmse": float(np.sqrt(np.mean(np.array(errors[d]) ** 2))),
            "width": float(np.mean(widths[d])),
            "coverage": covered[d] / sims,
        }
        for d in DESIGNS
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sims", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args()
    wall, cpu = time.perf_counter(), time.process_time()
    print(f"## Label selection: N = {N:,} judged cases, {BUDGET} labels, {args.sims:,} sims\n")
    print("| judge | select | interval | RMSE | mean CI width | width vs random | coverage |")
    print("|---|---|---|---|---|---|---|")
    for judge in JUDGES:
        rows = simulate(judge, args.sims, args.seed)
        base = rows[DESIGNS[0]]
        for (select, interval), r in rows.items():
            change = (
                f"{100 * (r['width'] / base['width'] - 1):+.1f} %" if select != "random" else ""
            )
            print(f"| {judge} | {select} | {interval} | {r['rmse']:.4f} | {r['width']:.4f} | "
                  f"{change} | {100 * r['coverage']:.1f} % |")  # fmt: skip
    print(f"\n{time.perf_counter() - wall:.1f} s wall, {time.process_time() - cpu:.1f} s CPU")


if __name__ == "__main__":
    main()
