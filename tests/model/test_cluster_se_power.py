"""The clustered standard error, Student's t quantile and the power formulas against
independent computations (loops, scipy): hand-written numerics, no public surface of their own."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tests import _power_ref as ref

# hand-written numerics against loops and scipy, with edge cases the public path refuses
from evalbook._model._power import mde_of, n_for
from evalbook._model._stats import cluster_se, t975


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.floats(0, 1), min_size=2, max_size=40),
    seed=st.integers(0, 10_000),
)
def test_cluster_se_is_the_sandwich_formula_computed_by_loops(
    values: list[float], seed: int
) -> None:
    x = np.array(values)
    clusters = np.random.default_rng(seed).integers(0, 6, size=x.size)
    se, c = cluster_se(x, clusters)
    groups = sorted(set(clusters.tolist()))
    assert c == len(groups)
    if c < 2:
        assert math.isnan(se)
        return
    mean = sum(values) / len(values)
    total = 0.0
    for g in groups:
        s = sum(v - mean for v, k in zip(values, clusters.tolist(), strict=True) if k == g)
        total += s * s
    expected = math.sqrt(c / (c - 1) * total / len(values) ** 2)
    assert se == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_one_value_per_cluster_is_the_usual_standard_error() -> None:
    x = np.random.default_rng(3).random(30)
    se, c = cluster_se(x, np.arange(30))
    assert c == 30 and se == pytest.approx(stats.sem(x), rel=1e-12)


def test_mde_and_sample_size_are_the_t_tests_and_invert_each_other() -> None:
    # the power of the t test on n - 1 df (scipy's noncentral t), not z quantiles
    assert mde_of(400, 0.3) == pytest.approx(ref.t_mde(0.3 / 20, 399), rel=1e-8)
    assert mde_of(100, 0.5, power=0.9, alpha=0.01) == pytest.approx(
        ref.t_mde(0.05, 99, power=0.9, alpha=0.01), rel=1e-8
    )
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert mde_of(10, 0.4) > 1.1 * z * 0.4 / math.sqrt(10)  # t on 9 df: 12 % above z's
    for n in (10, 57, 1000):
        d = mde_of(n, 0.4)
        assert n_for(d * (1 + 1e-12), 0.4) == n
    assert math.isnan(mde_of(0, 0.5)) and math.isnan(mde_of(10, math.nan))
    assert math.isnan(mde_of(40, 0.0))  # no spread: unknown, never "detects everything"
    with pytest.raises(ValueError):
        n_for(0.0, 0.3)


def test_t975_matches_scipy_without_importing_it() -> None:
    for df in [*range(1, 200), 500, 1_000, 10_000, 1_000_000]:
        assert abs(t975(df) - float(stats.t.ppf(0.975, df))) < 1e-9, df
    with pytest.raises(ValueError, match="at least 1"):
        t975(0)
