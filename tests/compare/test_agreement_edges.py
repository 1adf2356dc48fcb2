"""Agreement and reducer edges (issue 30, item 6): the exact agreement's CI when every resample
agrees alike, statistics without rounding noise at 0, pass^k as a float, and one non-binary
value's interval (the summary's degenerate rule, docs/scoring.md)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalbook as eb
from evalbook._model._reducers import pass_at_estimate, pass_hat_estimate


def _plain(values: list[float], labels: list[Any]) -> eb.Run:
    data = pd.DataFrame({"id": [f"c{i}" for i in range(len(values))], "human": labels})
    by_id = {f"c{i}": v for i, v in enumerate(values)}
    return eb.run(
        data,
        task=lambda id: id,
        scorers=[eb.scorer("ok")(lambda output: by_id[output])],
        store=None,
        progress=False,
    )


def _wilson(k: float, n: int) -> tuple[float, float]:
    z = stats.norm.ppf(0.975)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


@pytest.mark.parametrize(("agree", "n"), [(0, 10), (10, 10), (0, 3)])
def test_exact_agreement_ci_is_never_zero_width(agree: int, n: int) -> None:
    # the judge says 1 where the person says 0 (and the reverse) on n - agree cases
    human = [float(i % 2) for i in range(n)]
    judge = [h if i < agree else 1.0 - h for i, h in enumerate(human)]
    row = eb.agreement(_plain(judge, human), "human", score="ok").summary.iloc[0]
    assert row["exact_agreement"] == agree / n
    low, high = row["exact_agreement_ci_low"], row["exact_agreement_ci_high"]
    assert high > low  # was [0, 0] for 0 of 10
    assert (low, high) == pytest.approx(_wilson(agree, n))  # the summary's degenerate rule


def test_no_statistic_prints_as_minus_zero() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        human = rng.integers(0, 2, 12).astype(float).tolist()
        judge = rng.integers(0, 2, 12).astype(float).tolist()
        row = eb.agreement(_plain(judge, human), "human", score="ok", n_boot=200).summary.iloc[0]
        for key, value in row.items():
            if isinstance(value, float) and not math.isnan(value):
                assert not f"{value:.3f}".startswith("-0.000"), (key, value)
                assert math.copysign(1.0, value) > 0 or value != 0, (key, value)


def test_pass_hat_and_pass_at_are_floats_at_the_edges() -> None:
    for n in (1, 2, 5):
        for k in range(1, n + 1):
            got = pass_hat_estimate(n, n, k)
            assert type(got) is float and got == 1.0  # was the int 1
            assert type(pass_at_estimate(n, 0, k)) is float


def test_a_single_non_binary_value_gets_wilson_of_its_mean() -> None:
    run = eb.run(
        pd.DataFrame({"id": ["c0"]}),
        task=lambda: 0.3,
        scorers=[eb.scorer("q")(lambda output: output)],
        store=None,
        progress=False,
    )
    row = run.summary().iloc[0]
    low, high = _wilson(0.3, 1)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert 0.0 < row["ci_low"] < 0.3 < row["ci_high"] < 1.0  # not [0, 1] (docs/scoring.md)
