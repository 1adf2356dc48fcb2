"""The sign-flip p-value without a Monte Carlo floor: exact paths and the approximation's error.

The exact paths are checked against brute-force enumeration and scipy's binomial test; the
saddle-point approximation against the exact value just past the switch size (m =
EXACT_MAX + 1 ..) and against a large seeded Monte Carlo at a moderate size. The bounds are
the ones docs/statistics.md states.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

# the sign-flip p-value's exact and approximate paths, at sizes chosen to hit each one
from evalbook._model._paired import paired
from evalbook._model._permutation import (
    EXACT_MAX,
    exact_p,
    grid_p,
    mixed_p,
    saddle_p,
    sign_flip_p,
    split_p,
)

_GRADES = np.array([-1.0, -0.75, -0.5, -0.25, 0.25, 0.5, 0.75, 1.0])


def _brute(d: np.ndarray) -> float:
    observed = abs(d.sum())
    sums = [abs(np.dot(s, d)) for s in itertools.product((-1.0, 1.0), repeat=d.size)]
    return float(np.mean([x >= observed - 1e-9 for x in sums]))


@pytest.mark.parametrize("m", [1, 2, 5, 9, 12])
def test_exact_matches_brute_force(m: int) -> None:
    rng = np.random.default_rng(m)
    for d in (rng.normal(0.1, 0.3, m), rng.choice(_GRADES, m), np.full(m, 0.5)):
        assert exact_p(d) == pytest.approx(_brute(d), rel=1e-12)


def test_exact_at_the_switch_size_matches_a_vectorised_enumeration() -> None:
    rng = np.random.default_rng(3)
    m = 18  # 2**18 sign vectors, enumerated in one array
    bits = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1
    signs = 1.0 - 2.0 * bits
    for d in (rng.normal(0.05, 0.3, m), rng.choice(_GRADES, m)):
        sums = np.abs(signs @ d)
        expected = float((sums >= abs(d.sum()) - 1e-9).mean())
        assert exact_p(d) == pytest.approx(expected, rel=1e-12)


def test_equal_deltas_give_the_binomial_test_of_the_signs_however_small() -> None:
    # the case: 200 deltas, p about 1e-7, where 9,999 random flips reported 1e-4
    for m, plus in ((EXACT_MAX + 1, 30), (200, 138), (1_000, 620), (3_000, 1_400)):
        d = np.where(np.arange(m) < plus, 0.25, -0.25)
        expected = stats.binomtest(plus, m, 0.5).pvalue
        assert sign_flip_p(d[None, :])[0] == pytest.approx(expected, rel=1e-9)
    d = np.where(np.arange(200) < 138, 0.25, -0.25)
    assert 1e-8 < sign_flip_p(d[None, :])[0] < 1e-6


@pytest.mark.parametrize("m", [EXACT_MAX + 1, EXACT_MAX + 3])
def test_grid_convolution_equals_the_enumeration(m: int) -> None:
    rng = np.random.default_rng(m)
    for _ in range(3):
        d = rng.choice(_GRADES, m, p=np.array([1, 1, 2, 4, 6, 4, 2, 1]) / 21)
        k = np.round(np.abs(d) / 0.25).astype(np.int64)
        exact = exact_p(d)
        assert grid_p(k, round(abs(d.sum()) / 0.25)) == pytest.approx(exact, rel=1e-12)
        assert sign_flip_p(d[None, :])[0] == pytest.approx(exact, rel=1e-12)


def test_grids_of_tenths_and_thirds_are_found() -> None:
    rng = np.random.default_rng(5)
    m = EXACT_MAX + 2
    tenths = rng.integers(0, 11, m) / 10 - rng.integers(0, 11, m) / 10
    thirds = rng.integers(0, 4, m) / 3 - rng.integers(0, 4, m) / 3
    for d in (tenths, thirds):
        d = d[d != 0]
        assert sign_flip_p(d[None, :])[0] == pytest.approx(exact_p(d), rel=1e-12)


def test_a_grid_with_a_few_values_off_it_is_exact() -> None:
    # graded deltas plus one to three others (e.g. a mean of three checks): neither a grid
    # nor smooth, so the convolution with the off-grid values enumerated around it
    rng = np.random.default_rng(13)
    for extra in (1, 2, 3):
        for _ in range(3):
            grid = rng.choice([-0.5, 0.5], EXACT_MAX + 1 - extra, p=[0.3, 0.7])
            d = np.concatenate([grid, rng.uniform(-0.4, 0.4, extra)])
            assert sign_flip_p(d[None, :])[0] == pytest.approx(exact_p(d), rel=1e-9)
    d = np.concatenate([np.where(np.arange(400) < 260, 0.25, -0.25), [0.123, -0.05]])
    k = np.full(400, 1)
    expected = mixed_p(k, 0.25, np.array([0.123, -0.05]), abs(d.sum()))
    assert sign_flip_p(d[None, :])[0] == expected
    assert 1e-10 < expected < 1e-7  # small, and not floored


def test_saddle_point_error_at_the_switch_size() -> None:
    # continuous deltas just past EXACT_MAX: the documented bounds (docs/statistics.md)
    rng = np.random.default_rng(17)
    worst_abs = worst_rel = 0.0
    for m in (EXACT_MAX + 1, EXACT_MAX + 2):
        for _ in range(8):
            for d in (rng.normal(0.05, 0.3, m), rng.beta(2, 2, m) - rng.beta(2, 3, m)):
                exact, approx = exact_p(d), float(sign_flip_p(d[None, :])[0])
                worst_abs = max(worst_abs, abs(approx - exact))
                worst_rel = max(worst_rel, abs(approx - exact) / exact)
    assert worst_abs < 5e-4
    assert worst_rel < 0.02


def test_a_few_dominant_deltas_are_enumerated() -> None:
    # a smooth approximation of a lumpy distribution is off by ~0.2 here; the split is not
    rng = np.random.default_rng(19)
    for _ in range(4):
        d = np.concatenate([rng.normal(0.0, 0.02, EXACT_MAX - 1), [0.9, -0.8, 0.7]])
        exact = exact_p(d)
        assert split_p(d[None, :])[0] == pytest.approx(exact, abs=1e-4)
        assert sign_flip_p(d[None, :])[0] == pytest.approx(exact, abs=1e-4)
    heavy = np.clip(rng.standard_t(2, EXACT_MAX + 1) * 0.1, -1, 1)
    assert sign_flip_p(heavy[None, :])[0] == pytest.approx(exact_p(heavy), abs=5e-4)


def test_lattice_saddle_point_is_close_to_the_grid_convolution() -> None:
    rng = np.random.default_rng(23)
    for m in (100, 400):
        d = rng.choice(_GRADES, m, p=np.array([1, 1, 2, 4, 6, 4, 2, 1]) / 21)
        exact = float(sign_flip_p(d[None, :])[0])
        approx = float(saddle_p(d[None, :])[0])  # the lattice-corrected saddle point
        assert approx == pytest.approx(exact, rel=2e-3, abs=1e-4)


def test_saddle_point_agrees_with_a_large_monte_carlo() -> None:
    rng = np.random.default_rng(29)
    d = rng.normal(0.02, 0.3, 200)
    flips = 200_000
    signs = rng.integers(0, 2, size=(flips, d.size)).astype(np.float64) * 2.0 - 1.0
    mc = float((np.abs(signs @ d) >= abs(d.sum()) - 1e-9).mean())
    se = (mc * (1 - mc) / flips) ** 0.5
    assert float(sign_flip_p(d[None, :])[0]) == pytest.approx(mc, abs=4 * se)


def test_far_tail_has_no_floor() -> None:
    d = np.full(1_001, 0.1)  # only all-plus and all-minus reach the observed sum
    assert sign_flip_p(d[None, :])[0] == pytest.approx(2.0**-1000, rel=1e-12)
    rng = np.random.default_rng(31)
    c = rng.normal(0.3, 0.3, EXACT_MAX + 1)  # continuous, p ~ 1e-9
    exact = exact_p(c)
    assert exact < 1e-6
    # the order of magnitude, not its digits: 2**-35 atoms are still visible this far out
    assert sign_flip_p(c[None, :])[0] == pytest.approx(exact, rel=0.25)


def test_rows_are_independent_and_zero_rows_get_one() -> None:
    rng = np.random.default_rng(37)
    rows = np.zeros((4, 60))
    rows[0, :10] = rng.normal(0.1, 0.3, 10)
    rows[1] = rng.choice(_GRADES, 60)
    rows[2] = rng.normal(0.0, 0.3, 60)
    together = sign_flip_p(rows)
    alone = [float(sign_flip_p(r[None, :])[0]) for r in rows]
    assert together.tolist() == alone
    assert together[3] == 1.0
    assert sign_flip_p(np.empty((2, 0))).tolist() == [1.0, 1.0]


def test_paired_keeps_its_rules() -> None:
    same = paired(np.array([0.2, 0.5]), np.array([0.2, 0.5]))
    assert same.p_value == 1.0
    assert np.isnan(paired(np.array([]), np.array([])).p_value)
