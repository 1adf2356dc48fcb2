"""The betting confidence sequence of `_model/_confseq.py` (docs/spend-less.md): against a
direct, slow reference of the paper's formulas (the `confseq` package runs in a venv of its
own: benchmarks/sim_early_stop_confseq.py), its coverage under a look after every value,
nesting, the rescaled range of paired deltas, and the window that skips candidates outside
every running interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._model._confseq import ConfidenceSequence, lower_decision, precise_enough


def reference(
    values: list[float], alpha: float = 0.05, breaks: int = 200
) -> list[tuple[float, float]]:
    """Waudby-Smith & Ramdas's hedged capital CS, one candidate and one value at a time in plain
    Python, with every candidate of the grid kept (no window), and the running intersection."""
    grid = [j / breaks for j in range(breaks + 1)]
    up = [1.0] * len(grid)
    down = [1.0] * len(grid)
    total, squares = 0.0, 0.0
    low, high = 0.0, 1.0
    out = []
    for t, y in enumerate(values, start=1):
        var = (0.25 + squares) / t
        bet = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
        for j, m in enumerate(grid):
            bet_up = bet if m == 0 else min(bet, 0.5 / m)
            bet_down = bet if m == 1 else min(bet, 0.5 / (1 - m))
            up[j] *= 1 + bet_up * (y - m)
            down[j] *= 1 - bet_down * (y - m)
        total += y
        squares += (y - min(1.0, (0.5 + total) / (t + 1))) ** 2
        kept = [m for j, m in enumerate(grid) if max(0.5 * up[j], 0.5 * down[j]) < 1 / alpha]
        if kept:
            low = max(low, max(0.0, kept[0] - 1 / breaks))
            high = min(high, min(1.0, kept[-1] + 1 / breaks))
        out.append((low, high))
    return out


@pytest.mark.parametrize(
    "draw",
    [
        lambda rng: rng.random(300),
        lambda rng: rng.binomial(1, 0.8, 300).astype(float),
        lambda rng: rng.beta(8, 1, 300),
        lambda rng: rng.choice([0.0, 0.5, 1.0], 300, p=[0.1, 0.8, 0.1]),
    ],
)
def test_matches_the_slow_reference(draw: object) -> None:
    rng = np.random.default_rng(11)
    values = list(draw(rng))  # type: ignore[operator]
    cs = ConfidenceSequence(breaks=200)
    for y, (low, high) in zip(values, reference(values), strict=True):
        cs.update(y)
        assert cs.low == pytest.approx(low, abs=1e-12)
        assert cs.high == pytest.approx(high, abs=1e-12)


def test_a_batch_is_many_sequences_at_once() -> None:
    rng = np.random.default_rng(5)
    values = rng.random((4, 120))
    batch = ConfidenceSequence((4,), breaks=300)
    for column in values.T:
        batch.update(column)
    for row, low, high in zip(values, batch.lows, batch.highs, strict=True):
        one = ConfidenceSequence(breaks=300)
        one.extend(row)
        assert (one.low, one.high) == (pytest.approx(low), pytest.approx(high))


def test_coverage_with_a_look_after_every_value() -> None:
    """500 sequences of 400 values each (Bernoulli 0.3 and a Beta), looked at after every value:
    the share whose interval ever misses the mean stays within α (room for the noise of 500)."""
    rng = np.random.default_rng(2024)
    for draw, mean in (
        (lambda: rng.binomial(1, 0.3, 500), 0.3),
        (lambda: rng.beta(2, 5, 500), 2 / 7),
    ):
        cs = ConfidenceSequence((500,))
        missed = np.zeros(500, dtype=bool)
        for _ in range(400):
            cs.update(draw().astype(float))
            missed |= (cs.lows > mean) | (cs.highs < mean)
        assert missed.mean() <= 0.05 + 0.02, missed.mean()
        assert cs.highs.mean() - cs.lows.mean() < 0.2  # and the intervals did narrow


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=60))
def test_the_intervals_nest_and_hold_the_running_mean_range(values: list[float]) -> None:
    cs = ConfidenceSequence(breaks=100)
    before = (0.0, 1.0)
    for y in values:
        cs.update(y)
        assert before[0] <= cs.low <= cs.high <= before[1]
        before = (cs.low, cs.high)


def test_paired_deltas_are_rescaled_from_minus_one_to_one() -> None:
    rng = np.random.default_rng(3)
    deltas = rng.choice([-1.0, 0.0, 1.0], 400, p=[0.05, 0.8, 0.15])
    cs = ConfidenceSequence(lo=-1.0, hi=1.0)
    unit = ConfidenceSequence()
    cs.extend(deltas)
    unit.extend((deltas + 1) / 2)
    assert cs.low == pytest.approx(2 * unit.low - 1)
    assert cs.high == pytest.approx(2 * unit.high - 1)
    assert cs.mean == pytest.approx(deltas.mean())
    assert -1 <= cs.low < cs.mean < cs.high <= 1


def test_values_outside_the_range_are_refused() -> None:
    cs = ConfidenceSequence()
    for bad in (1.5, -0.1, float("nan")):
        with pytest.raises(ValueError, match=r"\[0, 1\]"):
            cs.update(bad)
    assert cs.n == 0
    with pytest.raises(ValueError, match="alpha"):
        ConfidenceSequence(alpha=1.0)


def test_decisions() -> None:
    assert lower_decision(-0.019, 0.1, 0.02) == "non_inferior"
    assert lower_decision(-0.5, -0.021, 0.02) == "inferior"
    assert lower_decision(-0.03, 0.01, 0.02) is None
    assert precise_enough(0.1, 0.2, 0.05) and not precise_enough(0.1, 0.21, 0.05)
