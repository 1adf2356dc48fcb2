"""Score definitions, graders and combinators."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

import evalbook as eb


def test_define_score_is_frozen_and_validated() -> None:
    d = eb.define_score("formula.correct", label="Written back", grader=eb.Grader("rule", "exact"))
    assert isinstance(d, eb.ScoreDefinition)
    assert d.grader is not None and d.grader.kind == "rule"
    with pytest.raises(pydantic.ValidationError):
        d.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize("name", ["", "a b", "x/y", "é", "a:b"])
def test_bad_names_are_configuration_errors(name: str) -> None:
    with pytest.raises(eb.ConfigurationError, match="name"):
        eb.define_score(name)


def test_label_may_be_a_locale_map() -> None:
    d = eb.define_score("n", label={"en": "Natural reading", "zh-Hans": "读法自然"})
    assert d.display_label() == "Natural reading"
    assert d.display_label("zh-Hans") == "读法自然"
    assert eb.define_score("n").display_label() == "n"


def test_errors_policy_is_checked() -> None:
    with pytest.raises(eb.ConfigurationError):
        eb.define_score("x", errors="ignore")  # type: ignore[arg-type]


def test_grader_fields() -> None:
    g = eb.Grader(kind="model", id="judge", model="gpt-x", votes=3, reducer="median")
    assert (g.model, g.votes, g.reducer) == ("gpt-x", 3, "median")


A, B, C = eb.define_score("a"), eb.define_score("b"), eb.define_score("c")


@pytest.mark.parametrize(
    ("combine", "values", "expected"),
    [
        (eb.all_of(A, B), {"a": 1.0, "b": 1.0}, 1.0),
        (eb.all_of(A, B), {"a": 1.0, "b": 0.99}, 0.0),  # a bare requirement holds iff 1
        (eb.any_of(A, B), {"a": 0.0, "b": 1.0}, 1.0),
        (eb.any_of(A, B), {"a": 0.5, "b": 0.5}, 0.0),
        (eb.at_least(A, 0.5), {"a": 0.5}, 1.0),  # inclusive
        (eb.at_least(A, 0.5), {"a": 0.4999}, 0.0),
        (eb.all_of(A, eb.at_least(B, 0.5)), {"a": 1.0, "b": 0.7}, 1.0),
        (eb.mean_of(A, B), {"a": 1.0, "b": 0.0}, 0.5),
        (eb.mean_of(A, B, weights=[3, 1]), {"a": 1.0, "b": 0.0}, 0.75),
        (eb.mean_of(A, B, C, weights=(2, 2, 0)), {"a": 1.0, "b": 0.5, "c": 0.0}, 0.75),
        (eb.any_of(eb.all_of(A, B), C), {"a": 1.0, "b": 0.0, "c": 1.0}, 1.0),
    ],
)
def test_combinators(combine: Any, values: dict[str, float], expected: float) -> None:
    assert combine.evaluate(values) == pytest.approx(expected)


def test_combinators_accept_names_and_remember_definitions() -> None:
    c = eb.all_of("a", eb.at_least(B, 0.2))
    assert list(c.names()) == ["a", "b"]
    assert list(c.all_definitions()) == [B]


@pytest.mark.parametrize(
    "make",
    [
        lambda: eb.at_least(A, 1.5),
        lambda: eb.at_least(A, float("nan")),
        lambda: eb.mean_of(A, B, weights=[1]),
        lambda: eb.mean_of(A, B, weights=[0, 0]),
        lambda: eb.mean_of(A, weights=[-1]),
        lambda: eb.all_of(),
        lambda: eb.all_of(42),  # type: ignore[arg-type]
    ],
)
def test_bad_combinators_are_configuration_errors(make: object) -> None:
    with pytest.raises(eb.ConfigurationError):
        make()  # type: ignore[operator]


def test_derived_flag_and_json() -> None:
    p = eb.define_score("p", combine=eb.all_of(A, eb.at_least(B, 0.5)), primary=True)
    assert p.derived and not A.derived
    assert p.combine is not None
    assert p.combine.to_json() == {
        "op": "all_of",
        "items": ["a", {"op": "at_least", "score": "b", "threshold": 0.5}],
    }
