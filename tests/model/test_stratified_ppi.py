"""The stratified corrected mean (`stratified_corrected_mean`, issue 35; docs/statistics.md):
with one stratum it is the uniform one exactly; over every draw of a stratified design its
estimate is exactly unbiased and its correction's variance term too; the merging rule for
strata with fewer than two labels; a seeded simulation of its coverage."""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._model._agreement_stats import (
    _merged,
    corrected_mean,
    stratified_corrected_mean,
    stratified_terms,
)
from evalbook._model._label_pick import label_strata, pick_samples

unit = st.floats(0, 1, allow_nan=False)


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(unit, unit, st.booleans()), min_size=1, max_size=60), st.integers(-3, 9))
def test_one_stratum_is_the_uniform_corrected_mean(
    cases: list[tuple[float, float, bool]], stratum: int
) -> None:
    judged = np.array([f for f, _, _ in cases])
    human = np.array([h if labelled else np.nan for _, h, labelled in cases])
    got, used = stratified_corrected_mean(judged, human, np.full(len(cases), stratum))
    want = corrected_mean(judged, human)
    assert used == 1
    assert np.allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True), (got, want)


def _enumerate(judged: np.ndarray, human: np.ndarray, strata: np.ndarray, takes: list[int]):
    """theta and the correction's variance term over every stratified draw of `takes` labels
    per stratum (each draw equally likely, as `pick_samples` draws a stratum uniformly)."""
    members = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    out = []
    for chosen in product(*(combinations(m, k) for m, k in zip(members, takes, strict=True))):
        labels = np.full(len(judged), np.nan)
        picked = np.concatenate([np.array(c, dtype=int) for c in chosen])
        labels[picked] = human[picked]
        value, _, var_r, _, _ = stratified_terms(judged, labels, strata)
        out.append((value, var_r))
    return np.array(out)


@settings(deadline=None, max_examples=60)
@given(
    st.lists(unit, min_size=9, max_size=9),
    st.lists(unit, min_size=9, max_size=9),
    st.sampled_from([[2, 2, 1], [1, 1, 1], [3, 2, 2], [2, 1, 2]]),
)
def test_over_every_draw_the_estimate_is_unbiased(
    f: list[float], h: list[float], takes: list[int]
) -> None:
    """Nine cases in strata of 4, 3 and 2, each drawn uniformly within: the mean of theta over
    all draws is the human mean of the nine exactly, a stratum with one label included (it
    keeps its own correction; only its variance is pooled with a neighbour)."""
    judged, human = np.array(f), np.array(h)
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2])
    draws = _enumerate(judged, human, strata, takes)
    assert draws[:, 0].mean() == pytest.approx(human.mean(), abs=1e-12)


@settings(deadline=None, max_examples=60)
@given(st.lists(unit, min_size=9, max_size=9), st.lists(unit, min_size=9, max_size=9))
def test_the_correction_variance_is_exact_and_its_estimate_unbiased(
    f: list[float], h: list[float]
) -> None:
    """With two labels or more per stratum, theta's variance over the draws is
    sum_h W_h^2 (1/n_h - 1/N_h) S_{r,h}^2 (the finite-population form `corrected_mean` uses)
    and the estimated term has that mean."""
    judged, human = np.array(f), np.array(h)
    strata = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2])
    takes = [2, 2, 2]
    draws = _enumerate(judged, human, strata, takes)
    r = judged - human
    exact = sum(
        (len(m) / 9) ** 2 * (1 / k - 1 / len(m)) * r[m].var(ddof=1)
        for m, k in zip((np.arange(4), np.arange(4, 7), np.arange(7, 9)), takes, strict=True)
    )
    assert draws[:, 0].var() == pytest.approx(exact, abs=1e-12)
    assert draws[:, 1].mean() == pytest.approx(exact, abs=1e-12)


def test_strata_with_fewer_than_two_labels_are_merged_with_a_neighbour() -> None:
    # the smallest first, into its adjacent group with fewer labels (the lower on a tie)
    assert _merged(np.array([0, 5, 1, 3, 0]), 2).tolist() == [0, 0, 1, 1, 1]
    assert _merged(np.array([2, 1, 2]), 2).tolist() == [0, 0, 1]
    assert _merged(np.array([3, 3]), 2).tolist() == [0, 1]
    assert _merged(np.array([1]), 2).tolist() == [0]
    # a stratum without a label takes its neighbour's correction: the judge's 1.0s are
    # corrected by the labels of its 0.5s (-0.25), the 0.0s by their own (+0.25)
    judged = np.array([0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 1.0, 1.0])
    human = np.array([0.25, 0.25, np.nan, 0.25, 0.25, np.nan, np.nan, np.nan])
    value, _, _, _, used = stratified_terms(judged, human, np.array([0, 0, 0, 1, 1, 1, 2, 2]))
    want = judged.mean() - (3 / 8 * -0.25 + 5 / 8 * 0.25)
    assert value == pytest.approx(want) and used == 2


def test_one_label_in_all_is_the_degenerate_interval_as_uniform() -> None:
    judged = np.array([0.2, 0.4, 0.9, 1.0])
    human = np.array([np.nan, 0.5, np.nan, np.nan])
    got, _ = stratified_corrected_mean(judged, human, np.array([0, 0, 1, 1]))
    assert np.allclose(got, corrected_mean(judged, human))


@pytest.mark.parametrize("judge", ["uneven", "lenient"])
def test_a_seeded_simulation_covers_and_is_narrower(judge: str) -> None:
    """400 evals of benchmarks/sim_review_selection.py's design (N = 1,000, 50 labels): the
    stratified interval covers the population's human mean in 92-98 % (3 Monte Carlo sd of
    95 %) and is narrower on average than the uniform interval on the same labels."""
    rng = np.random.default_rng(35)
    probs = np.array([0.10, 0.15, 0.25, 0.30, 0.20])
    truth = float(np.array([0.0, 0.25, 0.5, 0.75, 1.0]) @ probs)
    covered, narrower = 0, []
    for s in range(400):
        h = rng.choice(5, size=1000, p=probs) + 1
        if judge == "uneven":  # exact at 4-5, a guess among 1-3 below
            f = np.where(h >= 4, h, rng.integers(1, 4, size=1000))
        else:  # a point high half the time at 1-3
            f = np.minimum(h + ((h <= 3) & (rng.random(1000) < 0.5)), 5)
        hs, fs = (h - 1) / 4, (f - 1) / 4
        labels = np.full(1000, np.nan)
        picked = pick_samples(fs, 50, "stratified", seed=s)
        labels[picked] = hs[picked]
        (_, low, high), _ = stratified_corrected_mean(fs, labels, label_strata(fs))
        _, ulow, uhigh = corrected_mean(fs, labels)
        covered += low <= truth <= high
        narrower.append((high - low) / (uhigh - ulow))
    assert 0.92 <= covered / 400 <= 0.98, covered
    assert np.mean(narrower) < (0.8 if judge == "uneven" else 0.99), np.mean(narrower)
