"""Agreement statistics between two raters (a judge and a person), on weights per pair.

Every statistic is computed from a weight matrix `w` (one row per replicate, one column per
compared pair): the point estimate is the row of ones, a bootstrap replicate is the row of how
many times each pair was drawn. So the point estimate and the bootstrap run through the same
code, vectorised over replicates. Formulas and their references: docs/judges.md
("Validating a judge").
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._stats import NO_SPREAD, mean_ci, t975, wilson

__all__ = [
    "KINDS",
    "STATISTICS",
    "CorrectedMean",
    "agreement_statistics",
    "case_draws",
    "corrected_mean",
    "percentile_ci",
    "stratified_corrected_mean",
    "stratified_terms",
]

KINDS = ("ordinal", "nominal", "interval")
STATISTICS = ("exact_agreement", "cohen_kappa", "krippendorff_alpha", "spearman", "offset")

# A replicate is computed in chunks of this many rows: the gathered (replicates x pairs)
# matrices of the rank statistics stay a few megabytes whatever n_boot is.
_CHUNK = 256


class CorrectedMean(NamedTuple):
    """A prediction-powered estimate of the human-scale mean, with its 95 % CI."""

    value: float
    ci_low: float
    ci_high: float


def _codes(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sorted distinct values and each value's position among them."""
    levels, codes = np.unique(values, return_inverse=True)
    return levels, codes.reshape(-1)


def _counts(w: np.ndarray, codes: np.ndarray, k: int) -> np.ndarray:
    """Weighted count of each level per replicate: shape (replicates, k)."""
    order = np.argsort(codes, kind="stable")
    present, starts = np.unique(codes[order], return_index=True)
    out = np.zeros((w.shape[0], k))
    out[:, present] = np.add.reduceat(w[:, order], starts, axis=1)
    return out


def _midranks(counts: np.ndarray) -> np.ndarray:
    """Each level's mid-rank (minus 1/2) given its weighted counts: ties share their mean rank."""
    return np.cumsum(counts, axis=1) - counts / 2


def _sum(w: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Weighted sum per replicate of values shared by every replicate (1-D) or their own (2-D)."""
    return np.asarray(w @ v if v.ndim == 1 else (w * v).sum(axis=1))


def _pearson(w: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Weighted Pearson correlation per replicate (NaN when one side does not vary)."""
    n = w.sum(axis=1)
    ma, mb = _sum(w, a) / n, _sum(w, b) / n
    cov = _sum(w, a * b) / n - ma * mb
    va = _sum(w, a * a) / n - ma * ma
    vb = _sum(w, b * b) / n - mb * mb
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.asarray(cov / np.sqrt(va * vb))


def _quadratic(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quadratic-weighted kappa and the interval-metric alpha of values `x`, `y` per replicate.

    Kappa = 1 - observed mean (x - y)^2 / its expectation under independent marginals
    (= var x + var y + (mean x - mean y)^2, population moments): Cohen's weighted kappa with
    weights (x - y)^2, which is also Lin's concordance correlation coefficient. Alpha pools
    the 2n values z: 1 - (2n - 1) sum (x - y)^2 / (2n sum z^2 - (sum z)^2).
    """
    n = w.sum(axis=1)
    sx, sy = _sum(w, x), _sum(w, y)
    sxx, syy = _sum(w, x * x), _sum(w, y * y)
    d = _sum(w, (x - y) ** 2)
    mx, my = sx / n, sy / n
    expected = (sxx / n - mx * mx) + (syy / n - my * my) + (mx - my) ** 2
    total = 2 * n
    spread = total * (sxx + syy) - (sx + sy) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1 - (d / n) / expected
        alpha = 1 - (total - 1) * d / spread
    return np.asarray(kappa), np.asarray(alpha)


def _chunk_statistics(w: np.ndarray, x: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    """The statistics of `STATISTICS` (columns) for each row of weights `w`."""
    n = w.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = _sum(w, (x == y).astype(float)) / n
        offset = _sum(w, y - x) / n
    levels, codes = _codes(np.concatenate([x, y]))
    cx, cy = codes[: len(x)], codes[len(x) :]
    nx, ny = _counts(w, cx, len(levels)), _counts(w, cy, len(levels))
    if kind == "nominal":
        with np.errstate(divide="ignore", invalid="ignore"):
            expected = (nx * ny).sum(axis=1) / (n * n)
            kappa = (exact - expected) / (1 - expected)
            pooled = nx + ny
            total = 2 * n
            alpha = 1 - (total - 1) * 2 * (n - exact * n) / (total**2 - (pooled**2).sum(axis=1))
    else:
        kappa, alpha = _quadratic(w, x, y)
        if kind == "ordinal":
            # Krippendorff's ordinal metric is the interval metric on the pooled mid-ranks.
            ranks = _midranks(nx + ny)
            rows = np.arange(w.shape[0])[:, None]
            _, alpha = _quadratic(w, ranks[rows, cx], ranks[rows, cy])
    rows = np.arange(w.shape[0])[:, None]
    rx, ry = _midranks(nx), _midranks(ny)
    spearman = _pearson(w, rx[rows, cx], ry[rows, cy])
    return np.column_stack([exact, kappa, alpha, spearman, offset])


def agreement_statistics(w: np.ndarray, x: np.ndarray, y: np.ndarray, kind: str) -> np.ndarray:
    """`STATISTICS` of labels `x` against judge values `y`, one row per row of weights `w`.

    Args:
        w: Weights, shape (replicates, pairs); a row of ones is the sample itself.
        x: The human labels, one per pair (raw scale).
        y: The judge's raw values, one per pair.
        kind: "ordinal" (quadratic-weighted kappa, ordinal alpha), "nominal" (plain kappa,
            nominal alpha) or "interval" (quadratic-weighted kappa, interval alpha).

    Returns:
        Shape (replicates, 5): exact agreement, kappa, alpha, Spearman's rho and the mean
        offset (judge - label); NaN where a statistic is undefined (no pairs, no variation).

    Example:
        >>> x = np.array([1.0, 2.0, 3.0, 3.0]); y = np.array([1.0, 2.0, 3.0, 2.0])
        >>> [round(float(v), 3) for v in agreement_statistics(np.ones((1, 4)), x, y, "nominal")[0]]
        [0.75, 0.636, 0.667, 0.833, -0.25]
    """
    if w.shape[1] == 0:
        return np.full((w.shape[0], len(STATISTICS)), np.nan)
    parts = [_chunk_statistics(w[i : i + _CHUNK], x, y, kind) for i in range(0, w.shape[0], _CHUNK)]
    return np.vstack(parts)


def case_draws(n_cases: int, n_boot: int, seed: int) -> np.ndarray:
    """How many times each case is drawn in each of `n_boot` case-bootstrap replicates.

    Example:
        >>> case_draws(3, 2, seed=0).sum(axis=1).tolist()
        [3, 3]
    """
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n_cases, size=(n_boot, n_cases))
    flat = picks + n_cases * np.arange(n_boot)[:, None]
    return np.bincount(flat.ravel(), minlength=n_boot * n_cases).reshape(n_boot, n_cases)


def percentile_ci(point: float, replicates: np.ndarray) -> tuple[float, float]:
    """The 95 % percentile interval of bootstrap replicates (NaN when the point is undefined).

    Replicates where the statistic is undefined (a resample with no variation) are left out.
    """
    finite = replicates[np.isfinite(replicates)]
    if not np.isfinite(point) or len(finite) == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(finite, [0.025, 0.975])
    return float(low), float(high)


def corrected_mean(judged: np.ndarray, human: np.ndarray) -> CorrectedMean:
    """Prediction-powered mean (Angelopoulos et al. 2023), labels nested in the judged cases.

    theta = mean(f over the N judged cases) - mean(f - h over the n labelled ones), where the
    labelled cases are a random subset of the judged ones (docs/statistics.md derives it):

        Var(theta) = Var(f)/N + Var(r)/n - 2 Cov(f, r)/N = Var(h)/N + (1/n - 1/N) Var(r),

    r = f - h; both variances estimated on the labelled cases. The interval is
    theta ± t975(n - 1) · sqrt(Var). With every case labelled theta is the human mean and its
    interval the labels' own (`mean_ci`, the summary's rule); without a spread to estimate
    (one label, or no variance) the summary's degenerate rule, `wilson(theta · n, n)`.

    Args:
        judged: The judge's value of every judged case, on [0, 1].
        human: The human value of each judged case on [0, 1], NaN where it has no label.

    Example:
        >>> f = np.array([0.6, 0.8, 0.7, 0.9]); h = np.array([0.5, np.nan, 0.6, np.nan])
        >>> round(corrected_mean(f, h).value, 3)
        0.65
    """
    judged = np.asarray(judged, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    has = ~np.isnan(human)
    big, small = len(judged), int(has.sum())
    if big == 0 or small == 0:
        nan = float("nan")
        return CorrectedMean(nan, nan, nan)
    h = human[has]
    if small == big:  # the corrected mean is the human mean: its own interval
        _, low, high = mean_ci(h)
        return CorrectedMean(float(h.mean()), low, high)
    r = judged[has] - h
    value = float(judged.mean() - r.mean())
    var = float(h.var(ddof=1) / big + (1 / small - 1 / big) * r.var(ddof=1)) if small > 1 else 0.0
    se = float(np.sqrt(max(var, 0.0)))
    if not se >= NO_SPREAD:
        clipped = min(1.0, max(0.0, value))
        low, high = wilson(clipped * small, small)
        return CorrectedMean(value, min(low, value), max(high, value))
    half = t975(small - 1) * se
    return CorrectedMean(value, value - half, value + half)


def _merged(counts: np.ndarray, least: int) -> np.ndarray:
    """Each stratum's group once a stratum with fewer than `least` labels is merged with its
    neighbour: the adjacent group (in the strata's order) with fewer labels, the lower one on
    a tie, the smallest group first, until every group has `least` or one group is left."""
    groups = [[i] for i in range(len(counts))]
    sizes = [int(c) for c in counts]
    while len(groups) > 1 and min(sizes) < least:
        i = int(np.argmin(sizes))
        if i == 0:
            j = 1
        elif i == len(groups) - 1:
            j = i - 1
        else:
            j = i - 1 if sizes[i - 1] <= sizes[i + 1] else i + 1
        a, b = min(i, j), max(i, j)
        groups[a : b + 1] = [groups[a] + groups[b]]
        sizes[a : b + 1] = [sizes[a] + sizes[b]]
    out = np.empty(len(counts), dtype=np.int64)
    for g, members in enumerate(groups):
        out[members] = g
    return out


def stratified_terms(
    judged: np.ndarray, human: np.ndarray, strata: np.ndarray
) -> tuple[float, float, float, float, int]:
    """The parts of `stratified_corrected_mean` (some labels, not all): theta, the cases'
    variance term S_h^2 / N, the correction's sum_h W_h^2 (1/n_h - 1/N_h) s_{r,h}^2, its
    Welch-Satterthwaite degrees of freedom, and the number of strata the variance used (after
    merging)."""
    has = ~np.isnan(human)
    big, small = len(judged), int(has.sum())
    levels, codes = np.unique(np.asarray(strata), return_inverse=True)
    codes = codes.reshape(-1)
    counts = np.bincount(codes[has], minlength=len(levels))
    r = judged - human  # NaN where unlabelled
    # theta: a stratum with a label keeps its own mean residual; one without takes its group's
    point = _merged(counts, 1)[codes]
    correction = sum(
        float(np.mean(point == g)) * float(np.mean(r[(point == g) & has]))
        for g in range(int(point.max()) + 1)
    )
    value = float(judged.mean() - correction)
    # the variance: on groups of at least two labels each
    group = _merged(counts, 2)[codes]
    n_groups = int(group.max()) + 1
    weights = np.bincount(group, minlength=n_groups) / big
    var_r, within, means, spread = 0.0, 0.0, np.zeros(n_groups), 0.0
    for g in range(n_groups):
        labelled = has & (group == g)
        n_g, big_g = int(labelled.sum()), float(weights[g] * big)
        h_g, r_g = human[labelled], r[labelled]
        means[g] = float(h_g.mean())
        if n_g > 1:
            term = weights[g] ** 2 * (1 / n_g - 1 / big_g) * float(r_g.var(ddof=1))
            var_r += term
            spread += term**2 / (n_g - 1)
            within += weights[g] * float(h_g.var(ddof=1))
    between = float(weights @ (means - weights @ means) ** 2)
    var_cases = (within + between) / big if small > 1 else 0.0
    # the correction's df: n - 1 for one stratum, at most n - H, fewer when a few strata carry
    # the variance (their few labels estimate it)
    df = var_r**2 / spread if spread > 0 else float(small - n_groups)
    return value, var_cases, var_r, df, n_groups


def stratified_corrected_mean(
    judged: np.ndarray, human: np.ndarray, strata: np.ndarray
) -> tuple[CorrectedMean, int]:
    """`corrected_mean` for labels drawn stratified: each stratum h of the N judged cases
    (its N_h cases, weight W_h = N_h / N) drew its n_h labels uniformly (`eb.review(...,
    select="stratified")`). Returns the estimate and the number of strata its variance used.

        theta = mean(f over N) - sum_h W_h mean(f - h over stratum h's labels)
        Var(theta) = S_h^2 / N + sum_h W_h^2 (1/n_h - 1/N_h) s_{r,h}^2

    the stratified form of `corrected_mean`'s (docs/statistics.md): S_h^2, the human values'
    variance, is estimated stratified (sum_h W_h (s_{h,h}^2 + (m_h - m)^2)); the interval is
    theta ± t975(df) · sqrt(Var), df the Welch-Satterthwaite degrees of freedom of the
    correction's terms (n - 1 with one stratum, at most n - H with H strata, fewer when a few
    strata carry the variance), rounded down. With one stratum it is `corrected_mean`'s
    exactly. A stratum needs two labels for its variance: one with fewer is merged with its
    neighbour (`_merged`: adjacent by judge value, the one with fewer labels) until each has
    two. A stratum with one label keeps its own correction in theta, and only the variance
    pools it with its neighbour (the collapsed-strata estimator, which overstates the variance
    a little when the merged strata differ). A stratum with no label is merged for both: its
    cases take the correction of the strata it is merged with. Every case labelled: the labels'
    own mean and interval, as `corrected_mean`.

    Args:
        judged: The judge's value of every judged case, on [0, 1].
        human: The human value of each judged case on [0, 1], NaN where it has no label.
        strata: Each judged case's stratum, integers ordered as the judge's values are.

    Example:
        >>> f = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
        >>> h = np.array([0.0, 0.5, np.nan, 1.0, 0.5, np.nan])
        >>> round(stratified_corrected_mean(f, h, np.array([0, 0, 0, 1, 1, 1]))[0].value, 3)
        0.5
    """
    judged = np.asarray(judged, dtype=np.float64)
    human = np.asarray(human, dtype=np.float64)
    has = ~np.isnan(human)
    big, small = len(judged), int(has.sum())
    if big == 0 or small == 0 or small == big:
        return corrected_mean(judged, human), 1
    value, var_cases, var_r, df, n_groups = stratified_terms(judged, human, strata)
    se = float(np.sqrt(max(var_cases + var_r, 0.0)))
    if not se >= NO_SPREAD:
        clipped = min(1.0, max(0.0, value))
        low, high = wilson(clipped * small, small)
        return CorrectedMean(value, min(low, value), max(high, value)), n_groups
    half = t975(max(1, int(df + 1e-9))) * se  # rounded down, not below an exact n - 1
    return CorrectedMean(value, value - half, value + half), n_groups
