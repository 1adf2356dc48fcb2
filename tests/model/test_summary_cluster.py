"""`summary(cluster=)`: the cluster-robust t, and the one rule for degenerate samples."""

from __future__ import annotations

import importlib.util
import itertools
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest

import evalbook as eb
from evalbook._model._stats import cluster_se, grouped_ci, mean_ci, t975, wilson


def _run(values: list[float], passage: list[str]) -> eb.Run:
    data = pd.DataFrame({"passage": passage, "i": range(len(values))})
    return eb.run(
        data,
        task=lambda i: "o",
        scorers=[eb.scorer("s")(lambda i: values[i])],
        store=None,
        progress=False,
    )


def test_clustered_ci_is_mean_pm_t_of_c_minus_1_times_cluster_se() -> None:
    rng = np.random.default_rng(7)
    passage = [f"p{i // 4}" for i in range(40)]
    values = list((rng.random(40) < np.repeat(rng.random(10), 4)) * 1.0)  # binary, clustered
    row = _run(values, passage).summary(cluster="passage").iloc[0]
    x = np.array(values)
    se, c = cluster_se(x, pd.factorize(pd.Series(passage))[0])
    half = t975(c - 1) * se
    assert row["n_clusters"] == c == 10
    assert row["ci_low"] == pytest.approx(max(0.0, x.mean() - half))
    assert row["ci_high"] == pytest.approx(min(1.0, x.mean() + half))
    # binary values with cluster=: the clustered t, not Wilson
    assert (row["ci_low"], row["ci_high"]) != pytest.approx(wilson(x.sum(), 40))


def test_without_cluster_each_case_is_its_own_cluster() -> None:
    values = [0.1, 0.5, 0.9, 0.3]
    row = _run(values, ["a", "a", "b", "b"]).summary().iloc[0]
    assert row["n_clusters"] == 4
    own = _run(values, ["a", "b", "c", "d"]).summary(cluster="passage").iloc[0]
    assert (own["ci_low"], own["ci_high"]) == pytest.approx((row["ci_low"], row["ci_high"]))


def test_grouped_ci_matches_one_group_at_a_time() -> None:
    rng = np.random.default_rng(1)
    x = rng.random(300).round(1)
    g = rng.integers(0, 7, 300)
    cl = rng.integers(0, 40, 300)
    got = grouped_ci(x, g, 7, cl)
    for j in range(7):
        se, c = cluster_se(x[g == j], cl[g == j])
        assert got.se[j] == pytest.approx(se) and got.n_clusters[j] == c


@pytest.mark.parametrize("n", [1, 2, 33])
def test_degenerate_samples_get_wilson_of_the_mean_over_c(n: int) -> None:
    """One rule: no spread to estimate (one value, all equal, one cluster) -> wilson(mean*C, C)."""
    _, lo, hi = mean_ci(np.full(n, 0.25))
    assert (lo, hi) == pytest.approx(wilson(0.25 * n, n))
    assert lo < 0.25 < hi  # never a zero-width interval
    one_cluster = grouped_ci(
        np.array([0.2, 0.6] * n), np.zeros(2 * n, np.int64), 1, np.zeros(2 * n, np.int64)
    )
    assert (one_cluster.low[0], one_cluster.high[0]) == pytest.approx(wilson(0.4, 1))


def test_degenerate_intervals_narrow_with_more_values() -> None:
    widths = [np.subtract(*mean_ci(np.full(n, 0.5))[:0:-1]) for n in (1, 4, 33, 1000)]
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
    x = np.array(values)
    group = np.zeros(200, np.int64)
    plain = grouped_ci(x, group, 1)
    clustered = grouped_ci(x, group, 1, np.arange(200) // 10)
    for got, want in ((run.summary(), plain), (run.summary(cluster="passage"), clustered)):
        assert (got["ci_low"].iloc[0], got["ci_high"].iloc[0]) == (want.low[0], want.high[0])
