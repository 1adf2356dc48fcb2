"""The corrected mean's CI with labels among the judged cases (issue 30, item 1).

A bounded form of benchmarks/sim_ppi_coverage.py (its long form: 2,000 sims per design, the
table in docs/statistics.md), and the exact claims: with every case labelled the corrected
mean is the human mean and its CI the labels' own; the covariance term by hand.
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

import evalbook as eb

# the function eb.agreement calls, for the simulation
from evalbook._model._agreement_stats import corrected_mean

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_ppi_coverage.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_ppi_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("judge", ["good", "compressed", "uninformative"])
@pytest.mark.parametrize("fraction", [0.25, 0.5, 1.0])
def test_coverage_in_every_design(judge: str, fraction: float, record_property: Any) -> None:
    """600 sims per design: a Monte Carlo sd of 0.9 points around 95 %; the band is 3 sd.
    The formula without the covariance term fails it (compressed judge, half or all
    labelled: 86-88 %; uninformative, all labelled: 100 %)."""
    got = _script().simulate(600, judge, fraction, seed=3)
    figure = f"{judge} {fraction}: nested {got.nested:.1%}, old {got.old:.1%}"
    print(figure)
    record_property("ppi_coverage", figure)
    assert 0.923 <= got.nested <= 0.977
    if fraction == 1.0:
        assert got.narrower == 0 and got.nested_width == pytest.approx(1.0)


def test_every_case_labelled_gives_the_labels_own_interval() -> None:
    rng = np.random.default_rng(4)
    human = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=80)
    judge = np.clip(0.6 + 0.4 * (human - 0.5), 0, 1)  # a compressed judge
    got = corrected_mean(judge, human)
    run = eb.run(
        pd.DataFrame({"id": [f"c{i}" for i in range(80)], "h": human}),
        task=lambda h: h,
        scorers=[eb.scorer("human")(lambda output: output)],
        store=None,
        progress=False,
    )
    row = run.summary().iloc[0]  # the labels' own interval, as a summary gives it
    assert got.value == pytest.approx(human.mean(), abs=1e-15)
    assert (got.ci_low, got.ci_high) == (row["ci_low"], row["ci_high"])


def test_the_covariance_term_by_hand() -> None:
    rng = np.random.default_rng(8)
    n_cases, n = 120, 30
    h = rng.random(n_cases)
    f = np.clip(0.3 + 0.5 * h + rng.normal(0, 0.1, n_cases), 0, 1)
    labelled = rng.permutation(n_cases)[:n]
    known = np.full(n_cases, np.nan)
    known[labelled] = h[labelled]
    got = corrected_mean(f, known)
    r = f[labelled] - h[labelled]
    # Var(f)/N + Var(r)/n − 2 Cov(f, r)/N, each moment on the labelled cases: the same as
    # Var(h)/N + (1/n − 1/N) Var(r)
    var = (
        f[labelled].var(ddof=1) / n_cases
        + r.var(ddof=1) / n
        - 2 * np.cov(f[labelled], r, ddof=1)[0, 1] / n_cases
    )
    half = stats.t.ppf(0.975, n - 1) * math.sqrt(var)
    value = f.mean() - r.mean()
    assert got == pytest.approx((value, value - half, value + half), rel=1e-12)
