"""The paired sign-flip permutation test, without a Monte Carlo floor.

Under the null hypothesis the paired deltas are symmetric about 0, so each of the 2**m
assignments of signs to the m non-zero deltas is equally likely; the two-sided p-value is the
share of assignments whose |sum| is at least the observed |sum| (zero deltas change nothing).

- Up to `EXACT_MAX` non-zero deltas: exact. The 2**m sums are never listed: the deltas are
  split in two halves, each half's 2**(m/2) signed sums are listed (at most 2 x 131,072), and
  the pairs whose total reaches the observed |sum| are counted with a binary search.
- Beyond, on a grid (every |d_i| a whole multiple k_i of one step g, as graded scores give;
  `grid_p`), or on a grid but for at most 12 values (`mixed_p`): exact, by convolution of the
  sum's distribution, when m x sum(k_i) is at most 20 million.
- Otherwise the Lugannani-Rice saddle-point approximation of the same permutation
  distribution, from its cumulant generating function K(t) = sum(log cosh(t d_i)), with the
  largest |d_i| enumerated around it (`split_p`); on a grid too large to convolve, Daniels'
  second continuity correction for a lattice of span 2g (`saddle_p`). Its error against the
  exact value just past EXACT_MAX (benchmarks/sim_sign_flip_error.py; bounds asserted in
  tests/model/test_permutation.py; table in docs/statistics.md) is at most ~2e-4 absolute,
  far below the three decimals a p-value is printed with; far in the tail (p < 1e-6) the
  relative error can reach ~15 % at m = 35: the order of magnitude holds.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "EXACT_MAX",
    "GRID_STEPS",
    "exact_p",
    "grid_p",
    "mixed_p",
    "saddle_p",
    "sign_flip_p",
    "split_p",
]

Floats = NDArray[np.float64]

EXACT_MAX = 34  # exact up to this many non-zero deltas: two halves of at most 2**17 sums
GRID_STEPS = 100  # a grid is looked for with steps min|d| / j, j = 1..GRID_STEPS
_GRID_TOL = 1e-7  # |d| / g within this of a whole number: on the grid (floats of 0.1 * k)
_SMALL_W = 1e-3  # below, Lugannani-Rice cancels; the normal limit is exact to ~1e-9 there
_GRID_WORK = 20_000_000  # grid convolution when m x (sum of |d| / g) is at most this
_OFF_MAX = 12  # up to this many deltas off a grid are enumerated around its convolution
_FULL_CHECKS = 8  # candidate steps checked on a whole row at most (after a short probe)
_SPLIT_MAX = 6  # the largest |d| enumerated exactly around the saddle point: 2**6 offsets
_SPLIT_WORK = 2_048  # ... fewer when 2**r x m would pass this (r = 0 from m = 2,048)
_ROWS_WORK = 2_000_000  # matrix elements per batch of the split (bounds memory)
_NEWTON = 100  # iterations at most; the safeguarded Newton step converges in ~10


def _tol(d: Floats) -> Floats:
    """Sums this close to the observed one count as reaching it (float rounding of sums)."""
    return np.asarray(1e-9 * np.maximum(1.0, np.abs(d).sum(axis=-1)), dtype=np.float64)


def _half_sums(x: Floats) -> Floats:
    """All 2**len(x) signed sums of `x`."""
    sums = np.zeros(1)
    for v in x.tolist():
        sums = np.concatenate([sums + v, sums - v])
    return sums


def exact_p(d: Floats) -> float:
    """The exact two-sided sign-flip p-value of one row of non-zero deltas (any length).

    Meet in the middle: 2**h + 2**(m-h) sums instead of 2**m, h = m // 2.

    Example:
        >>> exact_p(np.array([0.5, 0.5, 0.5]))  # 2 of the 8 assignments reach |1.5|
        0.25
    """
    m = int(d.size)
    target = abs(float(d.sum())) - float(_tol(d))
    if m == 0 or target <= 0.0:
        return 1.0
    left = np.sort(_half_sums(d[: m // 2]))  # sorted queries: a faster binary search
    right = np.sort(_half_sums(d[m // 2 :]))
    # pairs with left + right >= target; those <= -target (disjoint, since target > 0) are
    # as many: both sets are symmetric, exactly in floats ((-x) - v is -(x + v))
    up = right.size - np.searchsorted(right, target - left, side="left")
    return math.ldexp(float(2 * int(up.sum())), -m)


def _grid_step(a: Floats) -> float:
    """The largest step g = min(a) / j (j <= GRID_STEPS) of which every a_i is a multiple.

    0.0 when there is none: the values are treated as continuous.
    """
    lo = float(a.min())
    probe = a[:16]  # most j fail on the first values; the whole row confirms a candidate
    for j in range(1, GRID_STEPS + 1):
        g = lo / j
        r = probe / g
        if np.max(np.abs(r - np.round(r))) > _GRID_TOL:
            continue
        r = a / g
        if np.max(np.abs(r - np.round(r))) <= _GRID_TOL:
            return g
    return 0.0


def _log_cosh(x: Floats) -> Floats:
    ax = np.abs(x)
    return ax + np.log1p(np.exp(-2.0 * ax)) - math.log(2.0)


def _upper_tail(a: Floats, s: Floats, h: Floats) -> Floats:
    """Lugannani-Rice P[S >= s] for S = sum(e_i a_i), e_i = +-1, one row per comparison.

    `a` holds |d| (zero-padded rows), `s` the observed |sum| > 0, `h` the lattice span (0 for
    continuous values): with h > 0 the point is s - h/2 and u is (2/h) sinh(t h / 2) sqrt(K'')
    (Daniels 1987, second continuity correction), which is t sqrt(K'') as h -> 0.
    """
    point = s - h / 2.0
    top = a.sum(axis=1)
    var = (a * a).sum(axis=1)
    # Newton on K'(t) = point, kept inside a bracket [lo, hi] where K' - point changes sign.
    t = point / var
    lo, hi = np.zeros_like(t), np.full_like(t, np.inf)
    for _ in range(_NEWTON):
        th = np.tanh(t[:, None] * a)
        f = (a * th).sum(axis=1) - point
        lo, hi = np.where(f < 0, t, lo), np.where(f < 0, hi, t)
        k2 = (a * a * (1.0 - th * th)).sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            step = t - f / k2
        mid = np.where(np.isinf(hi), 2.0 * lo + 1.0, (lo + hi) / 2.0)
        new = np.where((step > lo) & (step < hi), step, mid)
        # converged: K' matches to float resolution, or the step no longer moves t
        done = (np.abs(f) <= 1e-13 * top) | (np.abs(new - t) <= 1e-12 * np.abs(t))
        t = np.where(done, t, new)
        if bool(done.all()):
            break
    th = np.tanh(t[:, None] * a)
    k0 = _log_cosh(t[:, None] * a).sum(axis=1)
    sech2 = 1.0 - th * th
    k2 = (a * a * sech2).sum(axis=1)
    w = np.sqrt(np.maximum(0.0, 2.0 * (t * point - k0)))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u = np.where(h > 0, 2.0 / h * np.sinh(t * h / 2.0), t) * np.sqrt(k2)
        lr = _normal_sf(w) + _normal_pdf(w) * (1.0 / u - 1.0 / w)
    near = _normal_sf(point / np.sqrt(var))
    out = np.where(w < _SMALL_W, near, lr)
    # the largest possible sum: only the all-plus assignment reaches it
    out = np.where(s >= top - _tol(a), np.ldexp(1.0, -(a > 0).sum(axis=1)), out)
    out = np.where(s > top + _tol(a), 0.0, out)  # beyond the largest sum (a split's offset)
    return np.asarray(np.where(point <= 0.0, 0.5, out), dtype=np.float64)


def _normal_sf(x: Floats) -> Floats:
    return np.array([0.5 * math.erfc(v / math.sqrt(2.0)) for v in x.tolist()], dtype=np.float64)


def _normal_pdf(x: Floats) -> Floats:
    return np.asarray(np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi), dtype=np.float64)


def grid_p(k: NDArray[np.int64], observed: int) -> float:
    """The exact two-sided p-value of whole-number deltas `k` (> 0), observed |sum| `observed`.

    The distribution of the sum of the + signs' k_i (a subset sum, 0..sum(k)) is built by
    convolution, one delta at a time, each step p(x) + p(x - k_i): sums of non-negative
    numbers, so every probability, however small, keeps ~m * 1e-16 relative accuracy. The
    array is rescaled at each step (its log scale is kept) so 2**m never overflows.

    Example:
        >>> grid_p(np.array([1, 1, 1]), 3)  # = exact_p of [g, g, g]
        0.25
    """
    total = int(k.sum())
    if observed <= 0:
        return 1.0
    dist = _grid_dist(k)
    # sum = 2 x - total; |sum| >= observed <=> x >= (total + observed) / 2 or its mirror
    hi = (total + observed + 1) // 2
    lo = (total - observed) // 2
    return min(1.0, float(dist[hi:].sum()) + float(dist[: lo + 1].sum()))


def _grid_dist(k: NDArray[np.int64]) -> Floats:
    """P[x] for x = 0..sum(k), x the sum of the k_i that get a + sign (grid_p's convolution)."""
    dist = np.zeros(int(k.sum()) + 1)
    dist[0] = 1.0
    top = 0
    for ki in k.tolist():
        dist[ki : top + ki + 1] += dist[: top + 1].copy()
        top += ki
        dist[: top + 1] /= dist[: top + 1].max()
    return np.asarray(dist / dist.sum(), dtype=np.float64)


def mixed_p(k: NDArray[np.int64], g: float, off: Floats, observed: float) -> float:
    """The exact p-value of deltas on a grid (k_i steps of g) plus a few off it (`off`).

    The grid part's distribution by convolution, the off-grid part's 2**len(off) signed sums
    o enumerated: p = mean over o of P[|G + o| >= observed], G the grid part's sum.

    Example:
        >>> d = np.array([0.5, 0.5, -0.5, 0.123])
        >>> mixed_p(np.array([1, 1, 1]), 0.5, np.array([0.123]), abs(d.sum())) == exact_p(d)
        True
    """
    total = int(k.sum())
    dist = _grid_dist(k)
    at_least = np.concatenate([np.cumsum(dist[::-1])[::-1], [0.0]])  # P[x >= i], i..total+1
    at_most = np.concatenate([[0.0], np.cumsum(dist)])  # P[x <= i - 1], i = 0..total+1
    o = _half_sums(np.abs(off))
    tol = float(_tol(np.concatenate([g * k, off])))
    # G = g (2x - total) >= observed - o  <=>  x >= ((observed - o) / g + total) / 2
    hi = np.ceil(((observed - tol - o) / g + total) / 2).clip(0, total + 1).astype(np.int64)
    lo = np.floor(((-observed + tol - o) / g + total) / 2).clip(-1, total).astype(np.int64)
    return min(1.0, float((at_least[hi] + at_most[lo + 1]).mean()))


def _mostly_on_grid(a: Floats) -> tuple[float, NDArray[np.bool_]]:
    """A step g of which all but at most _OFF_MAX of `a` are multiples, and which are.

    Looked for only when the values repeat (at most m / 2 distinct): steps base / j for the
    3 most frequent values, at most _FULL_CHECKS of them checked on the whole row. (0.0, no
    mask) when there is none.
    """
    values, counts = np.unique(a, return_counts=True)
    if values.size > a.size // 2:
        return 0.0, np.zeros(0, dtype=np.bool_)
    probe = a[: 4 * _OFF_MAX]  # a step with more than _OFF_MAX misses here is out at once
    checks = 0  # whole-row checks, bounded: a long row costs a few passes, not 300
    for base in values[np.argsort(-counts, kind="stable")[:3]].tolist():
        for j in range(1, GRID_STEPS + 1):
            r = probe / (base / j)
            if int((np.abs(r - np.round(r)) > _GRID_TOL).sum()) > _OFF_MAX:
                continue
            if checks == _FULL_CHECKS:
                return 0.0, np.zeros(0, dtype=np.bool_)
            checks += 1
            r = a / (base / j)
            on = np.abs(r - np.round(r)) <= _GRID_TOL
            if int((~on).sum()) <= _OFF_MAX:
                return base / j, on
    return 0.0, np.zeros(0, dtype=np.bool_)


def _tail_at(rest: Floats, x: Floats) -> Floats:
    """P[S >= x] for S = sum(e_i rest_i), one row of `rest` per value of `x` (continuous)."""
    ax = np.abs(x)
    pos = ax > _tol(rest)
    t = _upper_tail(rest, np.where(pos, ax, 1.0), np.zeros(x.size))
    return np.asarray(np.where(pos, np.where(x > 0, t, 1.0 - t), 0.5), dtype=np.float64)


def split_p(d: Floats) -> Floats:
    """Saddle-point p-values with the r largest |d| of each row enumerated exactly.

    p = mean over the 2**r signed sums o of those r deltas of P[S' >= s - o] + P[S' >= s + o],
    S' the sum over the other deltas (saddle point). A few dominant deltas make the
    permutation distribution lumpy, which no smooth approximation follows; enumerating them
    leaves a smoother rest. r = min(6, log2(2048 / m)): 5 at m = 35, 0 from m = 2,048 on.

    Example:
        >>> d = np.r_[np.linspace(0.005, 0.03, 40), 0.9, -0.8][None, :]
        >>> round(float(split_p(d)[0]), 3) == round(exact_p(d[0]), 3)
        True
    """
    d = np.atleast_2d(np.asarray(d, dtype=np.float64))
    rows, m = d.shape
    r = max(0, min(_SPLIT_MAX, math.floor(math.log2(_SPLIT_WORK / max(1, m)))))
    if r == 0:
        return saddle_p(d, np.zeros(rows))
    a = -np.sort(-np.abs(d), axis=1)
    s = np.abs(d.sum(axis=1))
    bits = (np.arange(2**r)[:, None] >> np.arange(r)[None, :]) & 1
    offsets = a[:, :r] @ (1.0 - 2.0 * bits).T  # (rows, 2**r)
    rest = a[:, r:]
    out = np.empty(rows)
    chunk = max(1, _ROWS_WORK // (2 ** (r + 1) * max(1, m - r)))
    for start in range(0, rows, chunk):
        sl = slice(start, start + chunk)
        x = np.concatenate([s[sl, None] - offsets[sl], s[sl, None] + offsets[sl]], axis=1)
        tails = _tail_at(np.repeat(rest[sl], x.shape[1], axis=0), x.ravel())
        out[sl] = tails.reshape(x.shape).sum(axis=1) / 2**r  # both tails: a sum
    zero = s <= _tol(d)
    return np.asarray(np.where(zero, 1.0, np.minimum(1.0, out)), dtype=np.float64)


def saddle_p(d: Floats, grid: Floats | None = None) -> Floats:
    """Saddle-point two-sided sign-flip p-values, one per row of `d` (zero-padded rows).

    `grid` holds each row's grid step g (0: continuous values; default: looked for among
    min|d| / j, j = 1..GRID_STEPS); on a grid the lattice correction with span 2g is used.
    Rows whose deltas are all 0 get 1.

    Example:
        >>> d = np.tile([0.25, -0.5, 0.75, 0.5], 10)[None, :]
        >>> 0.0 < float(saddle_p(d)[0]) < 0.05
        True
    """
    d = np.atleast_2d(np.asarray(d, dtype=np.float64))
    a = np.abs(d)
    s = np.abs(d.sum(axis=1))
    g = np.array([_row_step(row) for row in a]) if grid is None else grid
    nonzero = (a > 0).any(axis=1) & (s > _tol(d))
    safe_s = np.where(nonzero, s, 1.0)
    tail = _upper_tail(np.where(nonzero[:, None], a, 1.0), safe_s, 2.0 * g)
    return np.asarray(np.where(nonzero, np.minimum(1.0, 2.0 * tail), 1.0), dtype=np.float64)


def _row_step(a: Floats) -> float:
    nz = a[a > 0]
    return _grid_step(nz) if nz.size else 0.0


def _one_large(d: Floats) -> tuple[float, float]:
    """A long row's exact grid p-value (NaN when there is none) and its lattice step (or 0).

    A grid of all the deltas small enough to convolve: grid_p. Else a coarser grid of all but
    at most _OFF_MAX of them: mixed_p. Else NaN, with the fine grid's step (the lattice
    saddle point) or 0 (the split saddle point).
    """
    a = np.abs(d[d != 0.0])
    observed = abs(float(d.sum()))
    g = _grid_step(a)
    if g > 0.0:
        k = np.round(a / g).astype(np.int64)
        if k.size * int(k.sum()) <= _GRID_WORK:
            p = grid_p(k, round(observed / g))
            # a tail beyond the float range (below 1e-308) is left to the saddle point
            return (p if p > 0.0 else math.nan), g
    coarse, on = _mostly_on_grid(a)
    if coarse > 0.0 and not on.all():
        k = np.round(a[on] / coarse).astype(np.int64)
        if k.size * int(k.sum()) <= _GRID_WORK:
            p = mixed_p(k, coarse, a[~on], observed)
            return (p if p > 0.0 else math.nan), g
    return math.nan, g


def sign_flip_p(deltas: Floats) -> Floats:
    """Two-sided p-values of the paired sign-flip permutation test of `mean(delta) == 0`.

    Each row of `deltas` is one comparison; rows may be zero-padded (a zero delta changes
    nothing). Row by row (so a comparison gets the same p-value alone or among others):
    exact with at most EXACT_MAX non-zero deltas (`exact_p`); beyond, exact by convolution
    when the deltas lie on a grid and m x sum(|d| / g) <= 20 million (`grid_p`); else the
    saddle-point approximation (`saddle_p`). Rows whose deltas are all 0 get 1.

    Example:
        >>> float(sign_flip_p(np.array([[0.5, 0.25, -0.25]]))[0])  # 6 of 8 reach |0.5|
        0.75
    """
    d = np.atleast_2d(np.asarray(deltas, dtype=np.float64))
    out = np.ones(d.shape[0])
    if d.size == 0:
        return out
    m = (d != 0.0).sum(axis=1)
    for i in np.flatnonzero(m <= EXACT_MAX).tolist():
        out[i] = exact_p(d[i][d[i] != 0.0])
    large = np.flatnonzero(m > EXACT_MAX)
    if large.size == 0:
        return out
    found = [_one_large(d[i]) for i in large.tolist()]
    p = np.array([f[0] for f in found])
    out[large] = p
    rest = np.isnan(p)
    steps = np.array([f[1] for f in found])
    lattice, smooth = rest & (steps > 0), rest & (steps == 0)
    if lattice.any():
        out[large[lattice]] = saddle_p(d[large[lattice]], steps[lattice])
    if smooth.any():
        out[large[smooth]] = split_p(d[large[smooth]])
    return out
