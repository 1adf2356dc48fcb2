"""The clustered paired comparison: Student's t tail, the clustered t test, rho and mde.

Checked against independent computations: scipy's t distribution, `cluster_se` of the
deltas, numpy's correlation and the power of the tests run (scipy's noncentral t and
binomial, tests/_power_ref.py); then through `eb.compare`.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests import _power_ref as ref

import evalbook as eb

# hand-written numerics (Student's t tail, the clustered t) against scipy, at any t and df
from evalbook._model._paired import CLUSTERED_T, clustered_t, paired, pearson, t_two_sided_p
from evalbook._model._stats import cluster_se, t975


@pytest.mark.parametrize("df", [1, 2, 3, 7, 19, 49, 60, 61, 200, 1000])
@pytest.mark.parametrize("t", [0.01, 0.3, 1.0, 1.96, 2.5, 4.0, 9.0, 40.0])
def test_t_tail_matches_scipy(df: int, t: float) -> None:
    expected = 2 * stats.t.sf(t, df)
    assert t_two_sided_p(t, df) == pytest.approx(expected, rel=1e-12)
    assert t_two_sided_p(-t, df) == t_two_sided_p(t, df)


def test_t_tail_large_df_and_the_ends() -> None:
    for df in (5_000, 100_000):
        for t in (0.5, 2.0, 6.0):
            assert t_two_sided_p(t, df) == pytest.approx(2 * stats.t.sf(t, df), rel=1e-10)
    # df = 1 is the Cauchy distribution: 1 - 2 atan(t) / pi, exact near t = 0 too
    assert t_two_sided_p(1e-8, 1) == pytest.approx(1 - 2 * math.atan(1e-8) / math.pi, rel=1e-15)
    assert t_two_sided_p(0.0, 5) == 1.0
    assert t_two_sided_p(math.inf, 5) == 0.0
    assert t_two_sided_p(t975(12), 12) == pytest.approx(0.05, rel=1e-9)


def _clustered_data(seed: int, clusters: int, per: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    codes = np.repeat(np.arange(clusters), per)
    level = rng.uniform(0.2, 0.8, clusters)[codes]
    a = (rng.random(codes.size) < level).astype(float)
    b = (rng.random(codes.size) < level + 0.1).astype(float)
    return a, b, codes


def test_clustered_t_is_cluster_se_of_the_deltas() -> None:
    a, b, codes = _clustered_data(1, 12, 5)
    d = b - a
    se, c = cluster_se(d, codes)
    low, high, p, se2, c2 = clustered_t(d, codes)
    assert (se2, c2) == (se, c) and c == 12
    mean = d.mean()
    assert low == pytest.approx(max(-1, mean - t975(11) * se), abs=1e-15)
    assert high == pytest.approx(min(1, mean + t975(11) * se), abs=1e-15)
    assert p == pytest.approx(2 * stats.t.sf(abs(mean) / se, 11), rel=1e-12)
    # by hand: the C/(C-1)-corrected sum of squared per-cluster sums of deviations
    sums = np.array([(d[codes == k] - mean).sum() for k in range(12)])
    assert se == pytest.approx(math.sqrt(12 / 11 * (sums**2).sum() / d.size**2), rel=1e-12)


def test_paired_with_clusters_for_binary_and_continuous() -> None:
    a, b, codes = _clustered_data(2, 20, 4)
    for x, y in ((a, b), (a * 0.7 + 0.1, b * 0.5 + 0.2)):
        r = paired(x, y, clusters=codes)
        d = y - x
        se, c = cluster_se(d, codes)
        assert r.test == CLUSTERED_T and r.n_clusters == c == 20
        assert r.sd_delta == pytest.approx(se * math.sqrt(d.size), rel=1e-12)
        assert r.mde == pytest.approx(ref.t_mde(se, 19), rel=1e-8)  # t on C - 1 = 19 df
        assert r.rho == pytest.approx(np.corrcoef(x, y)[0, 1], rel=1e-12)


def test_unclustered_mde_and_rho_against_numpy() -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 50)
    b = np.clip(a + rng.normal(0.05, 0.2, 50), 0, 1)
    r = paired(a, b)
    sd = np.std(b - a, ddof=1)
    assert r.sd_delta == pytest.approx(sd, rel=1e-12) and r.n_clusters == 50
    assert r.mde == pytest.approx(ref.t_mde(sd / math.sqrt(50), 49), rel=1e-8)
    assert r.rho == pytest.approx(np.corrcoef(a, b)[0, 1], rel=1e-12)


def test_degenerate_cases() -> None:
    # one pair: no sd, no rho, no mde
    one = paired(np.array([0.2]), np.array([0.4]))
    assert math.isnan(one.sd_delta) and math.isnan(one.mde) and math.isnan(one.rho)
    # a constant run: rho undefined
    assert math.isnan(pearson(np.array([1.0, 1.0, 1.0]), np.array([0.0, 1.0, 1.0])))
    # one cluster: the whole range and p = 1
    r = paired(np.array([0.0, 0.0, 1.0]), np.array([1.0, 1.0, 1.0]), clusters=np.zeros(3, int))
    assert (r.ci_low, r.ci_high, r.p_value, r.n_clusters) == (-1.0, 1.0, 1.0, 1)
    # every delta 0: p = 1, and the summary's degenerate rule on the delta scale around 0
    # (2 · wilson(2, 4) − 1), never a zero-width interval
    z = paired(
        np.array([0.5, 1.0, 0.0, 1.0]), np.array([0.5, 1.0, 0.0, 1.0]), clusters=np.arange(4)
    )
    low, high = stats.binomtest(2, 4).proportion_ci(method="wilson")
    assert z.p_value == 1.0
    assert (z.ci_low, z.ci_high) == (pytest.approx(2 * low - 1), pytest.approx(2 * high - 1))
    assert z.ci_low < 0 < z.ci_high
    # every cluster moves by the same amount: SE 0 leaves the t test nothing to divide by; the
    # exact sign-flip test of the 4 cluster sums (2 of 16 sign patterns reach it) and the
    # degenerate rule at a mean delta of 1 over 4 clusters (2 · wilson(4, 4) − 1, 1)
    s = paired(
        np.array([0.0, 0.0, 0.0, 0.0]), np.array([1.0, 1.0, 1.0, 1.0]), clusters=np.arange(4)
    )
    low, high = stats.binomtest(4, 4).proportion_ci(method="wilson")
    assert s.p_value == pytest.approx(2 / 16)
    assert (s.ci_low, s.ci_high) == (pytest.approx(2 * low - 1), 1.0)
    assert s.ci_low < 1.0


def _cluster_runs() -> tuple[pd.DataFrame, eb.Run, eb.Run]:
    a, b, codes = _clustered_data(5, 15, 4)
    df = pd.DataFrame({"passage": [f"p{c}" for c in codes], "ya": a, "yb": b})
    kw = {"scorers": [lambda output: output], "store": None, "progress": False}
    old = eb.run(df, task=lambda ya: ya, name="old", **kw)
    new = eb.run(df, task=lambda yb: yb, name="new", **kw)
    return df, old, new


def test_compare_cluster_is_the_clustered_t_of_the_deltas() -> None:
    df, old, new = _cluster_runs()
    cmp = eb.compare(old, new, cluster="passage")
    row = cmp.summary.iloc[0]
    d = (df["yb"] - df["ya"]).to_numpy()
    codes = pd.factorize(df["passage"])[0]
    se, c = cluster_se(d, codes)
    low, high, p, _, _ = clustered_t(d, codes)
    assert row["test"] == "clustered t" and row["n_clusters"] == c == 15
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert row["p_value"] == pytest.approx(p, rel=1e-12)
    assert row["mde"] == pytest.approx(ref.t_mde(se, 14), rel=1e-8)
    assert row["rho"] == pytest.approx(np.corrcoef(df["ya"], df["yb"])[0, 1], rel=1e-12)
    # without cluster=: each case its own cluster, the binary test
    plain = eb.compare(old, new).summary.iloc[0]
    assert plain["test"] == "exact McNemar" and plain["n_clusters"] == 60
    discordant = np.count_nonzero(d) / 60  # the exact McNemar test's power
    assert plain["mde"] == pytest.approx(ref.mcnemar_mde(60, discordant), rel=1e-6)


def test_the_run_default_and_turning_it_off() -> None:
    _, old, new = _cluster_runs()
    new.options["cluster"] = "passage"  # as eb.run(cluster=) records it; a has none
    assert eb.compare(old, new).summary["test"].iloc[0] == "clustered t"
    assert eb.compare(old, new, cluster=False).summary["test"].iloc[0] == "exact McNemar"
    old.options["cluster"] = "nope"  # a's default, not in the data: said, not clustered
    cmp = eb.compare(old, new)
    assert cmp.cluster is None and cmp.summary["test"].iloc[0] == "exact McNemar"
    assert any("clustered by 'nope'" in w and "not clustered" in w for w in cmp.warnings)
    assert any("clustered by different columns" in w for w in cmp.warnings)


def test_cluster_errors() -> None:
    _, old, new = _cluster_runs()
    with pytest.raises(eb.ConfigurationError, match="'nope' is not a column"):
        eb.compare(old, new, cluster="nope")
    with pytest.raises(eb.ConfigurationError, match="cluster="):
        eb.compare(old, new, cluster=["passage"])  # type: ignore[arg-type]


SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_paired_cluster.py"


def _sim() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_paired_cluster", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_simulation_bounded_form(record_property: Any) -> None:
    """A small seeded form of benchmarks/sim_paired_cluster.py (its long form: 2,000 sims)."""
    sim = _sim()
    fp = sim.false_positives(300, "20×10 strong", seed=3)
    power = sim.power_15pp(200, seed=4)
    check = sim.mde_check(100, seed=5)
    figure = (
        f"20×10 strong: false positives {fp.plain:.1%} without cluster=, {fp.clustered:.1%} "
        f"with; power +15 pp {power:.1%}; mde {check.error:+.1%} off the 80 % effect"
    )
    print(figure)
    record_property("paired_cluster", figure)
    # 300 sims: a Monte Carlo sd of about 1.3 points around 5 %
    assert 0.02 <= fp.clustered <= 0.09
    assert fp.plain > fp.clustered + 0.03
    assert power >= 0.70
    assert abs(check.error) <= 0.2
