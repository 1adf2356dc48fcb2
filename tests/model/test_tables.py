"""Tidy tables: stable columns, exactly n_cases × n_scores rows, input then definition order."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

import evalbook as eb
from evalbook._model._scoring_rule import SUMMARY_COLUMNS
from evalbook._model._tables import CASE_COLUMNS, SCORE_COLUMNS

judge_grader = eb.Grader(kind="model", id="judge", model="gpt-x")
A = eb.define_score("a", label="Alpha", grader=eb.Grader(kind="rule", id="exact"))
B = eb.define_score("b", grader=judge_grader)
P = eb.define_score("p", combine=eb.mean_of(A, B), primary=True)


@eb.scorer(A)
def sa(x: int) -> Any:
    return [1.0, 0.0, eb.Unscored("skip"), 1.0][x]


@eb.scorer(B)
def sb(x: int) -> Any:
    return eb.Score(0.5, rationale=f"r{x}", metadata={"raw": 50, "x": x})


def task(x: int, ctx: Any) -> int:
    if x == 3:
        raise RuntimeError("down")
    return x


def make() -> eb.Run:
    df = pd.DataFrame({"x": [0, 1, 2, 3]}, index=["w", "z", "y", "x"])
    return eb.run(df, task=task, scorers=[sa, sb], scores=[P], store=None, progress=False)


def test_columns_and_shape() -> None:
    r = make()
    assert list(r.cases.columns) == CASE_COLUMNS
    assert list(r.scores.columns) == SCORE_COLUMNS
    assert list(r.summary().columns) == SUMMARY_COLUMNS
    assert list(r.unscored().columns) == ["score", "status", "reason", "n"]
    assert len(r.cases) == 4 and len(r.scores) == 4 * 3


def test_order_is_input_then_definition() -> None:
    r = make()
    assert r.cases["case_id"].tolist() == ["w", "z", "y", "x"]
    assert r.scores["case_id"].tolist() == [c for c in "wzyx" for _ in range(3)]
    assert r.scores["score"].astype(str).tolist() == ["a", "b", "p"] * 4


def test_categoricals_for_low_cardinality_columns() -> None:
    r = make()
    for col in ["score", "status", "reason", "grader_kind", "grader_id", "grader_model"]:
        assert isinstance(r.scores[col].dtype, pd.CategoricalDtype), col
    assert isinstance(r.cases["outcome"].dtype, pd.CategoricalDtype)
    assert r.scores["value"].dtype == "float64" and r.scores["counted"].dtype == "float64"


def test_value_is_nan_unless_scored_and_counted_follows_the_rule() -> None:
    s = make().scores
    assert s.loc[s["status"] != "scored", "value"].isna().all()
    assert s.loc[s["status"] == "scored", "value"].notna().all()
    p = s[s["score"] == "p"]
    assert p["value"].tolist()[:2] == [0.75, 0.25]
    assert p["reason"].astype(str).tolist()[2:] == ["component_unscored:a", "case_errored"]


def test_grader_rationale_metadata() -> None:
    s = make().scores
    b = s[s["score"] == "b"].reset_index(drop=True)
    assert b["grader_kind"].tolist()[:1] == ["model"] and b["grader_model"][0] == "gpt-x"
    assert b["rationale"].tolist()[:3] == ["r0", "r1", "r2"]
    assert json.loads(b["metadata"][1]) == {"raw": 50, "x": 1}
    a = s[s["score"] == "a"]
    assert set(a["grader_id"].astype(str)) == {"exact"}


def test_summary_counts_and_labels() -> None:
    summary = make().summary().set_index("score")
    assert summary.loc["a", "label"] == "Alpha"
    assert summary.loc["a", "mean"] == 0.5 and summary.loc["a", "counted"] == 2
    assert summary.loc["a", "unscored"] == 1 and summary.loc["a", "excluded"] == 1
    assert bool(summary.loc["p", "primary"]) and bool(summary.loc["p", "derived"])
    assert (summary["ci_low"] <= summary["mean"]).all() and (
        summary["mean"] <= summary["ci_high"]
    ).all()


def test_unscored_breakdown() -> None:
    u = make().unscored()
    got = {(r.score, r.status, r.reason): r.n for r in u.itertuples()}
    assert got == {
        ("a", "unscored", "skip"): 1,
        ("a", "error", "case_errored"): 1,
        ("b", "error", "case_errored"): 1,
        ("p", "unscored", "component_unscored:a"): 1,
        ("p", "error", "case_errored"): 1,
    }


def test_wide_table() -> None:
    w = make().wide()
    assert list(w.columns) == ["case_id", "epoch", "outcome", "a", "b", "p"]
    assert w["a"].tolist()[:2] == [1.0, 0.0]


def test_text_repr() -> None:
    text = repr(make())
    assert "4 cases" in text and "p:" in text and "(1 errored)" in text


def test_tables_are_the_same_with_or_without_the_touched_index() -> None:
    from evalbook._model._scoring_rule import counted_of
    from evalbook._model._tables import scores_table

    r = make()
    results = r._results
    fast = scores_table(results, r.definitions, counted_of(results, r.definitions))
    results.reason = list(results.reason)  # replaced wholesale: tables must scan everything
    assert results.touched is None
    slow = scores_table(results, r.definitions, counted_of(results, r.definitions))
    pd.testing.assert_frame_equal(fast, slow)
    assert slow["reason"].notna().sum() == 5
