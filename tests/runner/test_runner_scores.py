"""The scores a run records: through `ctx`, from scorers, several at once, and derived.

Invalid values and raising scorers become records; no exception escapes `eb.run`.
"""

from __future__ import annotations

import logging
from typing import Any

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _runner_helpers import DF, exact, run, upper


def test_ctx_records_scores_through_the_contract() -> None:
    s, t = eb.define_score("s"), eb.define_score("t")

    def task(question: str, ctx: Any) -> str:
        ctx.record_score(s, 0.1)
        ctx.record_score("s", 0.9, rationale="second wins")
        ctx.record_score(t, True)
        return question

    r = run(DF.head(1), task=task, scores=[s, t])
    rows = r.scores.to_dict("records")
    assert (rows[0]["value"], rows[0]["rationale"]) == (0.9, "second wins")
    assert rows[1]["status"] == "error" and "True" in rows[1]["message"]


def test_ctx_unknown_score_errors_the_case_with_a_clear_message() -> None:
    r = run(DF.head(1), task=lambda ctx: ctx.record_score("nope", 1))
    assert r.cases["outcome"].tolist() == ["errored"]
    assert "'nope' is not a score of this run" in r.cases["error_message"][0]


def test_unrecorded_score_is_unscored() -> None:
    r = run(DF.head(1), task=upper, scores=[eb.define_score("manual")])
    assert r.scores["reason"].tolist() == ["not_recorded"]


def test_scorer_outcomes_become_records() -> None:
    s = eb.define_score("s")
    outputs = {"a": eb.Unscored("why"), "b": "high", "c": 1.5}

    @eb.scorer(s)
    def sc(question: str) -> Any:
        if question == "c":
            raise eb.SkipScore("skipped")
        return outputs[question]

    def boom(output: str) -> float:
        raise ValueError("bad scorer")

    r = run(DF, task=upper, scorers=[sc, boom])
    reasons = r.scores["reason"].astype(str).tolist()
    assert reasons == [
        "why",
        "scorer_raised",
        "invalid_score",
        "scorer_raised",
        "skipped",
        "scorer_raised",
    ]
    assert "ValueError: bad scorer" in r.scores["message"][1]
    assert "'high'" in r.scores["message"][2]


def test_first_invalid_value_is_logged_once_per_scorer(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="evalbook"):
        run(DF, task=upper, scorers=[lambda output: "high"])
    messages = [r.getMessage() for r in caplog.records if r.name == "evalbook"]
    assert len(messages) == 1 and "'high'" in messages[0]


def test_multi_score_scorer() -> None:
    a, b = eb.define_score("a"), eb.define_score("b")

    @eb.scorer(a, b)
    def both(output: str) -> dict[str, float]:
        return {"a": 1.0, "b": 0.5}

    r = run(DF.head(1), task=upper, scorers=[both])
    assert r.scores["value"].tolist() == [1.0, 0.5]


def test_derived_scores() -> None:
    correct = eb.define_score("correct")
    natural = eb.define_score("natural")
    passed = eb.define_score(
        "pass", combine=eb.all_of(correct, eb.at_least(natural, 0.5)), primary=True
    )
    nat = {"a": 0.5, "b": eb.Unscored("n/a"), "c": "bad"}

    @eb.scorer(natural)
    def natural_fn(question: str) -> Any:
        return nat[question]

    r = run(DF, task=upper, scorers=[eb.scorer(correct)(exact.fn), natural_fn], scores=[passed])
    assert [d.name for d in r.definitions] == ["correct", "natural", "pass"]
    p = r.scores[r.scores["score"] == "pass"]
    assert p["status"].tolist() == ["scored", "unscored", "error"]
    assert p["value"].tolist()[0] == 1.0
    assert p["reason"].astype(str).tolist()[1:] == [
        "component_unscored:natural",
        "component_error:natural",
    ]
    assert p["derived"].all()


def test_lambdas_get_numbered_names() -> None:
    r = run(DF.head(1), task=upper, scorers=[lambda output: 1.0, lambda output: 0.0])
    assert [d.name for d in r.definitions] == ["lambda", "lambda_2"]


SCORER_RESULTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-3, max_value=3),
    st.booleans(),
    st.text(max_size=4),
    st.none(),
    st.builds(eb.Unscored, st.text(max_size=4)),
    st.builds(eb.Score, st.floats(), st.one_of(st.none(), st.text(max_size=4))),
    st.lists(st.floats(), max_size=2),
    st.just(ValueError("raised")),
    st.just(eb.SkipScore("skip")),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(SCORER_RESULTS, min_size=1, max_size=6), st.sampled_from(["exclude", "zero"]))
def test_no_exception_escapes_run_and_means_stay_in_range(results: list[Any], errors: str) -> None:
    df = pd.DataFrame({"i": range(len(results))})
    s = eb.define_score("s", errors=errors)  # type: ignore[arg-type]

    @eb.scorer(s)
    def scripted(i: int) -> Any:
        item = results[i]
        if isinstance(item, BaseException):
            raise item
        return item

    r = run(df, task=lambda i: i, scorers=[scripted], concurrency=2)
    assert len(r.scores) == len(results)
    scored = r.scores["status"] == "scored"
    assert r.scores.loc[~scored, "value"].isna().all()
    assert r.scores.loc[scored, "value"].between(0, 1).all()
    mean = r.summary().iloc[0]["mean"]
    assert pd.isna(mean) or 0.0 <= mean <= 1.0
    for msg, item in zip(r.scores["message"], results, strict=True):
        if isinstance(msg, str) and "invalid score" in msg:
            assert repr(item)[:50] in msg or repr(getattr(item, "value", None))[:50] in msg
