"""No paired or summary interval has zero width, and a 2-case gate never passes with certainty.

The summary's rule for values without a spread (docs/statistics.md): the Wilson interval of
the mean as a proportion of the C cases (or clusters), which narrows as C grows. Paired
deltas follow the same rule on their scale, [−1, 1] (`2 · wilson(ū · C, C) − 1`, ū the mean
delta moved to [0, 1]); so do clusters that all moved by the same amount, whose p-value is
then the exact sign-flip test of the cluster sums (2 clusters: 0.5), never 0.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from tests._cli_helpers import in_process

import evalbook as eb

# the functions eb.compare and run.summary() call, for properties over any values
from evalbook._model._paired import paired, spread_free_ci
from evalbook._model._stats import grouped_ci

_VALUE = st.one_of(
    st.sampled_from([0.0, 0.01, 0.25, 0.3, 0.5, 0.99, 1.0]),
    st.floats(0.0, 1.0, allow_nan=False),
)


def _runs(a: list[float], b: list[float], groups: list[str] | None = None) -> tuple[eb.Run, ...]:
    df = pd.DataFrame({"id": [f"c{i}" for i in range(len(a))], "i": range(len(a))})
    if groups is not None:
        df["passage"] = groups
    ok = eb.define_score("ok", primary=True)
    out = []
    for name, values in (("old", a), ("new", b)):
        scorer = eb.scorer(ok)(lambda i, values=values: values[i])
        out.append(eb.run(df, task=lambda i: i, scorers=[scorer], name=name, store=None,
                          progress=False))  # fmt: skip
    return tuple(out)


def _wilson(k: float, n: int) -> tuple[float, float]:
    """Wilson's interval written out (k may be a fraction)."""
    z = stats.norm.ppf(0.975)
    centre = (k + z * z / 2) / (n + z * z)
    half = z * math.sqrt(k * (n - k) / n + z * z / 4) / (n + z * z)
    return centre - half, centre + half


def test_two_cases_each_one_point_worse() -> None:
    old, new = _runs([0.3, 0.7], [0.29, 0.69])
    row = eb.compare(old, new).summary.iloc[0]
    assert row["test"] == "sign-flip permutation"
    assert row["p_value"] == pytest.approx(0.5)  # 2 of the 4 sign patterns reach |sum|
    low, high = _wilson(0.495 * 2, 2)  # ū = (−0.01 + 1) / 2 over 2 cases
    assert row["ci_low"] == pytest.approx(2 * low - 1) and row["ci_high"] == pytest.approx(
        2 * high - 1
    )
    assert row["ci_low"] < -0.8 and row["ci_high"] > 0.8  # was [−1.0 pp, −1.0 pp]


def test_two_clusters_moving_alike() -> None:
    old, new = _runs([0.0] * 4, [1.0] * 4, groups=["p0", "p0", "p1", "p1"])
    row = eb.compare(old, new, cluster="passage").summary.iloc[0]
    assert row["test"] == "clustered t" and row["n_clusters"] == 2
    assert row["p_value"] == pytest.approx(0.5)  # was 0
    low, _ = _wilson(2, 2)
    assert row["ci_low"] == pytest.approx(2 * low - 1) and row["ci_high"] == 1.0  # was [1, 1]


def test_a_two_case_gate_does_not_pass_on_equal_deltas(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    df = pd.DataFrame({"id": ["c0", "c1"], "v": [0.3, 0.7]})
    ok = eb.define_score("ok", primary=True)
    store = tmp_path / "runs"
    for name, shift in (("base", 0.0), ("new", -0.01)):
        scorer = eb.scorer(ok)(lambda v, shift=shift: v + shift)
        eb.run(df, task=lambda v: v, scorers=[scorer], name=name, store=store, progress=False)
    code, out, _ = in_process(
        capsys, "gate", "new", "--against", "base", "--max-drop", "0.02", "--store", str(store)
    )
    assert code == 1, out  # was: passed, CI [−1.0 pp, −1.0 pp]
    assert "FAIL  ok: delta −1.0 pp vs baseline" in out


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_VALUE, _VALUE), min_size=1, max_size=40),
    st.sampled_from([None, 1, 2, 3, 7]),
    st.booleans(),
)
def test_every_paired_interval_has_width(
    pairs: list[tuple[float, float]], per_cluster: int | None, shift: bool
) -> None:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs]) if not shift else np.clip(a - 0.01, 0, 1)
    clusters = None if per_cluster is None else np.arange(a.size) // per_cluster
    r = paired(a, b, clusters)
    assert r.ci_high > r.ci_low, r
    assert r.ci_low <= r.delta <= r.ci_high
    assert 0.0 <= r.p_value <= 1.0
    if clusters is not None:
        assert r.p_value > 0  # no infinite t: an SE of 0 is no spread, not certainty


@settings(max_examples=300, deadline=None)
@given(st.lists(_VALUE, min_size=1, max_size=40), st.sampled_from([None, 1, 2, 5]))
def test_every_summary_interval_has_width(values: list[float], per_cluster: int | None) -> None:
    x = np.array(values)
    clusters = None if per_cluster is None else np.arange(x.size) // per_cluster
    got = grouped_ci(x, np.zeros(x.size, np.int64), 1, clusters)
    assert got.high[0] > got.low[0]
    assert got.low[0] <= got.mean[0] <= got.high[0]


def test_rounding_noise_is_no_spread() -> None:
    # deltas equal but for their last bit: no spread to estimate, not a 1e-17-wide interval
    a = np.array([0.3, 0.7, 0.1])
    b = a - 0.01
    assert np.ptp(b - a) > 0  # the differences differ in their last bits
    r = paired(a, b)
    assert r.ci_high - r.ci_low > 0.5
    values = np.array([0.3, 0.3, 0.30000000000000004])
    got = grouped_ci(values, np.zeros(3, np.int64), 1)
    assert got.high[0] - got.low[0] > 0.5


@pytest.mark.parametrize("mean", [-1.0, -0.3, 0.0, 0.01, 1.0])
def test_the_spread_free_interval_narrows_with_n(mean: float) -> None:
    widths = []
    for c in (1, 2, 3, 10, 100, 10_000):
        low, high = spread_free_ci(np.array([mean]), np.array([float(c)]))
        assert -1.0 <= low[0] <= mean <= high[0] <= 1.0
        widths.append(float(high[0] - low[0]))
    assert all(w > 0 for w in widths)
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]
