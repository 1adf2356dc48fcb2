"""An anytime-valid confidence sequence for the mean of bounded values, by betting.

Waudby-Smith and Ramdas (2024), "Estimating means of bounded random variables by betting"
(JRSS B), the hedged capital process with predictable plug-in bets, on a grid of candidate
means. For values y₁, y₂, … in [0, 1] with mean μ and each candidate m of the grid:

- the bet before the t-th value is λ_t = √(2 log(1/(α θ)) / (σ̂²_{t−1} · t · log(1 + t))),
  with the regularised running mean μ̂_t = min(1, (½ + Σ_{i≤t} y_i) / (t + 1)) and variance
  σ̂²_t = (¼ + Σ_{i≤t} (y_i − μ̂_i)²) / (t + 1) (σ̂²₀ = ¼): it uses only earlier values;
- two capital processes bet on the mean being above and below m, truncated by m:
  K⁺_t(m) = Π (1 + min(λ_i, c/m) (y_i − m)) and K⁻_t(m) = Π (1 − min(λ_i, c/(1 − m)) (y_i − m)),
  c = ½, so that every factor is at least 1 − c > 0;
- the hedged capital K_t(m) = max(θ K⁺_t(m), (1 − θ) K⁻_t(m)), θ = ½, is at most the convex
  combination θ K⁺ + (1 − θ) K⁻, a nonnegative martingale with initial value 1 when m = μ; by
  Ville's inequality P[∃t: K_t(μ) ≥ 1/α] ≤ α.

So the set {m : K_t(m) < 1/α} holds μ at every t at once, with probability at least 1 − α:
looking after every value and stopping whenever one likes keeps the guarantee. On the grid
m = j / breaks, the interval at t runs from one step below the first candidate kept to one step
above the last (the set between grid points is not known); the running intersection of those
intervals is reported, so they nest. Each value costs O(breaks), with numpy over the grid and
over any leading batch shape (many sequences at once: the simulations in `benchmarks/`).

Values in another range [lo, hi] (paired deltas in [−1, 1]) are rescaled to [0, 1] first and
the interval back. The capital is kept as logarithms.

>>> cs = ConfidenceSequence()
>>> cs.extend([1.0, 0.0] * 200)
>>> cs.n, round(cs.mean, 3), cs.low < 0.5 < cs.high
(400, 0.5, True)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np

__all__ = ["BREAKS", "ConfidenceSequence", "lower_decision", "precise_enough"]

# Grid steps over [0, 1]: the interval's resolution (1/1000 of the range, 0.002 of a delta).
BREAKS = 1000
_PRIOR_MEAN = 0.5
_PRIOR_VAR = 0.25
_TRUNC = 0.5
_THETA = 0.5

Array = np.ndarray[Any, np.dtype[np.float64]]


class ConfidenceSequence:
    """The running betting confidence sequence of the mean of values in [lo, hi].

    `shape` () keeps one sequence; a shape (k,) keeps k independent ones, updated together.
    """

    def __init__(
        self,
        shape: tuple[int, ...] = (),
        *,
        alpha: float = 0.05,
        lo: float = 0.0,
        hi: float = 1.0,
        breaks: int = BREAKS,
    ) -> None:
        if not 0.0 < alpha < 1.0:
            raise ValueError(f"alpha must be in (0, 1), not {alpha!r}")
        if not hi > lo:
            raise ValueError(f"the range must have hi > lo, not [{lo!r}, {hi!r}]")
        if breaks < 2:
            raise ValueError(f"breaks must be at least 2, not {breaks!r}")
        self.alpha, self.lo, self.hi, self.breaks = float(alpha), float(lo), float(hi), breaks
        self.shape = shape
        self._grid: Array = np.arange(breaks + 1, dtype=np.float64) / breaks
        with np.errstate(divide="ignore"):
            self._cap_up: Array = np.minimum(np.inf, _TRUNC / self._grid)
            self._cap_down: Array = _TRUNC / (1.0 - self._grid)
        self._log_up: Array = np.zeros((*shape, breaks + 1))
        self._log_down: Array = np.zeros((*shape, breaks + 1))
        # The candidates still inside some sequence's running interval: the others can never
        # matter again, so they are not updated (the cost falls as the intervals narrow).
        self._window = (0, breaks + 1)
        self._t = 0
        self._sum: Array = np.zeros(shape)
        self._sq: Array = np.zeros(shape)
        self._low: Array = np.zeros(shape)
        self._high: Array = np.ones(shape)
        self._bet_scale = 2.0 * math.log(1.0 / (self.alpha * _THETA))
        self._threshold = math.log(1.0 / self.alpha)

    @property
    def n(self) -> int:
        """How many values each sequence has taken."""
        return self._t

    def update(self, values: float | Array) -> None:
        """Take one more value for each sequence (an array of `shape`, or a float)."""
        x = np.broadcast_to(np.asarray(values, dtype=np.float64), self.shape)
        if not np.all((x >= self.lo) & (x <= self.hi)):  # also false for NaN
            raise ValueError(f"values must lie in [{self.lo:g}, {self.hi:g}]")
        y = np.clip((x - self.lo) / (self.hi - self.lo), 0.0, 1.0)
        t = self._t + 1
        var_before = (_PRIOR_VAR + self._sq) / t
        bet = np.sqrt(self._bet_scale / (var_before * t * math.log1p(t)))[..., None]
        a, b = self._window
        diff = y[..., None] - self._grid[a:b]
        self._log_up[..., a:b] += np.log1p(np.minimum(bet, self._cap_up[a:b]) * diff)
        self._log_down[..., a:b] += np.log1p(-np.minimum(bet, self._cap_down[a:b]) * diff)
        self._sum = self._sum + y
        running_mean = np.minimum(1.0, (_PRIOR_MEAN + self._sum) / (t + 1))
        self._sq = self._sq + (y - running_mean) ** 2
        self._t = t
        self._intersect()

    def extend(self, values: Iterable[float]) -> None:
        """Take the values one after the other (one sequence: `shape` ())."""
        for value in values:
            self.update(float(value))

    def _intersect(self) -> None:
        a, b = self._window
        hedged = np.maximum(
            math.log(_THETA) + self._log_up[..., a:b],
            math.log(1 - _THETA) + self._log_down[..., a:b],
        )
        kept = hedged < self._threshold
        some = kept.any(axis=-1)
        first = a + np.argmax(kept, axis=-1)
        last = b - 1 - np.argmax(kept[..., ::-1], axis=-1)
        step = 1.0 / self.breaks
        low = np.where(some, np.maximum(0.0, self._grid[first] - step), 0.0)
        high = np.where(some, np.minimum(1.0, self._grid[last] + step), 1.0)
        self._low = np.maximum(self._low, low)
        self._high = np.minimum(self._high, high)
        start = int(np.rint(np.min(self._low) * self.breaks))
        stop = int(np.rint(np.max(self._high) * self.breaks)) + 1
        self._window = (max(a, min(start, b - 1)), max(a + 1, min(stop, b)))

    def _scale(self, y: Array) -> Array:
        return self.lo + y * (self.hi - self.lo)

    @property
    def lows(self) -> Array:
        """The running intersection's lower ends, on the values' scale."""
        return self._scale(self._low)

    @property
    def highs(self) -> Array:
        """The running intersection's upper ends, on the values' scale."""
        return self._scale(self._high)

    @property
    def means(self) -> Array:
        """The plain means of the values taken (NaN before any)."""
        if self._t == 0:
            return np.full(self.shape, np.nan)
        return self._scale(self._sum / self._t)

    @property
    def low(self) -> float:
        """The lower end of the one sequence (`shape` ())."""
        return float(self.lows)

    @property
    def high(self) -> float:
        """The upper end of the one sequence (`shape` ())."""
        return float(self.highs)

    @property
    def mean(self) -> float:
        """The mean of the one sequence's values."""
        return float(self.means)


def lower_decision(low: float, high: float, max_drop: float) -> str | None:
    """`non_inferior` once the interval of the delta lies above −max_drop, `inferior` once it
    lies below, else None (undecided so far).

    >>> lower_decision(-0.01, 0.08, 0.02), lower_decision(-0.2, -0.05, 0.02)
    ('non_inferior', 'inferior')
    """
    if low > -max_drop:
        return "non_inferior"
    if high < -max_drop:
        return "inferior"
    return None


def precise_enough(low: float, high: float, half_width: float) -> bool:
    """Whether the interval is at most ±half_width.

    >>> precise_enough(0.40, 0.48, 0.05), precise_enough(0.40, 0.52, 0.05)
    (True, False)
    """
    return (high - low) / 2.0 <= half_width
