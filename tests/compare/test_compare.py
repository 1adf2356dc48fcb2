"""`eb.compare`, `Comparison` and `eb.leaderboard` on real runs (built with `eb.run`).

The warnings of a comparison are in test_compare_warnings.py.
"""

from __future__ import annotations

import io
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import evalbook as eb
from _compare_helpers import make_run
from _public import CHANGES, COMPARISON_COLUMNS, LEADERBOARD_COLUMNS, PAIR_COLUMNS


def test_summary_and_cases_have_the_documented_columns() -> None:
    a = make_run({"ok": [1.0, 0.0, 1.0]}, name="a")
    b = make_run({"ok": [1.0, 1.0, 0.0]}, name="b")
    cmp = eb.compare(a, b)
    assert isinstance(cmp, eb.Comparison)
    assert list(cmp.summary.columns) == COMPARISON_COLUMNS
    assert list(cmp.cases.columns) == PAIR_COLUMNS
    assert list(cmp.cases["change"].cat.categories) == CHANGES
    assert cmp.summary["n_paired"].dtype == np.int64
    assert cmp.warnings == []
    assert cmp.cases["change"].tolist() == ["same", "improved", "regressed"]
    assert cmp.cases["delta"].tolist() == [0.0, 1.0, -1.0]


def test_pairs_only_cases_counted_in_both_runs() -> None:
    a = make_run({"q": [0.2, 0.4, 0.6, "unscored", 0.9]}, name="a")
    b = make_run({"q": [0.3, "unscored", 0.6, 0.5, "crash"]}, name="b")
    cmp = eb.compare(a, b)
    row = cmp.summary.iloc[0]
    assert row["n_paired"] == 2  # c0 and c2
    assert row["mean_a"] == pytest.approx(0.4) and row["mean_b"] == pytest.approx(0.45)
    assert row["delta"] == pytest.approx(row["mean_b"] - row["mean_a"])
    assert (row["improved"], row["regressed"], row["same"]) == (1, 0, 1)
    assert row["test"] == "sign-flip permutation"
    changes = dict(zip(cmp.cases["case_id"], cmp.cases["change"], strict=True))
    assert changes == {
        "c0": "improved",
        "c1": "only_a",
        "c2": "same",
        "c3": "only_b",
        "c4": "only_a",
    }
    only = cmp.cases[cmp.cases["change"] == "only_a"]
    assert only["b"].isna().all() and only["delta"].isna().all()


def test_failed_cases_count_as_zero_in_both_runs() -> None:
    # The scoring rule decides counted values: a failed case counts 0 whatever was recorded.
    frame = pd.DataFrame({"id": ["x", "y"], "i": [0, 1]})

    def failing(i: int, ctx: Any) -> str:
        if i == 1:
            ctx.fail("wrong")
        return "out"

    a = eb.run(
        frame,
        task=lambda i: "out",
        scorers=[eb.scorer("s")(lambda: 1.0)],
        name="a",
        store=None,
        progress=False,
    )
    b = eb.run(
        frame,
        task=failing,
        scorers=[eb.scorer("s")(lambda: 1.0)],
        name="b",
        store=None,
        progress=False,
    )
    cmp = eb.compare(a, b)
    assert cmp.cases["b"].tolist() == [1.0, 0.0]
    assert cmp.summary["regressed"].tolist() == [1]


def test_binary_scores_use_exact_mcnemar() -> None:
    va = [1.0] * 10 + [0.0] * 20 + [1.0] * 3
    vb = [1.0] * 10 + [1.0] * 12 + [0.0] * 8 + [0.0] * 3
    cmp = eb.compare(make_run({"ok": va}, name="a"), make_run({"ok": vb}, name="b"))
    row = cmp.summary.iloc[0]
    assert (row["improved"], row["regressed"], row["same"]) == (12, 3, 18)
    assert row["test"] == "exact McNemar"
    assert row["p_value"] == pytest.approx(stats.binomtest(12, 15, 0.5).pvalue)
    assert row["ci_low"] < row["delta"] < row["ci_high"]
    assert row["delta"] == pytest.approx((12 - 3) / 33)


def test_p_value_is_one_when_nothing_changes_and_nan_without_pairs() -> None:
    same = eb.compare(make_run({"q": [0.5, 0.7]}, name="a"), make_run({"q": [0.5, 0.7]}, name="b"))
    assert same.summary["p_value"].tolist() == [1.0]
    assert same.summary["delta"].tolist() == [0.0]
    none = eb.compare(
        make_run({"q": [0.5, 0.7]}, name="a"), make_run({"q": ["crash", "crash"]}, name="b")
    )
    row = none.summary.iloc[0]
    assert row["n_paired"] == 0
    assert all(math.isnan(row[c]) for c in ("p_value", "p_adjusted", "delta", "ci_low", "mean_a"))
    assert "Score 'q' has no case counted in both runs." in none.warnings


def test_holm_adjusts_across_the_compared_scores() -> None:
    n = 40
    rng = np.random.default_rng(5)
    va = {s: rng.integers(0, 2, n).astype(float).tolist() for s in ("x", "y", "z")}
    vb = {s: rng.integers(0, 2, n).astype(float).tolist() for s in ("x", "y", "z")}
    vb["x"] = [1.0] * n
    cmp = eb.compare(make_run(va, name="a"), make_run(vb, name="b"))
    p = cmp.summary["p_value"].to_numpy()
    order = np.argsort(p)
    expected = np.minimum(1.0, np.maximum.accumulate(p[order] * np.array([3, 2, 1])))
    assert cmp.summary["p_adjusted"].to_numpy()[order] == pytest.approx(expected)
    assert (cmp.summary["p_adjusted"] >= cmp.summary["p_value"]).all()


def test_comparison_is_deterministic() -> None:
    rng = np.random.default_rng(9)
    va = {"q": rng.random(300).round(2).tolist()}
    vb = {"q": rng.random(300).round(2).tolist()}
    a, b = make_run(va, name="a"), make_run(vb, name="b")
    first, second = eb.compare(a, b), eb.compare(a, b)
    pd.testing.assert_frame_equal(first.summary, second.summary)
    pd.testing.assert_frame_equal(first.cases, second.cases)


# -- choosing scores --------------------------------------------------------------------------


def test_score_selection_rules() -> None:
    both = {"x": [1.0, 0.0], "y": [0.5, 0.5]}
    a, b = make_run(both, name="a"), make_run(both, name="b")
    assert eb.compare(a, b).scores == ["x", "y"]  # no primary, two common: all of them
    assert eb.compare(a, b, score="y").scores == ["y"]
    assert eb.compare(a, b, score=["y", "x"]).scores == ["y", "x"]
    one = make_run({"x": [1.0, 1.0], "w": [0.0, 0.0]}, name="c")
    assert eb.compare(a, one).scores == ["x"]  # the only common score
    primary = eb.define_score("y", primary=True)
    pa = make_run(both, name="pa", definitions={"y": primary})
    pb = make_run(both, name="pb", definitions={"y": primary})
    assert eb.compare(pa, pb).scores == ["y"]
    assert eb.compare(pa, pb, score=eb.define_score("x")).scores == ["x"]


def test_unknown_score_raises_listing_the_available_names() -> None:
    a = make_run({"x": [1.0], "y": [1.0]}, name="a")
    b = make_run({"x": [1.0], "z": [1.0]}, name="b")
    with pytest.raises(eb.ConfigurationError, match=r"'nope'.*scores in both runs: x$"):
        eb.compare(a, b, score="nope")
    with pytest.raises(eb.ConfigurationError, match=r"only in 'a'"):
        eb.compare(a, b, score="y")


def test_compare_rejects_what_is_not_a_run() -> None:
    a = make_run({"x": [1.0]}, name="a")
    with pytest.raises(eb.ConfigurationError, match="takes two runs"):
        eb.compare(a, "runs/other")  # type: ignore[arg-type]


# -- regressions and text -----------------------------------------------------------------------


def test_regressions_show_outputs_side_by_side_worst_first() -> None:
    a = make_run({"q": [1.0, 0.9, 0.5, 0.4], "r": [1.0, 1.0, 1.0, 1.0]}, name="a")
    b = make_run({"q": [0.2, 0.8, 0.6, 0.4], "r": [0.0, 1.0, 1.0, 1.0]}, name="b")
    cmp = eb.compare(a, b)
    reg = cmp.regressions()
    assert list(reg.columns) == [
        "case_id",
        "score",
        "a",
        "b",
        "delta",
        "output_a",
        "output_b",
        "rationale_a",
        "rationale_b",
    ]
    assert reg["case_id"].tolist() == ["c0", "c0", "c1"]
    assert reg["score"].astype(str).tolist() == ["r", "q", "q"]
    assert reg["output_a"].tolist() == ["out-a-0", "out-a-0", "out-a-1"]
    assert reg["output_b"].tolist() == ["out-b-0", "out-b-0", "out-b-1"]
    only_q = cmp.regressions(score="q")
    assert only_q["case_id"].tolist() == ["c0", "c1"]
    with pytest.raises(eb.ConfigurationError, match="compared scores: q, r"):
        cmp.regressions(score="zzz")


def test_text_repr_reads_as_a_summary() -> None:
    a = make_run({"ok": [1.0, 0.0, 0.0, 1.0]}, name="baseline", ids=["a", "b", "c", "d"])
    b = make_run({"ok": [1.0, 1.0, 1.0]}, name="candidate", ids=["a", "b", "c"])
    text = repr(eb.compare(a, b))
    lines = text.splitlines()
    assert lines[0] == "<Comparison 'baseline' → 'candidate' · 3 shared cases · 1 score>"
    assert lines[1].startswith("  ok: 33% → 100% (+66.7 pp, 95% CI [")
    assert "exact McNemar" in lines[1] and "3 paired: 2 improved, 0 regressed, 1 same" in lines[1]
    assert lines[2].startswith("  ! Case sets differ: 1 case only in a ('baseline')")


# -- loaded runs --------------------------------------------------------------------------------


class TableRun:
    """A run rebuilt from its stored tables only, as a loader would (parquet round trip)."""

    def __init__(self, run: eb.Run) -> None:
        self.name = run.name
        self.definitions = run.definitions
        self.headline = run.headline
        self.cases = self._roundtrip(run.cases.assign(output=run.cases["output"].astype(str)))
        self.scores = self._roundtrip(run.scores)

    @staticmethod
    def _roundtrip(table: pd.DataFrame) -> pd.DataFrame:
        buffer = io.BytesIO()
        table.to_parquet(buffer)
        buffer.seek(0)
        return pd.read_parquet(buffer)


def test_tables_read_back_from_parquet_compare_the_same() -> None:
    a = make_run({"q": [1.0, 0.5, "unscored", 0.0], "ok": [1.0, 0.0, 1.0, None]}, name="a")
    b = make_run({"q": [0.5, 0.5, 1.0, "crash"], "ok": [1.0, 1.0, 0.0, 1.0]}, name="b")
    direct = eb.compare(a, b)
    loaded = eb.compare(TableRun(a), TableRun(b))  # type: ignore[arg-type]
    pd.testing.assert_frame_equal(direct.summary, loaded.summary)
    pd.testing.assert_frame_equal(direct.cases, loaded.cases, check_categorical=False)
    assert direct.warnings == loaded.warnings
    assert direct.regressions()["output_a"].tolist() == loaded.regressions()["output_a"].tolist()


def test_compares_runs_loaded_from_the_store(tmp_path: Any) -> None:
    load_run = getattr(eb, "load_run", None)
    if load_run is None:
        pytest.skip("eb.load_run is not available yet")
    frame = pd.DataFrame({"id": ["x", "y", "z"], "v": [1.0, 0.0, 1.0]})

    def scaled(k: float) -> eb.Run:
        return eb.run(
            frame,
            task=lambda v: v * k,
            scorers=[eb.scorer("s")(lambda output: output)],
            name=f"r{k}",
            store=str(tmp_path),
            progress=False,
        )

    runs = [scaled(1.0), scaled(0.0)]
    direct = eb.compare(*runs)
    loaded = eb.compare(*(load_run(r.path) for r in runs))
    pd.testing.assert_frame_equal(direct.summary, loaded.summary)
    pd.testing.assert_frame_equal(direct.cases, loaded.cases, check_categorical=False)


# -- leaderboard --------------------------------------------------------------------------------


def test_leaderboard_ranks_by_the_primary_score_best_first() -> None:
    primary = eb.define_score("q", label="Quality", primary=True)
    runs = [
        make_run({"q": v}, name=n, definitions={"q": primary})
        for n, v in (("low", [0.2, 0.4]), ("high", [0.9, 0.7]), ("mid", [0.5, 0.6]))
    ]
    board = eb.leaderboard(runs)
    assert list(board.columns) == LEADERBOARD_COLUMNS
    assert board["name"].tolist() == ["high", "mid", "low"]
    assert board["rank"].tolist() == [1, 2, 3]
    assert board["score"].tolist() == ["q"] * 3 and board["label"].tolist() == ["Quality"] * 3
    assert board["mean"].tolist() == pytest.approx([0.8, 0.55, 0.3])
    assert (board["ci_low"] <= board["mean"]).all() and (board["mean"] <= board["ci_high"]).all()
    assert board["completion"].tolist() == [1.0, 1.0, 1.0]
    assert "note" not in board.attrs


def test_leaderboard_ties_share_a_rank_and_missing_values_rank_last() -> None:
    runs = {
        "none": make_run({"q": ["crash", "crash"]}),
        "a": make_run({"q": [1.0, 0.0]}),
        "b": make_run({"q": [0.0, 1.0]}),
    }
    board = eb.leaderboard(runs)
    assert board["name"].tolist() == ["a", "b", "none"]
    assert board["rank"].tolist() == [1, 1, 3]
    assert board["completion"].tolist() == [1.0, 1.0, 0.0]


def test_leaderboard_does_not_rank_when_primaries_differ() -> None:
    # issue 35: ranking by the passed rate (tasks that returned) put a 90 % and a 10 % run
    # both first; without one shared score there is no ranking
    p1 = eb.define_score("p1", primary=True)
    p2 = eb.define_score("p2", primary=True)
    a = make_run({"p1": [1.0, 1.0, 1.0], "x": [0.0, 0.0, 0.0]}, name="a", definitions={"p1": p1})
    b = make_run({"p2": [0.0, 0.0, 0.0], "x": [1.0, 1.0, 1.0]}, name="b", definitions={"p2": p2})
    c = make_run({"p1": [1.0, "crash", "crash"]}, name="c", definitions={"p1": p1})
    board = eb.leaderboard([c, a, b])
    assert board.attrs["note"] == (
        "No ranking: primary scores differ (p1, p2), and one score's mean is no measure of "
        "another's. Give the runs one shared primary score to rank them."
    )
    assert board["name"].tolist() == ["c", "a", "b"]  # the order given
    for column in ("rank", "rank_low", "rank_high", "tier"):
        assert board[column].isna().all(), column
    assert board["passed_rate"].tolist() == pytest.approx([1 / 3, 1.0, 1.0])
    assert board["score"].tolist() == ["p1", "p1", "p2"]


def test_leaderboard_of_nothing_and_of_non_runs() -> None:
    # nothing to rank is a mistake, as for eb.pool([]) (tests/test_careless_calls.py)
    with pytest.raises(eb.ConfigurationError, match="needs at least one run; it was given none"):
        eb.leaderboard([])
    with pytest.raises(eb.ConfigurationError, match="takes runs"):
        eb.leaderboard(["runs/x"])  # type: ignore[list-item]


# -- properties -----------------------------------------------------------------------------


class FakeRun:
    """The public tables of a run, built directly (as a loader would)."""

    def __init__(self, name: str, ids: list[str], counted: dict[str, list[float]]) -> None:
        self.name = name
        self.definitions = [eb.define_score(s) for s in counted]
        n, names = len(ids), list(counted)
        self.cases = pd.DataFrame({"case_id": ids, "outcome": ["passed"] * n, "output": ids})
        values = np.array([counted[s] for s in names], dtype=float).T.reshape(-1)
        self.scores = pd.DataFrame(
            {
                "case_id": np.repeat(np.array(ids, dtype=object), len(names)),
                "score": pd.Categorical(names * n, categories=names),
                "counted": values,
                "rationale": [None] * (n * len(names)),
            }
        )


cell = st.one_of(st.just(math.nan), st.sampled_from([0.0, 1.0]), st.floats(0.0, 1.0))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(cell, cell, cell, cell), min_size=0, max_size=25),
    st.integers(0, 5),
    st.booleans(),
)
def test_summary_and_cases_agree_with_the_pairing(
    rows: list[tuple[float, float, float, float]], shift: int, binary: bool
) -> None:
    if binary:
        rows = [tuple(v if math.isnan(v) else float(v >= 0.5) for v in r) for r in rows]  # type: ignore[misc]
    n = len(rows)
    ids_a = [f"c{i}" for i in range(n)]
    ids_b = [f"c{i}" for i in range(shift, n + shift)]  # b is shifted: partial overlap
    a = FakeRun("a", ids_a, {"x": [r[0] for r in rows], "y": [r[1] for r in rows]})
    b = FakeRun("b", ids_b, {"x": [r[2] for r in rows], "y": [r[3] for r in rows]})
    cmp = eb.compare(a, b)  # type: ignore[arg-type]
    assert cmp.scores == ["x", "y"]
    cases = cmp.cases
    for row in cmp.summary.itertuples(index=False):
        mine = cases[cases["score"] == row.score]
        pairs = mine[mine["change"].isin(["improved", "regressed", "same"])]
        assert row.n_paired == len(pairs) == row.improved + row.regressed + row.same
        assert row.improved == (pairs["delta"] > 0).sum()
        assert row.regressed == (pairs["delta"] < 0).sum()
        if row.n_paired == 0:
            assert math.isnan(row.p_value) and math.isnan(row.delta)
            continue
        assert row.mean_a == pytest.approx(pairs["a"].mean())
        assert row.mean_b == pytest.approx(pairs["b"].mean())
        assert row.delta == pytest.approx(row.mean_b - row.mean_a)
        assert 0.0 <= row.p_value <= row.p_adjusted <= 1.0
        assert -1.0 <= row.ci_low <= row.delta <= row.ci_high <= 1.0
        if (pairs["delta"] == 0).all():
            assert row.p_value == 1.0
    assert not (cases["a"].isna() & cases["b"].isna()).any()
    assert (cases.loc[cases["change"] == "only_a", "b"].isna()).all()
    assert (cases.loc[cases["change"] == "only_b", "a"].isna()).all()
