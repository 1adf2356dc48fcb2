"""Which ranks of a leaderboard are real: rank intervals and tiers from paired tests.

Every pair of runs is compared on the cases all the runs share (each case's value of the
ranked score: its epochs reduced, as `eb.compare` pairs them): 0/1 values with the exact
McNemar test `eb.compare` runs; other values with Student's paired t test, the test of the
t interval `eb.compare` reports for them (its p-value is the sign-flip test's, which agrees
with t at a board's sizes, and costs ~10 ms a pair where t costs nothing). Where a pair's
deltas are all equal, t is undefined and the sign-flip test decides (2^(1-m) for m equal
non-zero deltas: two cases never separate two runs).
Holm's adjustment runs across all the pairs, so the pairs called different are all truly
different with 95 % confidence at once (the family-wise error rate is at most 5 %).

From those verdicts (docs/comparing.md, "Leaderboards"):

- `rank_low` = 1 + the runs separably better; `rank_high` = N - the runs separably worse:
  the ranks a run could hold. When every verdict is right, each run's true rank lies in its
  interval, so all of them do at once with at least 95 % confidence.
- `tier`: tier 1 holds the best run and every run not separable from it; tier 2 starts at the
  best run left, and so on. A run's tier is higher than another's only if it is separably
  worse than that tier's first run.

One pass: the pairs' discordant counts, and their deltas' variances, are matrix products of
the runs' values, so 50 runs of 10,000 cases take well under 5 seconds
(benchmarks/bench_ranks.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .._model._paired import holm, is_binary, mcnemar_p, t_two_sided_p
from .._model._permutation import sign_flip_p

__all__ = ["ALPHA", "Ranks", "rank_intervals"]

ALPHA = 0.05  # the family-wise error rate of the pairwise verdicts (Holm)


@dataclass(frozen=True)
class Ranks:
    """Per run (in the order given): its rank interval and tier (0 where it has no value), and
    how many cases all runs share."""

    rank_low: NDArray[np.int64]
    rank_high: NDArray[np.int64]
    tier: NDArray[np.int64]
    n_shared: int
    separable: NDArray[np.bool_]  # [i, j]: runs i and j differ after Holm's adjustment


def rank_intervals(values: NDArray[np.float64], means: NDArray[np.float64]) -> Ranks:
    """Rank intervals and tiers of runs from their per-case values.

    `values` is runs x shared cases (no NaN); `means` orders the runs (higher is better; NaN: a
    run without a value, which gets no interval, tier 0). With fewer than two shared cases
    nothing is separable: every run with a value spans every rank.

    Example:
        >>> import numpy as np
        >>> strong, weak = np.ones(40), np.r_[np.ones(5), np.zeros(35)]
        >>> r = rank_intervals(np.vstack([strong, strong, weak]), np.array([1.0, 1.0, 0.125]))
        >>> r.rank_low.tolist(), r.rank_high.tolist(), r.tier.tolist()
        ([1, 1, 3], [2, 2, 3], [1, 1, 2])
    """
    x = np.asarray(values, dtype=np.float64)
    means = np.asarray(means, dtype=np.float64)
    n_runs, n_cases = means.size, x.shape[1] if x.ndim == 2 else 0
    valued = np.flatnonzero(~np.isnan(means))
    separable = np.zeros((n_runs, n_runs), dtype=bool)
    if valued.size >= 2 and n_cases >= 2:
        i, j = np.triu_indices(valued.size, k=1)
        left, right = valued[i], valued[j]
        p = _pair_p_values(x[valued], i, j)
        verdict = holm(p) < ALPHA
        separable[left[verdict], right[verdict]] = True
        separable[right[verdict], left[verdict]] = True
    better = separable & (means[None, :] > means[:, None])  # [i, j]: j separably better than i
    worse = separable & (means[None, :] < means[:, None])
    n_valued = valued.size
    rank_low = np.zeros(n_runs, dtype=np.int64)
    rank_high = np.zeros(n_runs, dtype=np.int64)
    rank_low[valued] = 1 + better[valued].sum(axis=1)
    rank_high[valued] = n_valued - worse[valued].sum(axis=1)
    return Ranks(rank_low, rank_high, _tiers(means, separable), n_cases, separable)


def _pair_p_values(
    x: NDArray[np.float64], i: NDArray[np.intp], j: NDArray[np.intp]
) -> NDArray[np.float64]:
    """The paired test's p-value of each pair (i[k], j[k]) of rows of `x`."""
    if is_binary(x):
        # discordant counts of every pair at once: j right where i is wrong, and back
        wrong = 1.0 - x
        up = (wrong @ x.T)[i, j]
        down = (x @ wrong.T)[i, j]
        return mcnemar_p(np.rint(up).astype(np.int64), np.rint(down).astype(np.int64))
    # Student's paired t on each pair's deltas, from the runs' covariance: the variance of
    # x_j - x_i is var_i + var_j - 2 cov_ij, so no pair's deltas are ever built
    n = x.shape[1]
    cov = np.cov(x, ddof=1)
    delta = x.mean(axis=1)[j] - x.mean(axis=1)[i]
    var = np.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 0.0)
    out = np.empty(i.size, dtype=np.float64)
    for k, (d, v) in enumerate(zip(delta.tolist(), var.tolist(), strict=True)):
        if v > 0.0 and abs(d) > 0.0:
            out[k] = t_two_sided_p(d / math.sqrt(v / n), n - 1)
        else:  # every delta equal: t is undefined, and its test is the sign-flip test's
            out[k] = float(sign_flip_p(x[j[k]] - x[i[k]])[0])
    return out


def _tiers(means: NDArray[np.float64], separable: NDArray[np.bool_]) -> NDArray[np.int64]:
    """Tier of each run: the best run left starts a tier that takes every run left that is not
    separable from it; 0 for a run without a value."""
    tier = np.zeros(means.size, dtype=np.int64)
    # best first; equal means in the order given (a stable sort of the negated means)
    order = [int(k) for k in np.argsort(-means, kind="stable") if not np.isnan(means[k])]
    left = list(order)
    current = 0
    while left:
        current += 1
        leader = left[0]
        tier[leader] = current
        rest = []
        for k in left[1:]:
            if separable[leader, k]:
                rest.append(k)
            else:
                tier[k] = current
        left = rest
    return tier
