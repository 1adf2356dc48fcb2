"""@eb.scorer and plain-function scorers; parameter binding (docs/scoring.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb


def _run(df: pd.DataFrame, scorers: list[Any], **options: Any) -> eb.Run:
    return eb.run(df, scorers=scorers, store=None, progress=False, **options)


def test_bare_decorator_uses_the_function_name() -> None:
    @eb.scorer
    def exact(output: str) -> float:
        return 1.0

    assert [d.name for d in exact.definitions] == ["exact"]
    assert exact("x") == 1.0  # still the function, called as it is
    assert not exact.is_async
    run = _run(pd.DataFrame({"q": ["a"]}), [exact], task=lambda q: q)
    assert run.scores["score"].tolist() == ["exact"] and run.scores["value"].tolist() == [1.0]


def test_decorator_with_definitions_and_names() -> None:
    a = eb.define_score("a")

    @eb.scorer(a, "b")
    def both(output: str) -> dict[str, float]:
        return {"a": 1.0, "b": 0.0}

    assert [d.name for d in both.definitions] == ["a", "b"]
    assert both.definitions[0] is a
    run = _run(pd.DataFrame({"q": ["x"]}), [both], task=lambda q: q)
    assert run.definitions[0] is a
    assert run.scores[["score", "value"]].values.tolist() == [["a", 1.0], ["b", 0.0]]


def test_async_scorers_are_detected() -> None:
    @eb.scorer
    async def judge(output: str) -> float:
        return 1.0

    assert judge.is_async
    run = _run(pd.DataFrame({"q": ["x"]}), [judge], task=lambda q: q)
    assert run.scores["value"].tolist() == [1.0]


def test_bad_scorer_items_are_configuration_errors() -> None:
    with pytest.raises(eb.ConfigurationError, match="not 42"):
        _run(pd.DataFrame({"q": ["x"]}), [42], task=lambda q: q)
    with pytest.raises(eb.ConfigurationError):
        eb.scorer(3.5)  # type: ignore[call-overload]


def test_lambda_names() -> None:
    scorers = [lambda output: 1, lambda output: 0, lambda output: 1]
    run = _run(pd.DataFrame({"q": ["x"]}), scorers, task=lambda q: q)
    assert [d.name for d in run.definitions] == ["lambda", "lambda_2", "lambda_3"]
    assert run.scores["score"].tolist() == ["lambda", "lambda_2", "lambda_3"]
    assert run.scores["value"].tolist() == [1.0, 0.0, 1.0]


def test_binding_positional_only_and_kwargs() -> None:
    got: list[tuple[Any, ...]] = []

    def f(output: str, /, expected: str, **rest: object) -> float:
        got.append((output, expected, rest))
        return 1.0

    df = pd.DataFrame({"id": ["c"], "expected": ["e"], "other": [1]})
    _run(df, [f], task=lambda: "o")
    [(output, expected, rest)] = got
    assert (output, expected) == ("o", "e")  # by position, then by name
    # **rest takes every other name a case has: its columns, the row, its id, epoch and
    # transcript (None: the task logged no steps)
    assert rest == {
        "id": "c",
        "other": 1,
        "row": {"id": "c", "expected": "e", "other": 1},
        "case_id": "c",
        "epoch": 1,
        "transcript": None,
    }


def test_signature_error_names_function_parameter_and_available_names() -> None:
    def my_scorer(output: str, gold: str) -> float:
        return 1.0

    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    with pytest.raises(eb.ScorerSignatureError) as info:
        _run(pd.DataFrame({"question": ["q"]}), [my_scorer], task=task)
    msg = str(info.value)
    assert "my_scorer" in msg and "'gold'" in msg and "question, output, row, case_id" in msg
    assert calls == []  # raised at run() start, before any case runs


def test_rebinding_a_scorer_binds_its_function() -> None:
    @eb.scorer
    def near(output: str, expected: str) -> float:
        return 1.0 if output.lower() == expected.lower() else 0.0

    again = eb.scorer(eb.define_score("near_again"))(near)
    assert again.fn is near.fn
    df = pd.DataFrame({"id": ["a"], "output": ["X"], "expected": ["x"]})
    run = eb.run(df, output_column="output", scorers=[again], store=None, progress=False)
    assert run.scores["value"].tolist() == [1.0]
