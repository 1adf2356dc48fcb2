"""`eb.sample_size` and `eb.mde`: the power of the test run (scipy's noncentral t and exact
binomial sums in tests/_power_ref.py), `like=` a comparison, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from tests import _power_ref as ref

import evalbook as eb


def _runs(clustered: bool = False) -> tuple[eb.Run, eb.Run]:
    rng = np.random.default_rng(11)
    n = 80
    df = pd.DataFrame(
        {"passage": np.repeat(np.arange(20), 4), "u": rng.random(n), "v": rng.random(n)}
    )
    sc = [
        eb.scorer("hit")(lambda u, v, output: float(u + output > 0.9)),
        eb.scorer("soft")(lambda u, v, output: float(u * (1 - output) + v * output)),
    ]
    a = eb.run(df, task=lambda v: 0.0, scorers=sc, name="a", store=None, progress=False)
    b = eb.run(df, task=lambda v: 0.3, scorers=sc, name="b", store=None, progress=False)
    if clustered:
        a.options["cluster"] = "passage"  # what eb.run(cluster="passage") records
    return a, b


def test_formula_and_inverse() -> None:
    for delta, sd in ((0.03, 0.35), (0.1, 0.5), (-0.05, 0.2)):
        n = eb.sample_size(delta, sd_delta=sd)
        assert n == ref.t_n(delta, sd)
        assert eb.mde(n, sd_delta=sd) <= abs(delta) < eb.mde(n - 1, sd_delta=sd)
    assert eb.mde(100, sd_delta=0.5) == pytest.approx(ref.t_mde(0.05, 99), rel=1e-8)
    assert eb.mde(np.int64(100), sd_delta=0.5) == eb.mde(100, sd_delta=0.5)
    assert eb.mde(50, sd_delta=0.3, power=0.9, alpha=0.01) == pytest.approx(
        ref.t_mde(0.3 / math.sqrt(50), 49, power=0.9, alpha=0.01), rel=1e-8
    )
    # t quantiles, not z: at 10 cases the mde is 11 % above the z formula's
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert eb.mde(10, sd_delta=0.3) > 1.1 * z * 0.3 / math.sqrt(10)


def test_discordant_plans_the_exact_mcnemar_test() -> None:
    # the docs' example: runs that disagree on 12 % of 0/1 questions, a 3-point change
    n = eb.sample_size(0.03, discordant=0.12)
    assert ref.mcnemar_power(n, 0.03, 0.12) >= 0.8 > ref.mcnemar_power(n - 1, 0.03, 0.12)
    assert eb.mde(n, discordant=0.12) <= 0.03 < eb.mde(n - 1, discordant=0.12)
    for m, share in ((50, 0.3), (200, 0.12), (1000, 0.12)):
        assert eb.mde(m, discordant=share) == pytest.approx(ref.mcnemar_mde(m, share), rel=1e-6)
    # the old formula's n: 1,069 questions at sd 0.35 detect 3 points 77.8 % of the time
    assert ref.mcnemar_power(1069, 0.03, 0.1234) == pytest.approx(0.778, abs=5e-4)
    assert eb.sample_size(0.03, discordant=0.1234) == 1126
    assert math.isinf(eb.mde(5, discordant=0.5))  # 5 pairs: p >= 2/32, never significant
    assert eb.mde(6, discordant=0.5) < 1  # 6 alike: p = 2/64 < 0.05


def test_like_a_comparison_reads_its_sd_of_deltas() -> None:
    a, b = _runs()
    cmp = eb.compare(a, b, score="soft")
    d = cmp.cases["delta"].to_numpy()
    sd = d.std(ddof=1)
    assert eb.mde(len(d), like=cmp) == pytest.approx(cmp.summary["mde"].iloc[0], rel=1e-12)
    assert eb.mde(400, like=cmp) == pytest.approx(ref.t_mde(sd / 20, 399), rel=1e-8)
    assert eb.sample_size(0.02, like=cmp) == eb.sample_size(0.02, sd_delta=sd)
    both = eb.compare(a, b, score=["hit", "soft"])
    assert eb.mde(400, like=both, score="soft") == eb.mde(400, like=cmp)
    # with slices, like= plans from the whole comparison's deltas
    sliced = eb.compare(a, b, score="soft", by="passage")
    assert eb.mde(400, like=sliced) == eb.mde(400, like=cmp)


def test_like_a_clustered_comparison_uses_the_clustered_sd() -> None:
    a, b = _runs(clustered=True)
    cmp = eb.compare(a, b, score="soft")
    assert cmp.cluster == "passage" and cmp.summary["test"].iloc[0] == "clustered t"
    row = cmp.summary.iloc[0]
    assert eb.mde(int(row["n_paired"]), like=cmp) == pytest.approx(row["mde"], rel=1e-12)
    plain = eb.compare(a, b, score="soft", cluster=False)
    assert eb.mde(80, like=cmp) != pytest.approx(eb.mde(80, like=plain))
    # 20 clusters of 4: planned on twice the cases, the t test has 40 - 1 df
    sd = float(row["mde"]) * math.sqrt(80) / ref.t_mde(1.0, 19)
    assert eb.mde(160, like=cmp) == pytest.approx(ref.t_mde(sd / math.sqrt(160), 39), rel=1e-7)


def test_like_a_comparison_of_0_1_scores_plans_mcnemar() -> None:
    a, b = _runs()
    cmp = eb.compare(a, b, score="hit")
    row = cmp.summary.iloc[0]
    assert row["test"] == "exact McNemar"
    share = (row["improved"] + row["regressed"]) / row["n_paired"]
    assert row["mde"] == pytest.approx(ref.mcnemar_mde(80, share), rel=1e-6)
    assert eb.mde(300, like=cmp) == eb.mde(300, discordant=share)
    assert eb.sample_size(0.05, like=cmp) == eb.sample_size(0.05, discordant=share)


def test_errors() -> None:
    a, b = _runs()
    both = eb.compare(a, b, score=["hit", "soft"])
    bad = [
        (lambda: eb.mde(100), "exactly one of like="),
        (lambda: eb.mde(100, like=both, sd_delta=0.3), "exactly one of like="),
        (lambda: eb.mde(100, like=both), "compared 2 scores"),
        (lambda: eb.mde(100, like=both, score="nope"), "score='nope' is not in"),
        (lambda: eb.mde(0, sd_delta=0.3), "n must be"),
        (lambda: eb.mde(True, sd_delta=0.3), "n must be"),
        (lambda: eb.mde(10, sd_delta=-1.0), "sd_delta must be positive"),
        (lambda: eb.mde(10, sd_delta=0.3, power=1.0), "power must be between"),
        (lambda: eb.sample_size(0.0, sd_delta=0.3), "delta must not be 0"),
        (lambda: eb.sample_size(float("nan"), sd_delta=0.3), "delta must be a finite"),
        (lambda: eb.sample_size(0.1, sd_delta=0.3, alpha=0), "alpha must be between"),
        (lambda: eb.sample_size(0.1, like=a), "like= takes a Comparison"),
        (lambda: eb.mde(10, sd_delta=0.3, discordant=0.1), "exactly one of like="),
        (lambda: eb.mde(10, discordant=0.0), "discordant must be a share"),
        (lambda: eb.mde(10, discordant=1.5), "discordant must be a share"),
        (lambda: eb.mde(10, like=both, score="hit", discordant=0.1), "exactly one of"),
    ]
    for call, message in bad:
        with pytest.raises(eb.ConfigurationError, match=message):
            call()
    same = eb.compare(a, a, score="soft")  # every delta 0: nothing to plan from
    with pytest.raises(eb.ConfigurationError, match="no spread of paired deltas"):
        eb.sample_size(0.05, like=same)
