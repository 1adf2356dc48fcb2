"""Early stopping (docs/spend-less.md): wrong decisions under a look after every sample, what
stopping saves, and `precise`'s final width and coverage.

Each simulated run draws paired deltas of a 0/1 primary score, one per case, iid: +1 (the
candidate passes where the base failed) with probability p₊, −1 with p₋, else 0 (20 % of the
pairs differ unless said otherwise); the true delta is p₊ − p₋. The confidence sequence is the
one `eb.run(stop_when=...)` updates (`ConfidenceSequence` of `_model/_confseq.py`, α = 0.05),
checked after every sample, and `eb.decided(max_drop=X)`'s rule (`lower_decision`) stops the run.

- **null**: the true delta is −X exactly (X = 2 pp), the boundary: any decision is wrong. Beside
  it the naive rule on the same draws: the fixed-n 95 % interval (mean ± 1.96 · sd/√n) checked
  after every sample from the 10th, and that interval checked once, at the end.
- **savings**: a true +5 pp over a 2,000-case set (X = 2 pp): the samples run (median, quartiles),
  the share of the cost saved (samples not run / 2,000) and the decisions; with no difference,
  how often it stops (and how) and how often it runs to the end.
- **precise**: `eb.precise(half_width=H)` on a 0/1 score with mean 0.7 and a judge-like score
  (Beta(4, 2)): the runs stop once the interval is at most ±H; the widest final half-width (≤ H
  in every run) and the share of final intervals holding the true mean (≥ 95 %).

Run: python benchmarks/sim_early_stop.py [--sims 2000] [--cases 2000] [--seed 18]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from evalbook._model._confseq import ConfidenceSequence

MAX_DROP = 0.02
DISCORDANT = 0.2
Z975 = 1.959963984540054


class Decisions(NamedTuple):
    sims: int
    stopped_at: np.ndarray  # samples run (the cap when it ran to the end)
    decision: np.ndarray  # "non_inferior" | "inferior" | "undecided"
    naive_wrong: float  # the naive repeated fixed-n rule decided (only meaningful at the null)
    fixed_once_wrong: float  # the fixed-n interval, checked once at the end, excluded −X


def _deltas(delta: float) -> Callable[[np.random.Generator, int], np.ndarray]:
    up = (DISCORDANT + delta) / 2
    down = (DISCORDANT - delta) / 2

    def draw(rng: np.random.Generator, sims: int) -> np.ndarray:
        u = rng.random(sims)
        return np.where(u < up, 1.0, np.where(u < up + down, -1.0, 0.0))

    return draw


def decide(delta: float, sims: int, cases: int, seed: int, max_drop: float = MAX_DROP) -> Decisions:
    """`sims` runs of at most `cases` samples with a look after every sample."""
    rng = np.random.default_rng(seed)
    draw = _deltas(delta)
    cs = ConfidenceSequence((sims,), lo=-1.0, hi=1.0)
    stopped_at = np.full(sims, cases)
    decision = np.full(sims, "undecided", dtype=object)
    naive = np.zeros(sims, dtype=bool)
    total = np.zeros(sims)
    squares = np.zeros(sims)
    n = 0
    for n in range(1, cases + 1):
        x = draw(rng, sims)
        cs.update(x)
        total += x
        squares += x * x
        open_ = decision == "undecided"
        above, below = cs.lows > -max_drop, cs.highs < -max_drop
        for name, hit in (("non_inferior", above), ("inferior", below)):
            now = open_ & hit
            decision[now] = name
            stopped_at[now] = n
        if n >= 10:
            mean = total / n
            sd = np.sqrt(np.maximum(squares / n - mean**2, 0.0) * n / (n - 1))
            half = Z975 * sd / np.sqrt(n)
            naive |= (mean - half > -max_drop) | (mean + half < -max_drop)
        if not (decision == "undecided").any() and n >= 10:
            break
    mean = total / cases
    sd = np.sqrt(np.maximum(squares / cases - mean**2, 0.0) * cases / (cases - 1))
    half = Z975 * sd / np.sqrt(cases)
    once = (mean - half > -max_drop) | (mean + half < -max_drop)
    once_rate = float(once.mean()) if n == cases else float("nan")  # every run decided before
    return Decisions(sims, stopped_at, decision, float(naive.mean()), once_rate)


class Precise(NamedTuple):
    sims: int
    widest: float  # the widest final half-width
    coverage: float  # share of final intervals holding the true mean
    median_n: float
    reached: float  # share of runs that reached ±H before the cap


def precise(
    draw: Callable[[np.random.Generator, int], np.ndarray],
    truth: float,
    half_width: float,
    sims: int,
    cap: int,
    seed: int,
) -> Precise:
    rng = np.random.default_rng(seed)
    cs = ConfidenceSequence((sims,))
    low = np.zeros(sims)
    high = np.ones(sims)
    at = np.full(sims, cap)
    done = np.zeros(sims, dtype=bool)
    for n in range(1, cap + 1):
        cs.update(draw(rng, sims))
        now = ~done & ((cs.highs - cs.lows) / 2 <= half_width)
        low[now], high[now], at[now] = cs.lows[now], cs.highs[now], n
        done |= now
        if done.all():
            break
    low[~done], high[~done] = cs.lows[~done], cs.highs[~done]
    return Precise(
        sims,
        float(((high - low) / 2)[done].max()) if done.any() else float("nan"),
        float(((low <= truth) & (truth <= high)).mean()),
        float(np.median(at)),
        float(done.mean()),
    )


def _table(results: list[tuple[str, Decisions]], cases: int) -> str:
    lines = [
        "| design | sims | non-inferior | inferior | ran to the end | samples run: median "
        "(quartiles) | cost saved |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, d in results:
        share = {k: float((d.decision == k).mean()) for k in ("non_inferior", "inferior")}
        q1, med, q3 = np.percentile(d.stopped_at, [25, 50, 75])
        lines.append(
            f"| {name} | {d.sims:,} | {share['non_inferior']:.1%} | {share['inferior']:.1%} | "
            f"{float((d.decision == 'undecided').mean()):.1%} | {med:,.0f} ({q1:,.0f}–{q3:,.0f}) "
            f"| {1 - d.stopped_at.mean() / cases:.1%} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=2000)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--half-width", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=18)
    args = parser.parse_args()
    sims, cases = args.sims, args.cases

    null = decide(-MAX_DROP, sims, cases, args.seed)
    wrong = float((null.decision != "undecided").mean())
    print(f"## Early stopping at the null boundary (true delta −{MAX_DROP:.0%}, a look per sample)")
    print()
    print("| rule | sims | wrong decisions |")
    print("|---|---:|---:|")
    print(f"| eb.decided(max_drop=0.02): betting confidence sequence | {sims:,} | {wrong:.1%} |")
    naive, once = null.naive_wrong, null.fixed_once_wrong
    print(f"| naive: fixed-n 95 % interval after every sample | {sims:,} | {naive:.1%} |")
    print(f"| fixed-n 95 % interval, once at n = {cases:,} | {sims:,} | {once:.1%} |")
    print()
    print(f"## What stopping saves ({cases:,} cases, max_drop = {MAX_DROP:.0%})")
    print()
    better = decide(0.05, sims, cases, args.seed + 1)
    same = decide(0.0, sims, cases, args.seed + 2)
    print(_table([("true +5 pp", better), ("no difference", same), ("at −2 pp", null)], cases))
    print()
    h = args.half_width
    print(f"## eb.precise(half_width={h}): final half-width and coverage")
    print()
    print(
        "| score | sims | widest final half-width | coverage | samples run: median | reached ±H |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    designs: list[tuple[str, Callable[[np.random.Generator, int], np.ndarray], float]] = [
        ("0/1, mean 0.7", lambda rng, k: rng.binomial(1, 0.7, k).astype(float), 0.7),
        ("Beta(4, 2), mean 2/3", lambda rng, k: rng.beta(4, 2, k), 4 / 6),
    ]
    for k, (name, draw, truth) in enumerate(designs):
        p = precise(draw, truth, h, sims, 20 * cases, args.seed + 10 + k)
        print(
            f"| {name} | {sims:,} | {p.widest:.4f} | {p.coverage:.1%} | {p.median_n:,.0f} | "
            f"{p.reached:.1%} |"
        )


if __name__ == "__main__":
    main()
