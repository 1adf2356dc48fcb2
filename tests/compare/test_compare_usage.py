"""`Comparison.usage`: paired cost and latency deltas, checked against scipy on the same deltas."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._compare._cost_deltas import USAGE_DELTA_COLUMNS

Costs = Mapping[str, Sequence[float | None]]  # case id -> cost per epoch (None: none recorded)


def _run(
    costs: Costs, *, data: pd.DataFrame | None = None, name: str = "run", store: Path | None = None
) -> eb.Run:
    """One case per key; epoch k of a case records cost costs[id][k - 1] (None: no usage)."""
    ids = list(costs)
    epochs = len(next(iter(costs.values())))
    df = pd.DataFrame({"id": ids}) if data is None else data

    def task(id: str, ctx: eb.Context, epoch: int) -> str:
        cost = costs[id][epoch - 1]
        if cost is not None:
            ctx.record_usage(input_tokens=10, output_tokens=2, cost=cost)
        return id

    return eb.run(
        df,
        task=task,
        scorers=[eb.scorer("ok")(lambda output: 1.0)],
        epochs=epochs,
        store=store,
        progress=False,
        name=name,
    )


def _scipy_ci(deltas: np.ndarray) -> tuple[float, float]:
    ci = scipy.stats.ttest_1samp(deltas, 0.0).confidence_interval(0.95)
    return float(ci.low), float(ci.high)


def test_columns_and_measures() -> None:
    a = _run({"x": [0.1], "y": [0.2]})
    table = eb.compare(a, a).usage
    assert list(table.columns) == USAGE_DELTA_COLUMNS
    assert table["measure"].tolist() == ["cost_per_case", "latency_s"]
    assert table["n_paired"].tolist() == [2, 2]
    assert table["delta"].iloc[0] == 0.0


def test_cost_delta_and_ci_match_scipy() -> None:
    ca = {f"c{i}": [0.01 * (i + 1)] for i in range(8)}
    cb = {f"c{i}": [0.01 * (i + 1) + 0.003 * (i % 3)] for i in range(8)}
    a, b = _run(ca, name="a"), _run(cb, name="b")
    row = eb.compare(a, b).usage.set_index("measure").loc["cost_per_case"]
    deltas = np.array([cb[k][0] - ca[k][0] for k in ca])
    low, high = _scipy_ci(deltas)
    assert row["n_paired"] == 8
    assert row["mean_a"] == pytest.approx(np.mean([v[0] for v in ca.values()]), abs=1e-12)
    assert row["mean_b"] == pytest.approx(np.mean([v[0] for v in cb.values()]), abs=1e-12)
    assert row["delta"] == pytest.approx(deltas.mean(), abs=1e-12)
    assert row["ci_low"] == pytest.approx(low, rel=1e-7)
    assert row["ci_high"] == pytest.approx(high, rel=1e-7)


def test_ci_is_not_clipped_to_unit_range() -> None:
    # dollars and seconds have no upper bound: an interval clipped to [-1, 1] would be wrong
    ca = {f"c{i}": [1.0] for i in range(5)}
    cb = {f"c{i}": [1.0 + 4.0 * i] for i in range(5)}
    row = eb.compare(_run(ca), _run(cb)).usage.iloc[0]
    low, high = _scipy_ci(np.array([4.0 * i for i in range(5)]))
    assert row["ci_high"] == pytest.approx(high, rel=1e-7)
    assert row["ci_high"] > 1.0
    assert row["ci_low"] == pytest.approx(low, rel=1e-7)


def test_epochs_are_reduced_to_the_case_mean_first() -> None:
    ca = {"p": [1.0, 3.0], "q": [2.0, 2.0], "r": [0.0, 1.0]}
    cb = {"p": [2.0, 2.0], "q": [5.0, 7.0], "r": [1.0, 1.0]}
    row = eb.compare(_run(ca), _run(cb)).usage.iloc[0]
    deltas = np.array([np.mean(cb[k]) - np.mean(ca[k]) for k in ca])  # [0, 4, 0.5]
    low, high = _scipy_ci(deltas)
    assert row["n_paired"] == 3  # cases, not samples
    assert row["delta"] == pytest.approx(deltas.mean())
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-7)


def test_unknown_costs_are_not_paired_and_are_warned() -> None:
    ca = {"p": [1.0], "q": [2.0], "r": [4.0], "s": [None]}
    cb = {"p": [2.0], "q": [None], "r": [3.0], "s": [None]}
    comparison = eb.compare(_run(ca, name="old"), _run(cb, name="new"))
    row = comparison.usage.iloc[0]
    assert row["n_paired"] == 2  # p and r; q unknown in b, s in both
    assert row["delta"] == pytest.approx(((2.0 - 1.0) + (3.0 - 4.0)) / 2)
    assert row["mean_a"] == pytest.approx(2.5)
    notes = [w for w in comparison.warnings if w.startswith("Cost unknown")]
    assert notes == [
        "Cost unknown for 1 case of run b ('new') that has a cost in run a: it is not paired "
        "in the usage deltas."
    ]
    # latency is known for every case that ran, cost or not
    assert comparison.usage.iloc[1]["n_paired"] == 4


def test_no_usage_in_either_run_gives_nan_rows_and_no_warning() -> None:
    df = pd.DataFrame({"q": ["a", "b"]})
    run = eb.run(df, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    comparison = eb.compare(run, run)
    row = comparison.usage.iloc[0]
    assert row["n_paired"] == 0
    assert all(math.isnan(row[c]) for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high"))
    assert not [w for w in comparison.warnings if w.startswith("Cost unknown")]


def test_latency_is_the_paired_duration() -> None:
    a, b = _run({f"c{i}": [0.0] for i in range(6)}), _run({f"c{i}": [0.0] for i in range(6)})
    row = eb.compare(a, b).usage.set_index("measure").loc["latency_s"]
    deltas = b.cases["duration_s"].to_numpy() - a.cases["duration_s"].to_numpy()
    low, high = _scipy_ci(deltas)
    assert row["delta"] == pytest.approx(deltas.mean(), abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-6)


def test_clustered_comparison_clusters_the_cost_interval() -> None:
    data = pd.DataFrame({"id": [f"c{i}" for i in range(6)], "doc": list("xxyyzz")})
    ca = {f"c{i}": [1.0] for i in range(6)}
    extra = [0.0, 0.5, 2.0, 2.5, 1.0, 0.5]
    cb = {f"c{i}": [1.0 + extra[i]] for i in range(6)}
    a, b = _run(ca, data=data), _run(cb, data=data)
    clustered = eb.compare(a, b, cluster="doc").usage.iloc[0]
    plain = eb.compare(a, b).usage.iloc[0]
    # independent: the clustered SE of the mean, sqrt(C/(C-1) * sum_c (sum dev)^2 / n^2)
    d = np.array(extra)
    dev = d - d.mean()
    sums = np.array([dev[0:2].sum(), dev[2:4].sum(), dev[4:6].sum()])
    se = math.sqrt(3 / 2 * float((sums**2).sum()) / 36)
    half = scipy.stats.t.ppf(0.975, 2) * se
    assert clustered["delta"] == pytest.approx(d.mean())
    assert clustered["ci_high"] - clustered["delta"] == pytest.approx(half, rel=1e-7)
    assert (plain["ci_low"], plain["ci_high"]) == pytest.approx(_scipy_ci(d), rel=1e-7)


def test_one_paired_case_has_no_interval() -> None:
    row = eb.compare(_run({"p": [1.0]}), _run({"p": [2.0]})).usage.iloc[0]
    assert row["n_paired"] == 1 and row["delta"] == 1.0
    assert math.isnan(row["ci_low"]) and math.isnan(row["ci_high"])


_cost = st.one_of(st.none(), st.floats(0.0, 5.0, allow_nan=False).map(lambda x: round(x, 3)))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(_cost, _cost), min_size=1, max_size=8))
def test_property_delta_is_paired_mean_difference_inside_its_ci(
    pairs: list[tuple[float | None, float | None]],
) -> None:
    ca = {f"c{i}": [x] for i, (x, _) in enumerate(pairs)}
    cb = {f"c{i}": [y] for i, (_, y) in enumerate(pairs)}
    row = eb.compare(_run(ca), _run(cb)).usage.iloc[0]
    both = [(x, y) for x, y in pairs if x is not None and y is not None]
    assert row["n_paired"] == len(both)
    if not both:
        assert math.isnan(row["delta"])
        return
    mean_a = math.fsum(x for x, _ in both) / len(both)
    mean_b = math.fsum(y for _, y in both) / len(both)
    assert row["delta"] == pytest.approx(mean_b - mean_a, abs=1e-9)
    if len(both) >= 2:
        assert row["ci_low"] <= row["delta"] + 1e-12 <= row["ci_high"] + 2e-12


def test_loaded_runs_compare_like_in_memory_ones(tmp_path: Path) -> None:
    ca = {"p": [1.0, 2.0], "q": [None, 4.0], "r": [0.5, 0.5]}
    cb = {"p": [2.0, 2.0], "q": [1.0, 1.0], "r": [None, None]}
    a, b = _run(ca, store=tmp_path, name="a"), _run(cb, store=tmp_path, name="b")
    loaded = eb.compare(eb.load_run(str(a.path)), eb.load_run(str(b.path)))
    fresh = eb.compare(a, b)
    cost = loaded.usage.iloc[0]
    assert cost["n_paired"] == 2 and cost["delta"] == pytest.approx(((2 - 1.5) + (1 - 4)) / 2)
    pd.testing.assert_frame_equal(loaded.usage.iloc[:1], fresh.usage.iloc[:1])
    assert [w for w in loaded.warnings if w.startswith("Cost")] == [
        w for w in fresh.warnings if w.startswith("Cost")
    ]


def test_a_cases_table_not_one_row_per_sample_is_a_clear_error() -> None:
    from evalbook._compare._cost_deltas import case_means

    class Broken:  # a run-like object: two cases, three rows (one case twice, one epoch)
        name = "broken"
        cases = pd.DataFrame({"case_id": ["p", "q", "p"], "cost": [1.0, 2.0, 3.0]})

    with pytest.raises(eb.ConfigurationError, match=r"run 'broken'.*3 rows for 2 cases"):
        case_means(Broken())  # type: ignore[arg-type]
