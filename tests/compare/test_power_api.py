"""`eb.sample_size` and `eb.mde`: the formula, `like=` a comparison, and their errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalbook as eb

Z_SUM = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)


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
        exact = (Z_SUM * sd / abs(delta)) ** 2
        assert n == math.ceil(exact - 1e-9)
        assert eb.mde(n, sd_delta=sd) <= abs(delta) < eb.mde(n - 1, sd_delta=sd)
    assert eb.mde(100, sd_delta=0.5) == pytest.approx(Z_SUM * 0.05, rel=1e-9)
    assert eb.mde(np.int64(100), sd_delta=0.5) == eb.mde(100, sd_delta=0.5)
    z = stats.norm.ppf(0.995) + stats.norm.ppf(0.9)
    assert eb.mde(50, sd_delta=0.3, power=0.9, alpha=0.01) == pytest.approx(
        z * 0.3 / math.sqrt(50), rel=1e-9
    )


def test_like_a_comparison_reads_its_sd_of_deltas() -> None:
    a, b = _runs()
    cmp = eb.compare(a, b, score="soft")
    d = cmp.cases["delta"].to_numpy()
    sd = d.std(ddof=1)
    assert eb.mde(len(d), like=cmp) == pytest.approx(cmp.summary["mde"].iloc[0], rel=1e-12)
    assert eb.mde(400, like=cmp) == pytest.approx(Z_SUM * sd / 20, rel=1e-9)
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
    ]
    for call, message in bad:
        with pytest.raises(eb.ConfigurationError, match=message):
            call()
    same = eb.compare(a, a, score="soft")  # every delta 0: nothing to plan from
    with pytest.raises(eb.ConfigurationError, match="no spread of paired deltas"):
        eb.sample_size(0.05, like=same)
