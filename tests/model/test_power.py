"""The power behind `mde` and `sample_size` (issue 30, item 3): evalbook's own numerics (no
scipy at run time) against scipy, and a bounded form of benchmarks/sim_power.py (its long
form: 2,000 sims per design, the table in docs/statistics.md)."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scipy import stats
from tests import _power_ref as ref

from evalbook._model._power import EXACT_DISCORDANT, mcnemar_power, mde_of, t_power

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_power.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_power", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("df", [1, 2, 3, 5, 9, 30, 97, 99, 108, 1000, 100_000])
def test_t_power_matches_scipys_noncentral_t(df: int) -> None:
    for alpha in (0.05, 0.01, 0.2):
        for lam in (0.0, 0.5, 2.0, 2.8, 6.0):
            assert t_power(lam, 1.0, df, alpha) == pytest.approx(
                ref.t_power(lam, 1.0, df, alpha), abs=1e-9
            ), (df, alpha, lam)
        # at the mde, the power is the target
        se = 0.05
        mde = mde_of(df + 1, se * math.sqrt(df + 1), alpha=alpha)
        assert ref.t_power(mde, se, df, alpha) == pytest.approx(0.8, abs=1e-8)


@pytest.mark.parametrize(
    ("n", "delta", "share"),
    [(6, 1.0, 0.5), (20, 0.1, 0.3), (50, 0.05, 0.12), (50, 0.2, 0.12), (400, 0.03, 0.1)],
)
def test_mcnemar_power_is_the_exact_sum(n: int, delta: float, share: float) -> None:
    assert mcnemar_power(n, delta, share) == pytest.approx(
        ref.mcnemar_power(n, delta, share), abs=1e-11
    )


def test_mcnemar_by_brute_force_on_a_small_table() -> None:
    """Every (improved, regressed) table of 15 pairs, its multinomial probability and
    scipy's binomtest: the rejection probability, independently of both sums."""
    n, p01, p10 = 15, 0.25, 0.05
    total = 0.0
    for k in range(n + 1):
        for m in range(n + 1 - k):
            prob = stats.multinomial.pmf([k, m, n - k - m], n, [p01, p10, 1 - p01 - p10])
            if k + m and stats.binomtest(k, k + m, 0.5).pvalue <= 0.05:
                total += prob
    assert mcnemar_power(n, p01 - p10, p01 + p10) == pytest.approx(total, abs=1e-12)


def test_beyond_the_exact_sum_the_normal_form_is_within_half_a_point() -> None:
    n, share = 50_000, 0.12  # 6,000 expected discordant pairs: past EXACT_DISCORDANT
    assert n * share > EXACT_DISCORDANT
    mde = mde_of(n, math.nan, discordant=share)
    assert ref.mcnemar_power(n, mde, share) == pytest.approx(0.8, abs=0.005)


def test_the_docs_figure() -> None:
    # "1,069 questions detect 3 points 80 % of the time" (sd 0.35: 12.34 % discordant)
    assert mcnemar_power(1069, 0.03, 0.1234) == pytest.approx(0.778, abs=5e-4)
    assert mcnemar_power(1126, 0.03, 0.1234) >= 0.8


@pytest.mark.parametrize(
    ("design", "call"),
    [
        ("exact McNemar, 50 pairs, 12 % discordant", lambda s: s.mcnemar(1000, 50, 0.12, 7)),
        ("sign-flip, 10 continuous deltas", lambda s: s.continuous(1000, 10, 7)),
        ("clustered t, 10 clusters of 5", lambda s: s.clustered(1000, 10, 7)),
    ],
)
def test_power_at_the_reported_mde_is_80_percent(
    design: str, call: Any, record_property: Any
) -> None:
    """1,000 sims: a Monte Carlo sd of 1.3 points around 80 %; the band is 3 sd. At the old
    formula's mde these designs had 64-70 %."""
    got = call(_script())
    figure = f"{design}: {got.power:.1%} at the mde, {got.old_power:.1%} at the old one"
    print(figure)
    record_property("power", figure)
    assert 0.76 <= got.power <= 0.84
    assert got.old_power < 0.76
