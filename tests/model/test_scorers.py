"""@eb.scorer and plain-function scorers; parameter binding."""

from __future__ import annotations

import pytest

import evalbook as eb
from evalbook._model._scorers import Scorer, as_scorers
from evalbook._runner._binding import bind, call_args


def test_bare_decorator_uses_the_function_name() -> None:
    @eb.scorer
    def exact(output: str) -> float:
        return 1.0

    assert isinstance(exact, Scorer)
    assert [d.name for d in exact.definitions] == ["exact"]
    assert exact("x") == 1.0


def test_decorator_with_definitions_and_names() -> None:
    a = eb.define_score("a")

    @eb.scorer(a, "b")
    def both(output: str) -> dict[str, float]:
        return {"a": 1.0, "b": 0.0}

    assert [d.name for d in both.definitions] == ["a", "b"]
    assert both.definitions[0] is a


def test_async_scorers_are_detected() -> None:
    @eb.scorer
    async def judge(output: str) -> float:
        return 1.0

    assert judge.is_async


def test_bad_scorer_items_are_configuration_errors() -> None:
    with pytest.raises(eb.ConfigurationError):
        as_scorers([42])  # type: ignore[list-item]
    with pytest.raises(eb.ConfigurationError):
        eb.scorer(3.5)  # type: ignore[call-overload]


def test_lambda_names() -> None:
    names = [s.name for s in as_scorers([lambda output: 1, lambda output: 0, lambda output: 1])]
    assert names == ["lambda", "lambda_2", "lambda_3"]


def test_binding_positional_only_and_kwargs() -> None:
    def f(output: str, /, expected: str, **rest: object) -> None: ...

    b = bind(f, ["expected", "other"], kind="scorer", allow=("output", "row", "case_id"))
    args, kwargs = call_args(b, {"output": "o", "expected": "e", "other": 1, "case_id": "c"})
    assert args == ("o",)
    assert kwargs == {"expected": "e", "other": 1, "case_id": "c"}


def test_signature_error_names_function_parameter_and_available_names() -> None:
    def my_scorer(output: str, gold: str) -> float:
        return 1.0

    with pytest.raises(eb.ScorerSignatureError) as info:
        bind(my_scorer, ["question"], kind="scorer", allow=("output", "row", "case_id"))
    msg = str(info.value)
    assert "my_scorer" in msg and "'gold'" in msg and "question, output, row, case_id" in msg


def test_rebinding_a_scorer_binds_its_function() -> None:
    import pandas as pd

    @eb.scorer
    def near(output: str, expected: str) -> float:
        return 1.0 if output.lower() == expected.lower() else 0.0

    again = eb.scorer(eb.define_score("near_again"))(near)
    assert again.fn is near.fn
    df = pd.DataFrame({"id": ["a"], "output": ["X"], "expected": ["x"]})
    run = eb.run(df, output_column="output", scorers=[again], store=None, progress=False)
    assert run.scores["value"].tolist() == [1.0]
