"""Paired statistics: unit checks against scipy, and the honesty simulations.

The simulations run the same vectorised functions that `eb.compare` calls (each row of a 2-D
array is one simulated comparison of two runs over N = 200 cases), with fixed seeds, so they
are fast and give the same figures on every run. With S = 2000 simulations the standard error
of a rate near 5 % is 0.5 points and of a coverage near 95 % is 0.5 points, so the bounds
below (≤ 7 %, 95 ± 3 %) sit several standard errors from the target.
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from decimal import Decimal, localcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalbook._model._paired import (
    _EXACT_BINOM_MAX,
    _STIRLERR,
    EXACT_MAX,
    MCNEMAR,
    SIGN_FLIP,
    _binom_half_pmf,
    holm,
    is_binary,
    mcnemar_p,
    newcombe_ci,
    paired,
    t_ci,
)
from evalbook._model._permutation import sign_flip_p

N = 200  # cases per simulated comparison
S = 2000  # simulated comparisons per scenario


# -- unit checks --------------------------------------------------------------------------


def _scipy_mcnemar(k: np.ndarray, m: np.ndarray) -> np.ndarray:
    """The scipy formula `mcnemar_p` used before it stopped importing scipy."""
    tail = stats.binom.cdf(np.minimum(k, m - k), m, 0.5)
    return np.where(m > 0, np.minimum(1.0, 2.0 * tail), 1.0)


def _assert_close(ours: np.ndarray, expected: np.ndarray) -> None:
    """Within 1e-12 relative, or 1e-15 absolute for smaller p-values."""
    bad = ~np.isclose(ours, expected, rtol=1e-12, atol=1e-15)
    assert not bad.any(), list(zip(ours[bad][:5], expected[bad][:5], strict=True))


def _exact_p(k: int, m: int) -> float:
    """min(1, 2 P[X <= min(k, m - k)]) for X ~ Binomial(m, 1/2), in integers (slow)."""
    j = min(k, m - k)
    term = total = math.comb(m, j)
    for i in range(j, 0, -1):  # C(m, i - 1) = C(m, i) * i / (m - i + 1), exactly
        term = term * i // (m - i + 1)
        total += term
    return min(1.0, total / 2 ** (m - 1)) if m else 1.0


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 150), st.integers(0, 150))
def test_mcnemar_is_the_exact_binomial_test_on_discordant_pairs(k: int, r: int) -> None:
    p = float(mcnemar_p(np.array([k]), np.array([r]))[0])
    expected = stats.binomtest(k, k + r, 0.5).pvalue if k + r else 1.0
    assert p == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_mcnemar_matches_scipy_on_every_k_up_to_400_discordant_pairs() -> None:
    m, k = np.meshgrid(np.arange(401), np.arange(401), indexing="ij")
    m, k = m[k <= m], k[k <= m]
    _assert_close(mcnemar_p(k, m - k), _scipy_mcnemar(k, m))


def test_mcnemar_matches_scipy_for_large_counts() -> None:
    rng = np.random.default_rng(8)
    m = rng.integers(_EXACT_BINOM_MAX - 50, 200_001, 400)
    spread = rng.normal(0.0, 2.0, m.size) * np.sqrt(m)  # p-values that are not all ~0
    near = np.clip(m // 2 + spread.astype(np.int64), 0, m)
    k = np.concatenate([rng.integers(0, m + 1), near])
    m = np.concatenate([m, m])
    _assert_close(mcnemar_p(k, m - k), _scipy_mcnemar(k, m))
    assert (mcnemar_p(k, m - k) > 1e-6).sum() > 200  # the sample covers ordinary p-values


def test_mcnemar_extremes() -> None:
    ms = [1, 2, 3, 4, 999, 1000, 1001, 1002, 99_999, 100_000, 100_001]
    cases = [
        (k, m)
        for m in ms
        for k in {0, 1, m // 2 - 1, m // 2, (m + 1) // 2, m // 2 + 1, m - 1, m}
        if 0 <= k <= m
    ]
    k = np.array([c[0] for c in cases])
    m = np.array([c[1] for c in cases])
    p = mcnemar_p(k, m - k)
    _assert_close(p, _scipy_mcnemar(k, m))
    assert p[np.abs(2 * k - m) <= 1].tolist() == [1.0] * int((np.abs(2 * k - m) <= 1).sum())
    # One discordant pair in 3: exactly 2 * (1 + 3) / 8; all of 10 one way: exactly 2 / 1024.
    assert mcnemar_p(np.array([1, 10]), np.array([2, 0])).tolist() == [1.0, 2 / 1024]
    # The p-value does not depend on the direction of the change.
    assert mcnemar_p(k, m - k).tolist() == mcnemar_p(m - k, k).tolist()


@pytest.mark.parametrize(
    ("k", "m"), [(1_000, 1_800), (2_950, 6_000), (9_860, 20_000), (10_200, 20_001)]
)
def test_mcnemar_beyond_the_integer_path_matches_exact_integer_arithmetic(k: int, m: int) -> None:
    assert m > _EXACT_BINOM_MAX
    p = float(mcnemar_p(np.array([k]), np.array([m - k]))[0])
    assert p == pytest.approx(_exact_p(k, m), rel=1e-13)


def test_mcnemar_keeps_the_shape_of_its_input() -> None:
    k = np.array([[0, 3], [5, 40]])
    r = np.array([[0, 1], [9, 10]])
    p = mcnemar_p(k, r)
    assert p.shape == (2, 2)
    _assert_close(p.ravel(), _scipy_mcnemar(k.ravel(), (k + r).ravel()))


def test_binomial_probability_matches_exact_integer_arithmetic() -> None:
    worst = 0.0
    for n in [*range(1, 60), 1_001, 1_777, 5_000]:
        for x in range(n + 1):
            exact = math.comb(n, x) / 2**n
            if exact > 1e-12:  # smaller ones only need to be tiny
                worst = max(worst, abs(_binom_half_pmf(x, n) - exact) / exact)
    assert worst < 1e-13


def test_stirling_error_table() -> None:
    with localcontext() as ctx:
        ctx.prec = 40
        pi = Decimal("3.141592653589793238462643383279502884197")
        for n in range(1, len(_STIRLERR)):
            log_fact = Decimal(math.factorial(n)).ln()
            exact = log_fact - (n + Decimal("0.5")) * Decimal(n).ln() + n - (2 * pi).ln() / 2
            assert _STIRLERR[n] == pytest.approx(float(exact), rel=1e-15)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_p(np.array([0, 0]), np.array([0, 0])).tolist() == [1.0, 1.0]


counts = st.tuples(*(st.integers(0, 60) for _ in range(4))).filter(lambda c: sum(c) > 0)


@settings(max_examples=300, deadline=None)
@given(counts)
def test_newcombe_interval_brackets_the_delta_and_is_symmetric(c: tuple[int, ...]) -> None:
    both, improved, regressed, neither = (np.array([x]) for x in c)
    lo, hi = newcombe_ci(both, improved, regressed, neither)
    delta = (c[1] - c[2]) / sum(c)
    assert -1.0 <= lo[0] <= delta + 1e-12 <= hi[0] + 2e-12 <= 1.0 + 3e-12
    assert hi[0] - lo[0] > 0  # never degenerate, even without discordant pairs
    # Swapping the runs negates the interval.
    lo2, hi2 = newcombe_ci(both, regressed, improved, neither)
    assert (lo2[0], hi2[0]) == pytest.approx((-hi[0], -lo[0]), abs=1e-12)


def test_newcombe_without_correlation_is_square_and_add_of_wilson() -> None:
    # 10 both, 10 improved, 10 regressed, 10 neither: ad - bc = 0, so phi = 0.
    lo, hi = newcombe_ci(np.array([10]), np.array([10]), np.array([10]), np.array([10]))
    half = stats.norm.ppf(0.975)
    p, n = 0.5, 40
    centre = (p + half**2 / (2 * n)) / (1 + half**2 / n)
    w = half * math.sqrt(p * (1 - p) / n + half**2 / (4 * n * n)) / (1 + half**2 / n)
    expected = math.sqrt(2) * (p - (centre - w))
    assert (lo[0], hi[0]) == pytest.approx((-expected, expected), abs=1e-12)


def test_newcombe_with_no_pairs_is_nan() -> None:
    lo, hi = newcombe_ci(*(np.array([0]) for _ in range(4)))
    assert math.isnan(lo[0]) and math.isnan(hi[0])


def test_t_interval_matches_scipy() -> None:
    d = np.random.default_rng(3).normal(0.1, 0.2, size=40)
    lo, hi = t_ci(d[None, :])
    ci = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert (lo[0], hi[0]) == pytest.approx((ci.low, ci.high), rel=1e-9)


def test_t_interval_edge_cases() -> None:
    lo, hi = t_ci(np.array([[0.3]]))
    assert (lo[0], hi[0]) == (-1.0, 1.0)
    lo, hi = t_ci(np.empty((1, 0)))
    assert math.isnan(lo[0]) and math.isnan(hi[0])
    lo, hi = t_ci(np.array([[1.0, -1.0, 1.0]]))
    assert lo[0] >= -1.0 and hi[0] <= 1.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0]), max_size=10))
def test_sign_flip_exact_matches_brute_force(values: list[float]) -> None:
    d = np.array(values)
    observed = abs(d.sum())
    flips = [abs(np.dot(s, d)) for s in itertools.product((-1.0, 1.0), repeat=d.size)]
    expected = float(np.mean([f >= observed - 1e-9 for f in flips])) if d.size else 1.0
    assert sign_flip_p(d[None, :])[0] == pytest.approx(expected)


def test_sign_flip_zero_deltas_change_nothing() -> None:
    d = np.array([0.5, -0.25, 0.75, 0.5, 1.0])
    padded = np.concatenate([d, np.zeros(30)])
    assert sign_flip_p(d[None, :])[0] == sign_flip_p(padded[None, :])[0]
    assert sign_flip_p(np.zeros((2, 5))).tolist() == [1.0, 1.0]


def test_sign_flip_long_rows_are_deterministic_and_close_to_the_normal_limit() -> None:
    # (exactness and the approximation's error: tests/model/test_permutation.py)
    rng = np.random.default_rng(11)
    d = rng.normal(0.03, 0.3, size=(5, EXACT_MAX + 200))
    first, second = sign_flip_p(d), sign_flip_p(d)
    assert first.tolist() == second.tolist()
    z = np.abs(d.sum(axis=1)) / np.sqrt((d * d).sum(axis=1))
    assert first == pytest.approx(2 * stats.norm.sf(z), abs=0.02)
    far = np.full((1, 1001), 0.1)  # only all-plus and all-minus reach |100.1|: 2 / 2**1001
    assert sign_flip_p(far)[0] == pytest.approx(2.0**-1000, rel=1e-12)


# Scores for `eb.compare` in a fresh process: 0/1 values (exact McNemar) and non-binary ones
# whose non-zero deltas (all +-0.25) take each sign-flip path: enumerated (<= EXACT_MAX) and
# the grid convolution (beyond); both exact, so each is the binomial test of the signs.
_COMPARE_DATA = """
import numpy as np
n = 1_200
rng = np.random.default_rng(5)
a = {"ok": (rng.random(n) < 0.5).astype(float)}
b = {"ok": np.where(rng.random(n) < 0.2, 1.0 - a["ok"], a["ok"])}
for name, changed in (("few", 12), ("some", 300), ("many", n)):
    a[name] = np.round(rng.random(n) * 4) / 4
    step = rng.choice([-0.25, 0.25], n) * (np.arange(n) < changed)
    b[name] = a[name] + np.where(np.abs(a[name] + step - 0.5) > 0.5, -step, step)
"""

_COMPARE_CODE = (
    _COMPARE_DATA
    + """
import json, sys
import pandas as pd
import evalbook as eb

def make(values, name):
    frame = pd.DataFrame({"id": [f"c{i}" for i in range(n)], "i": range(n)})
    scorers = [eb.scorer(s)(lambda i, s=s: float(values[s][i])) for s in values]
    return eb.run(frame, task=lambda i: "out", scorers=scorers, name=name, store=None,
                  progress=False)

run_a, run_b = make(a, "a"), make(b, "b")
assert "scipy" not in sys.modules, "eb.run imported scipy"
summary = eb.compare(run_a, run_b, score=list(a)).summary
print(json.dumps({"scipy": "scipy" in sys.modules,
                  "rows": summary[["score", "test", "p_value", "improved", "regressed"]]
                  .to_dict("records")}))
"""
)


def test_compare_in_a_fresh_process_does_not_import_scipy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _COMPARE_CODE], capture_output=True, text=True, check=True
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["scipy"] is False
    rows = {r["score"]: r for r in result["rows"]}
    data: dict[str, dict[str, np.ndarray]] = {}
    exec(_COMPARE_DATA, data)
    a, b = data["a"], data["b"]
    # Each score took the path it was meant to take, with the p-value scipy would give.
    ok = rows["ok"]
    assert ok["test"] == MCNEMAR
    assert ok["improved"] + ok["regressed"] > 100
    binom = stats.binomtest(ok["improved"], ok["improved"] + ok["regressed"], 0.5).pvalue
    assert ok["p_value"] == pytest.approx(binom, rel=1e-12)
    nonzero = {s: int(np.sum(b[s] != a[s])) for s in ("few", "some", "many")}
    assert nonzero["few"] <= EXACT_MAX < nonzero["some"] < nonzero["many"]
    for s in ("few", "some", "many"):
        assert rows[s]["test"] == SIGN_FLIP
        assert rows[s]["p_value"] == paired(a[s], b[s]).p_value
        d = b[s] - a[s]
        signs = stats.binomtest(int(np.sum(d > 0)), int(np.sum(d != 0)), 0.5).pvalue
        assert rows[s]["p_value"] == pytest.approx(signs, rel=1e-9)
    assert 1e-6 < rows["many"]["p_value"] < 0.999  # an ordinary p-value, not a clipped one


def test_holm_matches_the_step_down_definition() -> None:
    p = np.array([0.01, 0.04, math.nan, 0.03, 0.20])
    adjusted = holm(p)
    # Sorted finite p: 0.01, 0.03, 0.04, 0.20 with factors 4, 3, 2, 1; running maximum.
    assert adjusted[[0, 3, 1, 4]] == pytest.approx([0.04, 0.09, 0.09, 0.20])
    assert math.isnan(adjusted[2])
    assert holm(np.array([0.6, 0.5])).tolist() == [1.0, 1.0]
    assert math.isnan(holm(np.array([math.nan]))[0])


def test_paired_on_binary_and_continuous_values() -> None:
    a = np.array([0.0, 0.0, 1.0, 1.0, 0.0])
    b = np.array([1.0, 1.0, 1.0, 0.0, 0.0])
    r = paired(a, b)
    assert (r.n_paired, r.improved, r.regressed, r.same, r.test) == (5, 2, 1, 2, MCNEMAR)
    assert r.delta == pytest.approx(r.mean_b - r.mean_a) == pytest.approx(0.2)
    assert r.p_value == pytest.approx(stats.binomtest(2, 3, 0.5).pvalue)
    assert r.ci_low <= r.delta <= r.ci_high
    c = paired(np.array([0.2, 0.4, 0.9]), np.array([0.3, 0.4, 1.0]))
    assert (c.test, c.improved, c.same) == (SIGN_FLIP, 2, 1)


def test_paired_degenerate_cases() -> None:
    empty = paired(np.array([]), np.array([]))
    assert empty.n_paired == 0 and empty.test is None
    assert all(math.isnan(x) for x in (empty.p_value, empty.delta, empty.ci_low, empty.mean_a))
    same = paired(np.array([0.5, 0.7, 1.0]), np.array([0.5, 0.7, 1.0]))
    assert (same.p_value, same.delta, same.same) == (1.0, 0.0, 3)
    same01 = paired(np.array([1.0, 0.0]), np.array([1.0, 0.0]))
    assert same01.p_value == 1.0 and same01.ci_low < 0.0 < same01.ci_high


def test_is_binary() -> None:
    assert is_binary(np.array([0.0, 1.0]), np.array([1.0]))
    assert not is_binary(np.array([0.0, 1.0]), np.array([0.5]))


# -- simulations ----------------------------------------------------------------------------


def _binary_counts(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    return ((a & b).sum(1), (~a & b).sum(1), (a & ~b).sum(1), (~a & ~b).sum(1))


def _binary(
    p_a: float, p_b: float, seed: int, correlated: bool
) -> tuple[np.ndarray, np.ndarray, float]:
    """S simulated paired runs of 0/1 scores; returns (a, b, true delta)."""
    rng = np.random.default_rng(seed)
    if not correlated:
        return rng.random((S, N)) < p_a, rng.random((S, N)) < p_b, p_b - p_a
    # Each case has its own difficulty; run b lifts it by p_b - p_a (capped at 1).
    ease = rng.random((S, N))
    lift = p_b - p_a
    a = rng.random((S, N)) < ease
    b = rng.random((S, N)) < np.minimum(1.0, ease + lift)
    true = (1 - lift) ** 2 / 2 + lift * (1 - lift) + lift - 0.5  # E[min(1, U + lift)] - E[U]
    return a, b, true


def _continuous(mean_b: float, seed: int, discrete: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """S simulated paired runs of continuous (or 5-level judge) scores with mean 0.5 in a."""
    rng = np.random.default_rng(seed)
    shape = 2.0
    a = rng.beta(shape, shape, (S, N))
    b_shape = (shape * mean_b / (1 - mean_b), shape)
    b = rng.beta(*b_shape, (S, N))
    if discrete:  # judge-like scores on 0, .25, .5, .75, 1: many ties and zero deltas
        a, b = np.round(a * 4) / 4, np.round(b * 4) / 4
        grid = np.linspace(0, 1, 5)
        mids = np.concatenate([[0.0], (grid[:-1] + grid[1:]) / 2, [1.0]])
        pa = np.diff(stats.beta.cdf(mids, shape, shape))
        pb = np.diff(stats.beta.cdf(mids, *b_shape))
        return a, b, float(grid @ pb - grid @ pa)
    return a, b, mean_b - 0.5


@pytest.mark.parametrize("correlated", [False, True])
def test_mcnemar_null_rejection_is_at_most_7_percent(correlated: bool) -> None:
    a, b, _ = _binary(0.5, 0.5, seed=101, correlated=correlated)
    _, improved, regressed, _ = _binary_counts(a, b)
    rejected = float((mcnemar_p(improved, regressed) < 0.05).mean())
    assert rejected <= 0.07


@pytest.mark.parametrize("discrete", [False, True])
def test_sign_flip_null_rejection_is_at_most_7_percent(discrete: bool) -> None:
    a, b, _ = _continuous(0.5, seed=202, discrete=discrete)
    rejected = float((sign_flip_p(b - a) < 0.05).mean())
    assert rejected <= 0.07


def test_mcnemar_power_from_50_to_65_percent_is_at_least_70_percent() -> None:
    a, b, _ = _binary(0.50, 0.65, seed=303, correlated=False)
    _, improved, regressed, _ = _binary_counts(a, b)
    assert float((mcnemar_p(improved, regressed) < 0.05).mean()) >= 0.70


@pytest.mark.parametrize("discrete", [False, True])
def test_sign_flip_power_from_50_to_65_percent_is_at_least_70_percent(discrete: bool) -> None:
    a, b, _ = _continuous(0.65, seed=404, discrete=discrete)
    assert float((sign_flip_p(b - a) < 0.05).mean()) >= 0.70


@pytest.mark.parametrize(
    ("p_a", "p_b", "correlated"),
    [(0.5, 0.5, False), (0.5, 0.65, False), (0.5, 0.5, True), (0.5, 0.65, True), (0.8, 0.9, False)],
)
def test_newcombe_coverage_is_95_plus_minus_3(p_a: float, p_b: float, correlated: bool) -> None:
    a, b, true = _binary(p_a, p_b, seed=505, correlated=correlated)
    lo, hi = newcombe_ci(*_binary_counts(a, b))
    coverage = float(((lo <= true) & (true <= hi)).mean())
    assert 0.92 <= coverage <= 0.98


@pytest.mark.parametrize(("mean_b", "discrete"), [(0.5, False), (0.65, False), (0.65, True)])
def test_t_interval_coverage_is_95_plus_minus_3(mean_b: float, discrete: bool) -> None:
    a, b, true = _continuous(mean_b, seed=606, discrete=discrete)
    lo, hi = t_ci(b - a)
    coverage = float(((lo <= true) & (true <= hi)).mean())
    assert 0.92 <= coverage <= 0.98


def test_the_simulations_exercise_what_compare_uses() -> None:
    # `paired()` (called by eb.compare per score) gives the same p and CI as the vectorised
    # functions the simulations use.
    a, b, _ = _binary(0.5, 0.65, seed=707, correlated=True)
    lo, hi = newcombe_ci(*_binary_counts(a[:5], b[:5]))
    p = mcnemar_p(*_binary_counts(a[:5], b[:5])[1:3])
    ca, cb, _ = _continuous(0.6, seed=707, discrete=False)
    pc = sign_flip_p(cb[:5] - ca[:5])
    tlo, thi = t_ci(cb[:5] - ca[:5])
    for i in range(5):
        r = paired(a[i].astype(float), b[i].astype(float))
        assert (r.p_value, r.ci_low, r.ci_high) == pytest.approx((p[i], lo[i], hi[i]))
        c = paired(ca[i], cb[i])
        assert (c.p_value, c.ci_low, c.ci_high) == pytest.approx((pc[i], tlo[i], thi[i]))
