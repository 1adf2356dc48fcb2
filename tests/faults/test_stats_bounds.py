"""A mean and its CI of values in [0, 1] stay in [0, 1] with no clamp (docs/file-formats.md)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

# the bounds of the hand-written intervals at sizes no run reaches (Wilson up to 10**7 trials)
from evalbook._model._stats import mean_ci, wilson

UNIT = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
NEAR_ONE = st.sampled_from([1.0, np.nextafter(1.0, 0.0), 0.9999999999999998, 0.1, 0.7, 0.3])


@settings(max_examples=300, deadline=None)
@given(st.lists(UNIT | NEAR_ONE, min_size=1, max_size=400))
def test_a_mean_and_its_ci_of_unit_values_stay_within_0_and_1(values: list[float]) -> None:
    mean, lo, hi = mean_ci(np.asarray(values, dtype=np.float64))
    assert mean is not None
    assert 0.0 <= lo <= mean <= hi <= 1.0


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=1, max_value=10**7), st.data())
def test_the_wilson_interval_stays_within_0_and_1_around_the_rate(
    n: int, data: st.DataObject
) -> None:
    successes = data.draw(st.integers(min_value=0, max_value=n))
    lo, hi = wilson(successes, n)
    assert 0.0 <= lo <= successes / n <= hi <= 1.0
    if successes == 0:
        assert lo == 0.0
    if successes == n:
        assert hi == 1.0


def test_a_mean_of_many_ones_is_one_exactly() -> None:
    for n in (3, 10, 1001, 123457):
        assert mean_ci(np.ones(n))[0] == 1.0
        assert mean_ci(np.full(n, 0.1))[0] <= 1.0
