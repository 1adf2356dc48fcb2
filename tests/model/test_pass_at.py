"""The pass@k and pass^k estimators: exact rationals, the HumanEval reference, edge cases,
and properties (range, monotonicity)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

# the estimators at counts no run reaches (n up to 10,000 epochs), against exact rationals
from evalbook._model._reducers import pass_at_estimate, pass_hat_estimate

COUNTS = [(n, c, k) for n in range(1, 31) for c in range(n + 1) for k in range(1, n + 1)]


def _exact_pass_at(n: int, c: int, k: int) -> Fraction:
    return 1 - Fraction(math.comb(n - c, k), math.comb(n, k))


def _exact_pass_hat(n: int, c: int, k: int) -> Fraction:
    return Fraction(math.comb(c, k), math.comb(n, k))


def _humaneval_pass_at_k(n: int, c: int, k: int) -> float:
    # the numerically stable form of Chen et al. (2021), as published with HumanEval
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def test_pass_at_equals_the_exact_rational_for_every_count_up_to_30() -> None:
    worst = max(
        abs(pass_at_estimate(n, c, k) - float(_exact_pass_at(n, c, k))) for n, c, k in COUNTS
    )
    print(f"pass@k: {len(COUNTS)} (n, c, k) with n ≤ 30, largest error {worst:.2e}")
    assert worst < 1e-13


def test_pass_hat_equals_the_exact_rational_for_every_count_up_to_30() -> None:
    worst = max(
        abs(pass_hat_estimate(n, c, k) - float(_exact_pass_hat(n, c, k))) for n, c, k in COUNTS
    )
    print(f"pass^k: {len(COUNTS)} (n, c, k) with n ≤ 30, largest error {worst:.2e}")
    assert worst < 1e-13


def test_pass_at_equals_the_humaneval_reference_on_the_same_counts() -> None:
    worst = max(
        abs(pass_at_estimate(n, c, k) - _humaneval_pass_at_k(n, c, k)) for n, c, k in COUNTS
    )
    assert worst < 1e-13


@pytest.mark.parametrize("n", [1, 2, 5, 30, 200, 10_000])
def test_edges_are_exact(n: int) -> None:
    for k in sorted({k for k in (1, 2, n // 2, n) if 1 <= k <= n}):
        assert pass_at_estimate(n, 0, k) == 0.0
        assert pass_at_estimate(n, n, k) == 1.0
        assert pass_hat_estimate(n, n, k) == 1.0
        assert pass_hat_estimate(n, 0, k) == 0.0
        if k > 1:
            assert pass_hat_estimate(n, k - 1, k) == 0.0  # fewer passes than draws
        assert pass_at_estimate(n, n - k + 1, k) == 1.0  # n − c < k: a pass in every draw


def test_k_of_1_is_the_pass_rate() -> None:
    assert pass_at_estimate(4, 1, 1) == pytest.approx(0.25, abs=1e-15)
    assert pass_hat_estimate(4, 3, 1) == pytest.approx(0.75, abs=1e-15)


def test_large_counts_stay_finite_where_binomials_overflow_a_float() -> None:
    # C(2000, 1000) is about 1e600: a quotient of floats would be inf/inf
    got = pass_at_estimate(2000, 3, 1000)
    assert got == pytest.approx(float(_exact_pass_at(2000, 3, 1000)), abs=1e-12)
    assert 0.0 < pass_hat_estimate(2000, 1990, 5) < 1.0


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (3, 1, 4), (0, 0, 1)])
def test_impossible_counts_are_refused(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError, match="need 0 ≤ c ≤ n"):
        pass_at_estimate(n, c, k)
    with pytest.raises(ValueError, match="need 0 ≤ c ≤ n"):
        pass_hat_estimate(n, c, k)


@st.composite
def counts(draw: st.DrawFn) -> tuple[int, int, int]:
    n = draw(st.integers(1, 400))
    return n, draw(st.integers(0, n)), draw(st.integers(1, n))


@given(counts())
@example((340, 48, 1))  # found by hypothesis: pass^1 above pass@1 by 1.03e-15 (rounding)
def test_estimates_are_probabilities_monotone_in_c_and_k(nck: tuple[int, int, int]) -> None:
    n, c, k = nck
    at, hat = pass_at_estimate(n, c, k), pass_hat_estimate(n, c, k)
    assert 0.0 <= hat <= 1.0 and 0.0 <= at <= 1.0
    # all k pass ⇒ at least one passes (two different products of up to n factors: equal up
    # to their rounding at k = 1, about n ulps; hypothesis found 1.03e-15 at n = 340, c = 48)
    assert hat <= at + n * 2.0**-52
    if c < n:  # one more pass never lowers either
        assert pass_at_estimate(n, c + 1, k) >= at
        assert pass_hat_estimate(n, c + 1, k) >= hat
    if k < n:  # one more draw: at least one pass is likelier, all pass less likely
        assert pass_at_estimate(n, c, k + 1) >= at
        assert pass_hat_estimate(n, c, k + 1) <= hat


@pytest.mark.parametrize(
    ("c", "at", "hat"), [(3, (0.6, 0.9, 1.0), (0.3, 0.1)), (1, (0.2, 0.4, 0.6), (0.0, 0.0))]
)
def test_the_worked_example_of_docs_repeats(
    c: int, at: tuple[float, ...], hat: tuple[float, ...]
) -> None:
    # the table of docs/repeats.md, computed by the estimator itself (n = 5 epochs)
    assert [round(pass_at_estimate(5, c, k), 12) for k in (1, 2, 3)] == list(at)
    assert [round(pass_hat_estimate(5, c, k), 12) for k in (2, 3)] == list(hat)
