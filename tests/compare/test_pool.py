"""`pool(runs, by=None)`: one summary of several runs, weighted by counted values.

The contracts (docs/interop.md, Pooling) as properties: pooling one run is its summary;
pooling two runs is the summary of one run over their cases together; the order of the runs
does not change the mean; a mean of the runs' means is not what pooling gives.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import POOL_COLUMNS, wilson

pool = eb.pool
ConfigurationError = eb.ConfigurationError
INSPECT_LOG = Path(__file__).resolve().parents[1] / "interop" / "fixtures" / "inspect" / "tiny.eval"

# a case's value per epoch: a number in [0, 1], or None (unscored: not counted)
Cell = float | None


def _run(
    cases: Sequence[Sequence[Cell]],
    *,
    name: str = "r",
    prefix: str = "c",
    score: eb.ScoreDefinition | str = "ok",
    topics: Sequence[str] | None = None,
    **options: Any,
) -> eb.Run:
    """A run whose case i scores `cases[i][epoch - 1]` (every case has the same epochs)."""
    epochs = len(cases[0]) if cases else 1
    frame = pd.DataFrame({"id": [f"{prefix}{i}" for i in range(len(cases))]})
    frame["i"] = range(len(cases))
    if topics is not None:
        frame["topic"] = list(topics)

    def value(i: int, epoch: int) -> Any:
        v = cases[i][epoch - 1]
        return eb.Unscored("skipped") if v is None else v

    return eb.run(
        frame,
        task=lambda i: i,
        scorers=[eb.scorer(score)(value)],
        name=name,
        epochs=epochs,
        progress=False,
        **{"store": None, **options},
    )


def _cases(values: Any, epochs: int, min_size: int = 1) -> Any:
    cell = st.none() | values
    return st.lists(st.lists(cell, min_size=epochs, max_size=epochs), min_size=min_size, max_size=8)


unit = st.floats(0.0, 1.0)
dyadic = st.integers(0, 16).map(lambda k: k / 16)  # sums of these are exact in floating point


@st.composite
def two_runs(
    draw: Any, values: Any = unit, most_epochs: int = 3
) -> tuple[list[list[Cell]], list[list[Cell]]]:
    epochs = draw(st.integers(1, most_epochs))
    return draw(_cases(values, epochs)), draw(_cases(values, epochs))


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 3).flatmap(lambda k: _cases(unit, k)))
def test_pooling_one_run_is_its_summary(cases: list[list[Cell]]) -> None:
    run = _run(cases)
    got, want = pool([run]).iloc[0], run.summary().iloc[0]
    assert _same(got["mean"], want["mean"])
    assert got["counted"] == want["counted"]
    assert got["n_runs"] == 1
    for bound in ("ci_low", "ci_high"):  # the same rule: equal up to rounding
        assert got[bound] == pytest.approx(want[bound], rel=1e-9, abs=1e-12, nan_ok=True)


@settings(max_examples=40, deadline=None)
@given(two_runs())
def test_pooling_two_runs_is_the_summary_of_their_cases_together(
    pair: tuple[list[list[Cell]], list[list[Cell]]],
) -> None:
    a_cases, b_cases = pair
    a, b = _run(a_cases, name="a", prefix="a"), _run(b_cases, name="b", prefix="b")
    together = _run(a_cases + b_cases, name="ab", prefix="x").summary().iloc[0]
    got = pool([a, b]).iloc[0]
    assert _same(got["mean"], together["mean"])  # exactly: the same values, the same order
    assert got["counted"] == together["counted"]
    assert got["n_runs"] == 2


@settings(max_examples=30, deadline=None)
# at most 2 epochs: a case's mean of 1 or 2 dyadic values is dyadic (of 3, it is not)
@given(two_runs(dyadic, most_epochs=2), two_runs(unit))
def test_the_order_of_the_runs_does_not_change_the_mean(
    exact: tuple[list[list[Cell]], list[list[Cell]]],
    floats: tuple[list[list[Cell]], list[list[Cell]]],
) -> None:
    a, b = _run(exact[0], name="a"), _run(exact[1], name="b")
    ab, ba = pool([a, b]).iloc[0], pool([b, a]).iloc[0]
    assert _same(ab["mean"], ba["mean"])  # values whose sums are exact: equal exactly
    assert (ab["counted"], ab["ci_low"], ab["ci_high"]) == pytest.approx(
        (ba["counted"], ba["ci_low"], ba["ci_high"]), nan_ok=True
    )
    c, d = _run(floats[0], name="c"), _run(floats[1], name="d")
    cd, dc = pool([c, d]).iloc[0]["mean"], pool([d, c]).iloc[0]["mean"]
    assert cd == pytest.approx(dc, rel=1e-12, nan_ok=True)  # any values: up to rounding


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 6), st.integers(7, 30), dyadic, dyadic)
def test_pooling_weights_by_counted_cases_not_a_mean_of_means(
    n_a: int, n_b: int, v_a: float, v_b: float
) -> None:
    a, b = _run([[v_a]] * n_a, name="a"), _run([[v_b]] * n_b, name="b")
    got = pool([a, b]).iloc[0]["mean"]
    assert got == pytest.approx((n_a * v_a + n_b * v_b) / (n_a + n_b), rel=1e-12)
    if v_a != v_b:  # different counts and different means: a mean of means is wrong
        assert abs(got - (v_a + v_b) / 2) > 1e-6


def test_nine_hundred_cases_weigh_nine_times_one_hundred() -> None:
    big = _run([[1.0]] * 900, name="big")
    small = _run([[0.0]] * 100, name="small")
    table = pool([big, small])
    assert list(table.columns) == POOL_COLUMNS
    row = table.iloc[0]
    assert row["mean"] == pytest.approx(0.9)  # a mean of means would say 0.5
    assert (row["counted"], row["n_runs"]) == (1000, 2)
    assert row["ci_low"] < 0.9 < row["ci_high"]


def test_the_interval_is_stratified_by_run() -> None:
    # the runs' means differ: the cases as one sample would add that spread to the variance
    a = _run([[1.0]] * 80 + [[0.0]] * 10, name="a")
    b = _run([[1.0]] * 2 + [[0.0]] * 8, name="b", prefix="b")
    pooled = pool([a, b]).iloc[0]
    together = _run([[1.0]] * 80 + [[0.0]] * 10 + [[1.0]] * 2 + [[0.0]] * 8).summary().iloc[0]
    assert pooled["mean"] == together["mean"]
    assert pooled["ci_high"] - pooled["ci_low"] < together["ci_high"] - together["ci_low"]
    assert pooled["ci_low"] < pooled["mean"] < pooled["ci_high"]


def _one_sample_ci(x: np.ndarray) -> tuple[float, float]:
    """The 95 % interval of `x` taken as one sample, by hand: Wilson for 0/1 values, else
    Student's t (within [0, 1]), the rule of docs/statistics.md."""
    n, mean = x.size, float(x.mean())
    if np.isin(x, (0.0, 1.0)).all():
        return wilson(float(x.sum()), n)
    half = float(scipy.stats.t.ppf(0.975, n - 1)) * float(x.std(ddof=1)) / math.sqrt(n)
    return max(0.0, mean - half), min(1.0, mean + half)


def _coverage(
    draw: Any, sizes: Sequence[int], truth: Sequence[float], reps: int
) -> tuple[int, int]:
    """How many of `reps` pooled intervals of seeded samples hold the true pooled mean:
    stratified (pool's), and the cases taken as one sample (for the record).

    Run r holds every sample's cases of that run, its data column `rep` naming the sample:
    `eb.pool(runs, by="rep")` pools each sample's runs apart, one row per sample.
    """
    target = float(np.dot(sizes, truth) / sum(sizes))
    rng = np.random.default_rng(21)
    drawn: list[list[np.ndarray]] = [[] for _ in sizes]
    one_sample = 0
    for _ in range(reps):
        xs = [draw(rng, n, p) for n, p in zip(sizes, truth, strict=True)]
        for r, x in enumerate(xs):
            drawn[r].append(x)
        low, high = _one_sample_ci(np.concatenate(xs))
        one_sample += int(low <= target <= high)
    runs = []
    for r, n in enumerate(sizes):
        frame = pd.DataFrame({"v": np.concatenate(drawn[r]), "rep": np.repeat(np.arange(reps), n)})
        runs.append(
            eb.run(
                frame,
                scorers=[eb.scorer("ok")(lambda v: v)],
                output_column="v",
                name=f"r{r}",
                store=None,
                progress=False,
                concurrency=64,
            )
        )
    table = pool(runs, by="rep")
    assert table["rep"].tolist() == list(range(reps)) and (table["n_runs"] == len(sizes)).all()
    # a sample's row is the pool of that sample's runs alone
    first = pool([run_of(run, 0) for run in runs]).iloc[0]
    assert (first["mean"], first["ci_low"], first["ci_high"]) == pytest.approx(
        tuple(table.iloc[0][["mean", "ci_low", "ci_high"]]), rel=1e-12
    )
    held = int(((table["ci_low"] <= target) & (target <= table["ci_high"])).sum())
    return held, one_sample


def run_of(run: eb.Run, rep: int) -> eb.Run:
    """A run of the cases of sample `rep` of `run` only."""
    values = run.data.loc[run.data["rep"] == rep, "v"].reset_index(drop=True)
    return eb.run(
        pd.DataFrame({"v": values}),
        scorers=[eb.scorer("ok")(lambda v: v)],
        output_column="v",
        store=None,
        progress=False,
    )


@pytest.mark.parametrize(
    ("kind", "sizes", "truth"),
    [
        ("binary", (90, 10), (0.9, 0.2)),
        ("binary", (40, 40, 40), (0.5, 0.7, 0.95)),
        ("beta", (30, 60), (0.3, 0.8)),
    ],
)
def test_the_stratified_interval_holds_the_pooled_mean_about_95_percent_of_the_time(
    kind: str, sizes: tuple[int, ...], truth: tuple[float, ...], record_property: Any
) -> None:
    def draw(rng: np.random.Generator, n: int, p: float) -> np.ndarray:
        if kind == "binary":
            return (rng.random(n) < p).astype(np.float64)
        return rng.beta(4 * p, 4 * (1 - p), n)

    reps = 2000
    held, one_sample = _coverage(draw, sizes, truth, reps)
    figure = (
        f"coverage {kind} {sizes} at {truth}: stratified {held} of {reps} intervals "
        f"({held / reps:.1%}); the cases as one sample {one_sample / reps:.1%}"
    )
    print(figure)
    record_property("coverage", figure)
    assert 0.93 * reps <= held <= 0.975 * reps


def test_a_score_in_some_runs_is_pooled_over_those() -> None:
    a = _run([[1.0], [0.0]], name="a", score="x")
    b = _run([[1.0], [1.0], [1.0]], name="b", score="y")
    c = _run([[0.5]], name="c", score="x")
    table = pool([a, b, c]).set_index("score")
    assert table.loc["x", "n_runs"] == 2 and table.loc["x", "counted"] == 3
    assert table.loc["x", "mean"] == pytest.approx(0.5)
    assert table.loc["y", "n_runs"] == 1 and table.loc["y", "mean"] == 1.0
    assert list(table.index) == ["x", "y"]  # order of first appearance


def test_a_score_without_counted_values_has_no_mean() -> None:
    a = _run([[None], [None]], name="a")
    row = pool([a, _run([[None]], name="b")]).iloc[0]
    assert math.isnan(row["mean"]) and math.isnan(row["ci_low"]) and row["counted"] == 0


def test_by_pools_each_slice_across_runs_like_summary_by() -> None:
    a = _run([[1.0], [0.0], [0.5]], name="a", prefix="a", topics=["x", "y", "x"])
    b = _run([[0.25], [1.0]], name="b", prefix="b", topics=["z", "x"])
    together = _run([[1.0], [0.0], [0.5], [0.25], [1.0]], topics=["x", "y", "x", "z", "x"]).summary(
        by="topic"
    )
    table = pool([a, b], by="topic")
    assert list(table.columns) == ["topic", *POOL_COLUMNS]
    assert table["topic"].tolist() == together["topic"].tolist() == ["x", "y", "z"]
    assert table["mean"].tolist() == together["mean"].tolist()
    assert table["counted"].tolist() == together["counted"].tolist()
    assert table["n_runs"].tolist() == [2, 1, 1]


def test_by_a_column_one_run_lacks_names_the_run_and_the_column() -> None:
    a = _run([[1.0]], name="with", topics=["x"])
    b = _run([[1.0]], name="without")
    with pytest.raises(ConfigurationError, match=r"by='topic': run 'without' has no such data"):
        pool([a, b], by="topic")


def test_definitions_that_differ_are_pooled_with_a_warning_naming_the_difference() -> None:
    a = _run([[1.0]], name="a", score=eb.define_score("ok", errors="zero"))
    b = _run([[0.0]], name="b", score=eb.define_score("ok", label="Right"))
    table = pool([a, b])
    assert table.iloc[0]["mean"] == 0.5
    (warning,) = table.attrs["warnings"]
    assert "errors policy 'zero' in 'a'; 'exclude' in 'b'" in warning
    assert "label 'ok' in 'a'; 'Right' in 'b'" in warning
    assert (
        pool([a, _run([[0.0]], name="c", score=eb.define_score("ok", errors="zero"))]).attrs[
            "warnings"
        ]
        == []
    )


def test_primary_scores_that_differ_give_a_note_and_each_runs_headline() -> None:
    a = _run([[1.0]], name="a", score=eb.define_score("x", primary=True))
    b = _run([[0.0]], name="b", score=eb.define_score("y", primary=True))
    table = pool([a, b])
    assert table.attrs["note"].startswith("Primary scores differ (x, y)")
    assert [(n, h.score) for n, h in table.attrs["headlines"]] == [("a", "x"), ("b", "y")]
    same = pool([a, _run([[0.0]], name="c", score=eb.define_score("x", primary=True))])
    assert "note" not in same.attrs and "headlines" not in same.attrs


def test_a_mapping_names_the_runs() -> None:
    a = _run([[1.0]], score=eb.define_score("x", primary=True))
    b = _run([[0.0]], score=eb.define_score("y", primary=True))
    table = pool({"first": a, "second": b})
    assert [n for n, _ in table.attrs["headlines"]] == ["first", "second"]


def test_stored_runs_pool_like_the_runs_in_memory(tmp_path: Path) -> None:
    a = _run([[1.0], [0.5]], name="a", store=tmp_path)
    b = _run([[0.0]], name="b", store=tmp_path)
    assert a.path is not None and b.path is not None
    loaded = [eb.load_run(a.path), eb.load_run(b.path)]
    pd.testing.assert_frame_equal(pool(loaded), pool([a, b]))


@pytest.mark.parametrize(
    ("runs", "message"),
    [
        ([], "needs at least one run"),
        ({}, "needs at least one run"),
        ([1], "item 0 is a int"),
        ("runs", "not one str"),
        (42, "not int"),
    ],
)
def test_bad_input_is_refused_clearly(runs: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        pool(runs)


def test_one_run_not_in_a_list_and_empty_runs_are_refused() -> None:
    run = _run([[1.0]], name="solo")
    with pytest.raises(ConfigurationError, match=r"pool\(\[run\]\) pools one run"):
        pool(run)  # type: ignore[arg-type]
    empty = eb.run(pd.DataFrame({"i": []}), task=lambda i: i, name="empty", store=None)
    with pytest.raises(ConfigurationError, match="run 'empty' has no cases"):
        pool([run, empty])
    bare = eb.run(pd.DataFrame({"i": [1]}), task=lambda i: i, name="bare", store=None)
    with pytest.raises(ConfigurationError, match="run 'bare' has no scores"):
        pool([run, bare])


H = "\x00\x1b[2J\u202e<script>alert(1)</script>"


def test_the_notebook_display_escapes_labels_notes_and_headlines() -> None:
    a = _run([[1.0]], name=H, score=eb.define_score("x", label=H, primary=True))
    b = _run([[0.0]], name="b", score=eb.define_score("y", primary=True))
    table = pool([a, b])
    html = table._repr_html_()
    assert "<script>" not in html and "\x1b" not in html and "\u202e" not in html
    assert "Primary scores differ (x, y)" in html
    assert table["label"].tolist()[0] == H  # the frame keeps the text as given


@settings(max_examples=30, deadline=None)
@given(two_runs())
def test_the_pooled_interval_brackets_the_mean_within_0_and_1(
    pair: tuple[list[list[Cell]], list[list[Cell]]],
) -> None:
    row = pool([_run(pair[0], name="a"), _run(pair[1], name="b")]).iloc[0]
    if math.isnan(row["mean"]):
        assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])
    else:
        assert 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0


def _clustered(values: Sequence[float], passages: Sequence[str], name: str) -> eb.Run:
    frame = pd.DataFrame({"v": list(values), "passage": list(passages)})
    return eb.run(
        frame,
        scorers=[eb.scorer("ok")(lambda v: v)],
        output_column="v",
        cluster="passage",
        name=name,
        store=None,
        progress=False,
    )


def test_a_clustered_run_pools_with_its_own_clusters() -> None:
    values = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    passages = ["p", "p", "p", "q", "q", "q", "r", "r"]
    run = _clustered(values, passages, "a")
    got, want = pool([run]).iloc[0], run.summary().iloc[0]
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((want["ci_low"], want["ci_high"]))
    plain = run.summary(cluster=False).iloc[0]
    assert want["ci_high"] - want["ci_low"] > plain["ci_high"] - plain["ci_low"]
    # a second run's passages of the same names are other passages: strata never share one
    other = _clustered([0.5, 1.0, 0.0, 0.5], ["p", "p", "q", "q"], "b")
    both = pool([run, other]).iloc[0]
    assert both["counted"] == 12 and both["n_runs"] == 2
    assert both["ci_low"] < both["mean"] < both["ci_high"]


def test_epochs_are_reduced_per_case_before_pooling() -> None:
    a = _run([[1.0, 0.0], [1.0, 1.0]], name="a")  # case means 0.5 and 1.0
    b = _run([[0.0, 0.0]], name="b")
    row = pool([a, b]).iloc[0]
    assert row["mean"] == pytest.approx(0.5)  # (0.5 + 1.0 + 0.0) / 3 cases
    assert row["counted"] == 6  # samples, as run.summary() counts them


def test_an_imported_run_pools_with_a_run_of_evalbook_by_score_name() -> None:
    pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")
    # tiny.eval's too_big: 1.5 for case a (an invalid_score record), 0.25 for b, and three
    # cases errored or timed out; two epochs (tests/interop/fixtures/inspect/README.md)
    imported = eb.import_results(INSPECT_LOG, format="inspect")
    assert imported.name == "tiny"
    own = _run([[0.0]] * 5, name="own", score="too_big")
    row = pool([imported, own]).set_index("score").loc["too_big"]
    # only b's two samples are counted there (its case value 0.25), and 5 zeros here
    assert (row["counted"], row["n_runs"]) == (2 + 5, 2)
    assert row["mean"] == pytest.approx(0.25 / 6)
    assert pool([imported, own]).set_index("score").loc["match", "n_runs"] == 1
    with pytest.raises(ConfigurationError, match=r"run 'own' has no such data column"):
        pool([imported, own], by="level")
    with pytest.raises(ConfigurationError, match=r"run 'tiny' has no such data column"):
        pool([imported, own], by="i")
