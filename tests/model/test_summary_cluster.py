"""`summary(cluster=)`: the cluster-robust t, and the one rule for degenerate samples."""

from __future__ import annotations

import importlib.util
import itertools
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalbook as eb
from _public import wilson


def _run(values: list[float], passage: list[str], **columns: list[Any]) -> eb.Run:
    data = pd.DataFrame({"passage": passage, "i": range(len(values)), **columns})
    return eb.run(
        data,
        task=lambda i: "o",
        scorers=[eb.scorer("s")(lambda i: values[i])],
        store=None,
        progress=False,
    )


def _cluster_se(x: np.ndarray, codes: np.ndarray) -> tuple[float, int]:
    """The cluster-robust SE of the mean, by loops: sqrt(C/(C-1) * sum_c (sum dev)^2 / n^2)."""
    groups = sorted(set(codes.tolist()))
    mean = float(x.mean())
    total = sum(float((x[codes == g] - mean).sum()) ** 2 for g in groups)
    c = len(groups)
    return math.sqrt(c / (c - 1) * total / x.size**2), c


def _interval(row: pd.Series) -> tuple[float, float]:
    return float(row["ci_low"]), float(row["ci_high"])


def test_clustered_ci_is_mean_pm_t_of_c_minus_1_times_cluster_se() -> None:
    rng = np.random.default_rng(7)
    passage = [f"p{i // 4}" for i in range(40)]
    values = list((rng.random(40) < np.repeat(rng.random(10), 4)) * 1.0)  # binary, clustered
    row = _run(values, passage).summary(cluster="passage").iloc[0]
    x = np.array(values)
    se, c = _cluster_se(x, pd.factorize(pd.Series(passage))[0])
    half = float(stats.t.ppf(0.975, c - 1)) * se
    assert row["n_clusters"] == c == 10
    assert row["ci_low"] == pytest.approx(max(0.0, x.mean() - half))
    assert row["ci_high"] == pytest.approx(min(1.0, x.mean() + half))
    # binary values with cluster=: the clustered t, not Wilson
    assert (row["ci_low"], row["ci_high"]) != pytest.approx(wilson(x.sum(), 40))


def test_without_cluster_each_case_is_its_own_cluster() -> None:
    """Without `cluster=` each case is its own cluster (n_clusters = n) and the interval is the
    spread-scaled Wilson one (docs/statistics.md), by hand here; a `cluster=` column of one
    case per cluster gives the cluster-robust t, which is then the plain t interval."""
    values = [0.1, 0.5, 0.9, 0.3]
    row = _run(values, ["a", "a", "b", "b"]).summary().iloc[0]
    assert row["n_clusters"] == 4
    x, n, z = np.array(values), 4, 1.959963984540054
    m = (x.sum() + 0.25) / (n + 0.5)
    added = ((x - m) ** 2).sum() + 0.25 * (m**2 + (1 - m) ** 2)
    trials = n / min(1.0, added / (n - 0.5) / (m * (1 - m)))
    p_hat = x.mean()
    centre = (p_hat + z * z / (2 * trials)) / (1 + z * z / trials)
    half = (
        z * np.sqrt(p_hat * (1 - p_hat) / trials + z * z / (4 * trials**2)) / (1 + z * z / trials)
    )
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((centre - half, centre + half))
    own = _run(values, ["a", "b", "c", "d"]).summary(cluster="passage").iloc[0]
    t_half = float(stats.t.ppf(0.975, n - 1)) * x.std(ddof=1) / np.sqrt(n)
    assert own["n_clusters"] == 4
    # its part within [0, 1]
    t_interval = (max(0.0, p_hat - t_half), min(1.0, p_hat + t_half))
    assert (own["ci_low"], own["ci_high"]) == pytest.approx(t_interval)


def test_each_slice_is_its_cases_alone_clusters_included() -> None:
    rng = np.random.default_rng(1)
    x = rng.random(300).round(1).tolist()
    g = rng.integers(0, 7, 300)
    cl = rng.integers(0, 40, 300)
    got = _run(x, [f"p{c}" for c in cl], g=g.tolist()).summary(by="g", cluster="passage")
    got = got.set_index("g")
    assert sorted(got.index) == list(range(7))
    for j in range(7):
        mine = np.flatnonzero(g == j)
        alone = _run([x[i] for i in mine], [f"p{cl[i]}" for i in mine]).summary(cluster="passage")
        se, c = _cluster_se(np.array(x)[mine], cl[mine])
        assert got.loc[j, "n_clusters"] == alone["n_clusters"].iloc[0] == c
        assert _interval(got.loc[j]) == pytest.approx(_interval(alone.iloc[0]), rel=1e-12)
        half = float(stats.t.ppf(0.975, c - 1)) * se
        assert got.loc[j, "ci_high"] - got.loc[j, "mean"] == pytest.approx(half, rel=1e-9)


@pytest.mark.parametrize("n", [1, 2, 33])
def test_degenerate_samples_get_wilson_of_the_mean_over_c(n: int) -> None:
    """One rule: no spread to estimate (one value, all equal, one cluster) -> wilson(mean*C, C)."""
    lo, hi = _interval(_run([0.25] * n, [f"p{i}" for i in range(n)]).summary().iloc[0])
    assert (lo, hi) == pytest.approx(wilson(0.25 * n, n))
    assert lo < 0.25 < hi  # never a zero-width interval
    one_cluster = _run([0.2, 0.6] * n, ["p"] * (2 * n)).summary(cluster="passage").iloc[0]
    assert _interval(one_cluster) == pytest.approx(wilson(0.4, 1))


def test_degenerate_intervals_narrow_with_more_values() -> None:
    widths = []
    for n in (1, 4, 33, 1000):
        lo, hi = _interval(_run([0.5] * n, [f"p{i}" for i in range(n)]).summary().iloc[0])
        widths.append(hi - lo)
    assert all(a > b for a, b in itertools.pairwise(widths))


SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_cluster_coverage.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_cluster_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("clusters", "per"), [(20, 10), (50, 4)])
def test_clustered_ci_covers_and_the_plain_one_does_not(
    clusters: int, per: int, record_property: Any
) -> None:
    """A bounded form of benchmarks/sim_cluster_coverage.py (300 sims, strong correlation)."""
    got = _script().simulate(300, clusters, per, icc=0.3, seed=5)
    figure = f"{clusters}x{per} icc 0.3: plain {got.plain:.1%}, clustered {got.clustered:.1%}"
    record_property("coverage", figure)
    # 300 sims: a Monte Carlo sd of about 1.3 points around 95 %
    assert 0.90 <= got.clustered <= 0.99
    assert got.plain < 0.90 and got.plain < got.clustered - 0.05


def test_the_simulated_intervals_are_what_summary_gives_on_a_real_run() -> None:
    rng = np.random.default_rng(11)
    p = np.repeat(rng.beta(1.4, 0.93, 20), 10)
    values = list((rng.random(200) < p) * 1.0)
    passage = [f"p{i // 10}" for i in range(200)]
    run = _run(values, passage)
    # the script's intervals of one simulated eval of these 200 cases in 20 passages
    plain, clustered = _script().intervals(
        np.array(values), np.zeros(200, np.int64), 1, np.arange(200) // 10
    )
    for got, want in ((run.summary(), plain), (run.summary(cluster="passage"), clustered)):
        assert (got["ci_low"].iloc[0], got["ci_high"].iloc[0]) == (want.low[0], want.high[0])
