"""eb.agreement: a judge's records against human labels, every statistic against an independent
computation (by hand, `krippendorff`, `scipy.stats`), errors apart, PPI in simulation, the card."""

from __future__ import annotations

import math
from typing import Any

import krippendorff
import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import AGREEMENT_COLUMNS

# the statistics' kernel (weighted bootstrap replicates, the PPI estimate) has no public
# surface of its own: checked directly against krippendorff, scipy and simulation
from evalbook._model._agreement_stats import agreement_statistics, corrected_mean

agreement = eb.agreement


def _judged(
    raws: list[Any],
    *,
    labels: list[Any] | None = None,
    scale: tuple[int, int] = (1, 5),
    epochs: int = 1,
    label: str | None = None,
    errored: frozenset[int] = frozenset(),
) -> eb.Run:
    """A run of one judge whose client answers `raws[i]` for case i (None: no score key)."""
    n = len(raws)
    data = pd.DataFrame({"id": [f"c{i}" for i in range(n)], "human": labels or [None] * n})

    def client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        i = int(messages[-1]["content"].split("#")[1][1:])
        return {"justification": "-"} if raws[i] is None else {"score": raws[i]}

    def task(id: str) -> str:
        if int(id[1:]) in errored:
            raise RuntimeError("the task broke")
        return "out"

    definition = eb.define_score("quality", label=label)
    judge = eb.judge(definition, "case #{id}# {output}", client=client, scale=scale)
    return eb.run(data, task=task, scorers=[judge], store=None, progress=False, epochs=epochs)


def _plain(values: list[float], labels: list[Any]) -> eb.Run:
    """A run of a rule score (no raw value in its records): its value is the raw scale."""
    data = pd.DataFrame({"id": [f"c{i}" for i in range(len(values))], "human": labels})
    by_id = {f"c{i}": v for i, v in enumerate(values)}
    return eb.run(
        data,
        task=lambda id: id,
        scorers=[eb.scorer("ok")(lambda output: by_id[output])],
        store=None,
        progress=False,
    )


def _row(a: Any) -> pd.Series:
    return a.summary.iloc[0]


# -- designed data, by hand -----------------------------------------------------------------

# rows: human label 1..3, columns: judge 1..3 (counts)
TABLE = np.array([[8, 2, 0], [1, 6, 3], [0, 2, 8]])


def _pairs_of(table: np.ndarray) -> tuple[list[int], list[int]]:
    human, judge = [], []
    for i in range(table.shape[0]):
        for j in range(table.shape[1]):
            human += [i + 1] * int(table[i, j])
            judge += [j + 1] * int(table[i, j])
    return human, judge


def test_nominal_kappa_and_confusion_match_a_3x3_table_by_hand() -> None:
    human, judge = _pairs_of(TABLE)
    a = agreement(
        _judged(judge, labels=human, scale=(1, 3)), "human", score="quality", kind="nominal"
    )
    total = TABLE.sum()
    p_o = np.trace(TABLE) / total
    p_e = sum(TABLE[k, :].sum() * TABLE[:, k].sum() for k in range(3)) / total**2
    row = _row(a)
    assert row["n"] == total == 30
    assert row["exact_agreement"] == pytest.approx(22 / 30)
    assert row["cohen_kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert row["cohen_kappa"] == pytest.approx(0.6)  # (22/30 - 1/3) / (2/3) by hand
    assert a.confusion.to_numpy().tolist() == TABLE.tolist()
    assert list(a.confusion.index) == [1, 2, 3] and list(a.confusion.columns) == [1, 2, 3]
    assert a.confusion.index.dtype == "int64" == a.confusion.columns.dtype  # reads 1, 2, 3
    assert list(a.summary.columns) == AGREEMENT_COLUMNS
    assert row["cohen_kappa_ci_low"] < row["cohen_kappa"] < row["cohen_kappa_ci_high"]


def _quadratic_kappa_by_hand(table: np.ndarray) -> float:
    k = table.shape[0]
    total = table.sum()
    rows, cols = table.sum(axis=1), table.sum(axis=0)
    observed = expected = 0.0
    for i in range(k):
        for j in range(k):
            weight = (i - j) ** 2 / (k - 1) ** 2
            observed += weight * table[i, j] / total
            expected += weight * rows[i] * cols[j] / total**2
    return 1 - observed / expected


def test_ordinal_kappa_is_quadratic_weighted_as_computed_by_hand() -> None:
    table = np.array(
        [[5, 2, 1, 0, 0], [1, 6, 2, 1, 0], [0, 2, 7, 2, 1], [0, 1, 2, 6, 2], [0, 0, 1, 3, 9]]
    )
    human, judge = _pairs_of(table)
    a = agreement(_judged(judge, labels=human), "human", score="quality")
    assert _row(a)["cohen_kappa"] == pytest.approx(_quadratic_kappa_by_hand(table))
    nominal = agreement(_judged(judge, labels=human), "human", score="quality", kind="nominal")
    assert _row(nominal)["cohen_kappa"] < _row(a)["cohen_kappa"]  # near misses count for ordinal


# -- against the krippendorff package and scipy ----------------------------------------------

_PAIRS = st.lists(st.tuples(st.integers(1, 5), st.integers(1, 5)), min_size=2, max_size=60)


@settings(max_examples=150, deadline=None)
@given(pairs=_PAIRS, kind=st.sampled_from(["nominal", "ordinal", "interval"]))
def test_alpha_matches_the_krippendorff_package(pairs: list[tuple[int, int]], kind: str) -> None:
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs], dtype=float)
    ours = agreement_statistics(np.ones((1, len(x))), x, y, kind)[0, 2]
    if len(np.unique(np.concatenate([x, y]))) < 2:
        assert math.isnan(ours)  # one value only: alpha is undefined, not 1 and not 0
        return
    theirs = krippendorff.alpha(reliability_data=np.vstack([x, y]), level_of_measurement=kind)
    assert ours == pytest.approx(theirs, abs=1e-9)


@settings(max_examples=150, deadline=None)
@given(pairs=_PAIRS)
def test_spearman_matches_scipy(pairs: list[tuple[int, int]]) -> None:
    x = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs], dtype=float)
    ours = agreement_statistics(np.ones((1, len(x))), x, y, "ordinal")[0, 3]
    if len(np.unique(x)) < 2 or len(np.unique(y)) < 2:
        assert math.isnan(ours)
        return
    assert ours == pytest.approx(scipy.stats.spearmanr(x, y).statistic, abs=1e-9)


def test_bootstrap_weights_are_repeated_pairs() -> None:
    # A replicate's weights mean "this pair drawn w times": the same as the repeated data.
    rng = np.random.default_rng(3)
    x, y = rng.integers(1, 6, 40).astype(float), rng.integers(1, 6, 40).astype(float)
    w = rng.integers(0, 4, 40).astype(float)
    for kind in ("nominal", "ordinal", "interval"):
        weighted = agreement_statistics(w[None, :], x, y, kind)[0]
        keep = np.repeat(np.arange(40), w.astype(int))
        repeated = agreement_statistics(np.ones((1, len(keep))), x[keep], y[keep], kind)[0]
        assert weighted == pytest.approx(repeated)


def test_the_run_path_matches_krippendorff_and_scipy_on_a_noisy_judge() -> None:
    rng = np.random.default_rng(7)
    human = rng.integers(1, 6, 80)
    judge = np.clip(human + rng.integers(-1, 2, 80), 1, 5)
    run = _judged(judge.tolist(), labels=human.tolist())
    for kind in ("nominal", "ordinal", "interval"):
        row = _row(agreement(run, "human", score="quality", kind=kind, n_boot=200))
        data = np.vstack([human, judge]).astype(float)
        alpha = krippendorff.alpha(reliability_data=data, level_of_measurement=kind)
        assert row["krippendorff_alpha"] == pytest.approx(alpha)
        assert row["spearman"] == pytest.approx(scipy.stats.spearmanr(human, judge).statistic)
        assert row["offset"] == pytest.approx(float(np.mean(judge - human)))


# -- what is compared ------------------------------------------------------------------------


def test_errors_and_unscored_are_counted_apart_never_as_disagreement() -> None:
    human = [1, 2, 3, 4, 5, 3, 2, 4]
    judge: list[Any] = [1, 2, 3, 4, 5, 99, None, 4]  # 99: out of scale; None: no score key
    run = _judged(judge, labels=human, errored=frozenset({7}))
    row = _row(agreement(run, "human", score="quality"))
    assert row["n"] == 5 and row["n_error"] == 3 and row["n_unscored"] == 0
    assert row["exact_agreement"] == 1.0 and row["cohen_kappa"] == pytest.approx(1.0)

    values = [1.0, 0.5, 0.0]
    plain = _plain(values, [1.0, 0.5, 0.0])
    assert _row(agreement(plain, "human", score="ok"))["exact_agreement"] == 1.0
    skip = eb.scorer("ok")(lambda output: eb.Unscored("no reference") if output == "c1" else 1.0)
    data = pd.DataFrame({"id": ["c0", "c1", "c2"], "human": [1.0, 0.0, 1.0]})
    unscored = eb.run(data, task=lambda id: id, scorers=[skip], store=None, progress=False)
    row = _row(agreement(unscored, "human", score="ok", kind="nominal"))
    assert (row["n"], row["n_unscored"], row["n_error"], row["exact_agreement"]) == (2, 1, 0, 1.0)


def test_missing_labels_are_skipped_and_counted() -> None:
    human: list[Any] = [1, None, 3, float("nan"), 5, pd.NA]
    run = _judged([1, 2, 3, 4, 5, 1], labels=human)
    a = agreement(run, "human", score="quality")
    assert (_row(a)["n"], _row(a)["n_unlabelled"]) == (3, 3)
    assert a.pairs["case_id"].tolist() == ["c0", "c2", "c4"]
    series = pd.Series({"c4": 5, "c0": 1, "c1": None})
    b = agreement(run, series, score="quality")
    assert (_row(b)["n"], _row(b)["n_unlabelled"]) == (2, 4)


def test_epochs_compare_each_sample_with_its_case_label_and_draw_cases() -> None:
    human = [1, 2, 3, 4, 5, 2]
    one = agreement(_judged([1, 2, 3, 5, 5, 1], labels=human), "human", score="quality")
    two = agreement(_judged([1, 2, 3, 5, 5, 1], labels=human, epochs=2), "human", score="quality")
    assert (_row(two)["n"], _row(two)["n_cases"]) == (12, 6)
    for stat in ("exact_agreement", "cohen_kappa", "spearman", "offset"):
        assert _row(two)[stat] == pytest.approx(_row(one)[stat])
    # alpha's small-sample factor (2n - 1) sees twice the values: close, not equal
    assert _row(two)["krippendorff_alpha"] == pytest.approx(_row(one)["krippendorff_alpha"], 0.01)
    assert two.confusion.to_numpy().sum() == 12
    assert two.corrected_mean.value == pytest.approx(one.corrected_mean.value)


def test_a_score_without_raw_values_is_on_its_own_scale() -> None:
    a = agreement(_plain([1.0, 0.5, 0.0, 1.0], [1, 0.5, 0.5, 1]), "human", score="ok")
    assert a.scale == (0, 1)
    assert list(a.confusion.index) == [0.5, 1.0] and a.confusion.index.dtype == "float64"
    assert _row(a)["exact_agreement"] == 0.75
    assert _row(a)["offset"] == pytest.approx(-0.125)


def test_the_bootstrap_is_seeded() -> None:
    run = _judged([1, 2, 2, 4, 5, 3, 3, 1], labels=[1, 2, 3, 4, 4, 3, 2, 2])
    same = [agreement(run, "human", score="quality", seed=5, n_boot=300).summary for _ in range(2)]
    other = agreement(run, "human", score="quality", seed=6, n_boot=300).summary
    pd.testing.assert_frame_equal(same[0], same[1])
    assert not other.equals(same[0])


class _BadFloat(float):
    """A real number whose conversion raises (a hostile user type)."""

    def __float__(self) -> float:
        raise RuntimeError("no")


@pytest.mark.parametrize(
    ("labels", "kwargs", "needle"),
    [
        ("nope", {}, "no such column"),
        (["x"], {}, "Series indexed by case_id"),
        (pd.Series({"c0": "3"}), {}, "is '3' (str)"),
        (pd.Series({"c0": True}), {}, "(bool)"),
        (pd.Series({"c0": float("inf")}), {}, "is inf (float); labels must be finite"),
        (pd.Series({"c0": _BadFloat()}, dtype=object), {}, "(_BadFloat)"),
        (pd.Series({"c0": 7}), {}, "is 7, outside the raw scale [1, 5] of score 'quality'"),
        (pd.Series({"zz": 3}), {}, "not cases of run"),
        (pd.Series([3, 4], index=["c0", "c0"]), {}, "more than once"),
        ("human", {"score": "missing"}, "has no score 'missing'"),
        ("human", {"kind": "ratio"}, "kind is one of"),
        ("human", {"n_boot": 0}, "n_boot is an integer >= 1"),
    ],
)
def test_bad_arguments_say_what_and_how(labels: Any, kwargs: dict[str, Any], needle: str) -> None:
    run = _judged([1, 2, 3], labels=[1, 2, 3])
    with pytest.raises(eb.ConfigurationError) as info:
        agreement(run, labels, **{"score": "quality", **kwargs})
    assert needle in str(info.value)


# -- prediction-powered inference ------------------------------------------------------------


def test_ppi_covers_the_human_mean_while_the_judge_is_biased(record_property: Any) -> None:
    rng = np.random.default_rng(2023)
    sims, big, small, true_mean = 1_000, 2_000, 100, 0.5
    human = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=(sims, big))  # E = 0.5
    judge = human + 0.1 + rng.normal(0, 0.15, size=(sims, big))  # biased +0.1, noisy
    labelled = np.argsort(rng.random((sims, big)), axis=1)[:, :small]  # a random subset each
    covered = raw_covered = 0
    for s in range(sims):
        known = np.full(big, np.nan)  # the human value of the labelled cases only
        known[labelled[s]] = human[s, labelled[s]]
        est = corrected_mean(judge[s], known)
        covered += est.ci_low <= true_mean <= est.ci_high
        half = 1.96 * judge[s].std(ddof=1) / math.sqrt(big)
        raw_covered += abs(judge[s].mean() - true_mean) <= half
    coverage, raw = covered / sims, raw_covered / sims
    figure = f"PPI 95% CI coverage {coverage:.1%} ({sims} sims), raw judge mean CI {raw:.1%}"
    print(figure)
    record_property("ppi_coverage", figure)
    assert 0.92 <= coverage <= 0.98
    assert raw < 0.05
    assert abs(judge.mean() - true_mean - 0.1) < 0.005


def test_the_run_path_gives_the_ppi_formula() -> None:
    rng = np.random.default_rng(11)
    values = rng.choice([0.0, 0.5, 1.0], size=60)
    human: list[Any] = [float(v) if i % 3 == 0 else None for i, v in enumerate(values)]
    shifted = np.where(rng.random(60) < 0.3, 1.0, values)
    a = agreement(_plain(shifted.tolist(), human), "human", score="ok")
    mask = np.array([h is not None for h in human])
    residual = shifted[mask] - values[mask]
    value = shifted.mean() - residual.mean()
    # the labelled cases are among the judged ones (docs/statistics.md): Var(h)/N plus
    # (1/n - 1/N) Var(r), with t on n - 1 df
    n = int(mask.sum())
    half = scipy.stats.t.ppf(0.975, n - 1) * math.sqrt(
        values[mask].var(ddof=1) / 60 + (1 / n - 1 / 60) * residual.var(ddof=1)
    )
    assert a.corrected_mean == pytest.approx((value, value - half, value + half))
    assert a.judge_mean == pytest.approx(shifted.mean())


def test_labels_are_mapped_with_the_judges_scale() -> None:
    # A 1-5 judge always one point high: on [0, 1] that is 0.25, and PPI removes it.
    human = [1, 2, 3, 4, 4, 2, 3, 1]
    a = agreement(_judged([h + 1 for h in human], labels=human), "human", score="quality")
    assert a.corrected_mean.value == pytest.approx((np.mean(human) - 1) / 4)
    assert a.judge_mean == pytest.approx(np.mean(human) / 4)


# -- the card --------------------------------------------------------------------------------


def test_the_card_escapes_and_reads_the_offset() -> None:
    human = [1, 2, 3, 4, 2, 3, 1, 2, 3, 4] * 3
    biased = _judged([h + 1 for h in human], labels=human, label="<script>alert(1)</script>")
    card = agreement(biased, "human", score="quality")._repr_html_()
    assert "<script>" not in card and "&lt;script&gt;alert(1)&lt;/script&gt;" in card
    assert "the judge is systematically +1.00 points high on its 1–5 scale" in card
    assert card.count('data-evalbook="confusion-row"') == 4
    fair = agreement(_judged(human, labels=human), "human", score="quality")._repr_html_()
    assert "no systematic offset detected" in fair and "systematically" not in fair
    assert "color: inherit" in fair


def test_the_card_counts_errors_apart() -> None:
    card = agreement(_judged([1, 99, 3], labels=[1, 2, 3]), "human", score="quality")._repr_html_()
    assert "1 error ·" not in card and "1 error " in card and "not counted as disagreement" in card


def test_a_loaded_run_gives_the_same_agreement(tmp_path: Any) -> None:
    human = [1, 2, 3, 4, 5, 2, 3]
    data = pd.DataFrame({"id": [f"c{i}" for i in range(7)], "human": human})

    def client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        i = int(messages[-1]["content"].split("#")[1][1:])
        return {"score": [1, 3, 3, 4, 5, 99, 4][i]}

    judge = eb.judge("quality", "#{id}# {output}", client=client, scale=(1, 5))
    run = eb.run(data, task=lambda id: id, scorers=[judge], store=tmp_path, progress=False)
    loaded = eb.load_run(run.path)
    a, b = (agreement(r, "human", score="quality") for r in (run, loaded))
    pd.testing.assert_frame_equal(a.summary, b.summary)
    pd.testing.assert_frame_equal(a.confusion, b.confusion)
    assert a.corrected_mean == b.corrected_mean and _row(a)["n_error"] == 1


def test_integer_label_index_matches_stringified_case_ids() -> None:
    # Without an `id` column the case id is the index as text: a Series indexed by the
    # same integers labels the same cases.
    data = pd.DataFrame({"x": [0.0, 1.0, 1.0]})
    ok = eb.scorer("ok")(lambda x: x)
    run = eb.run(data, task=lambda x: x, scorers=[ok], store=None, progress=False)
    a = agreement(run, pd.Series({0: 0.0, 2: 0.0}), score="ok", kind="nominal")
    assert a.pairs["case_id"].tolist() == ["0", "2"]
    assert _row(a)["exact_agreement"] == 0.5


def test_nothing_to_compare_gives_nan_never_zero_and_a_card() -> None:
    a = agreement(_judged([1, 99, 3], labels=[None, 2, None]), "human", score="quality")
    row = _row(a)
    assert (row["n"], row["n_error"], row["n_unlabelled"]) == (0, 1, 2)
    assert all(math.isnan(row[c]) for c in ("cohen_kappa", "cohen_kappa_ci_low", "spearman"))
    assert all(math.isnan(v) for v in a.corrected_mean)
    card = a._repr_html_()
    assert "no compared labels" in card and "corrected mean not estimated" in card
