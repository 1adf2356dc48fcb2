"""Which samples a labeller sees (`eb.review`): a seeded draw, random or stratified.

`"random"`: a seeded uniform draw of `n` of the samples. `"stratified"`: the samples grouped by
the judge's value (each distinct raw value a stratum when there are at most `MAX_STRATA`, else
`MAX_STRATA` quantile bins) and `n` allocated in proportion to the strata's sizes (largest
remainder), each stratum drawn uniformly. Proportional allocation keeps every sample's chance
of being labelled (nearly) equal, so labels passed on without their draw still give an
unbiased corrected mean; with the draw recorded (`label_strata`'s stratum of each label, see
`eb.review`), `eb.agreement` uses the stratified interval, narrower where the judge's error
differs by stratum (benchmarks/sim_review_selection.py measures it). The draw is shuffled
(seeded), so a labeller does not see one stratum after another.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_STRATA", "SELECTIONS", "label_strata", "pick_samples"]

SELECTIONS = ("random", "stratified")
MAX_STRATA = 10


def label_strata(values: np.ndarray) -> np.ndarray:
    """Each value's stratum: its distinct value's rank, or its quantile bin (ordered as the
    values are, so adjacent strata are neighbours).

    Example:
        >>> label_strata(np.array([5.0, 1.0, 3.0, 1.0])).tolist()
        [2, 0, 1, 0]
    """
    distinct = np.unique(values)
    if len(distinct) <= MAX_STRATA:
        return np.searchsorted(distinct, values)
    edges = np.quantile(values, np.linspace(0, 1, MAX_STRATA + 1)[1:-1])
    return np.searchsorted(edges, values, side="right")


def _allocate(sizes: np.ndarray, n: int) -> np.ndarray:
    """`n` split in proportion to `sizes` (largest remainder; ties to the larger stratum)."""
    share = sizes * (n / sizes.sum())
    out = np.floor(share).astype(int)
    order = np.lexsort((-sizes, -(share - out)))  # largest remainder first
    out[order[: n - int(out.sum())]] += 1
    taken: np.ndarray = np.minimum(out, sizes)
    return taken


def pick_samples(values: np.ndarray, n: int, select: str, seed: int) -> np.ndarray:
    """Positions (into `values`, the judge's raw value of each candidate sample) of the `n`
    samples to label, in the order shown; all of them when there are at most `n`.

    Example:
        >>> v = np.array([1, 1, 1, 1, 1, 1, 5, 5, 5, 5.0])
        >>> sorted(v[pick_samples(v, 5, "stratified", seed=0)].tolist())
        [1.0, 1.0, 1.0, 5.0, 5.0]
    """
    rng = np.random.default_rng(seed)
    m = len(values)
    if n >= m:
        chosen = np.arange(m)
    elif select == "random":
        chosen = rng.permutation(m)[:n]
    else:
        strata = label_strata(values)
        labels, sizes = np.unique(strata, return_counts=True)
        takes = _allocate(sizes, n)
        parts = [
            rng.permutation(np.flatnonzero(strata == s))[:k]
            for s, k in zip(labels, takes, strict=True)
        ]
        chosen = np.concatenate(parts) if parts else np.arange(0)
    return rng.permutation(chosen)
