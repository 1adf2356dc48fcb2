"""Judge prompts: template placeholders and prompt functions, alone and in runs."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _judge_helpers import Scripted, judged, run, score

# a prompt's placeholders and signature, and its messages, outside any run
from evalbook._judges._prompt import make_prompt, placeholders


@pytest.mark.parametrize(
    ("template", "names"),
    [
        ("no placeholders", []),
        ("{output}", ["output"]),
        ("{question} {output} {question}", ["question", "output"]),
        ("{row[my col]} {output.text} {items[0]}", ["row", "output", "items"]),
        ("{output:>{width}}", ["output", "width"]),
        ("{{output}} {x!r:^10}", ["x"]),
    ],
)
def test_placeholders(template: str, names: list[str]) -> None:
    assert placeholders(template, "judge") == names


def test_template_signature_lists_the_placeholders() -> None:
    prompt = make_prompt("{a} {output}", "judge(x)")
    assert list(prompt.signature.parameters) == ["a", "output"]
    assert all(p.default is inspect.Parameter.empty for p in prompt.signature.parameters.values())


def test_function_signature_is_the_functions() -> None:
    def fn(output: str, /, question: str, *, k: int = 3, **rest: Any) -> str:
        return output

    prompt = make_prompt(fn, "judge(x)")
    assert list(prompt.signature.parameters) == ["output", "question", "k", "rest"]
    assert prompt.signature.return_annotation is inspect.Signature.empty


def test_messages_from_template_and_function() -> None:
    prompt = make_prompt("{a}-{output}", "j")
    assert asyncio.run(prompt.messages((), {"a": 1, "output": 2})) == [
        {"role": "user", "content": "1-2"}
    ]
    fn = make_prompt(lambda output: ({"role": "user", "content": output, "name": "n"},), "j")
    assert asyncio.run(fn.messages((), {"output": "o"})) == [
        {"role": "user", "content": "o", "name": "n"}
    ]


@pytest.mark.parametrize("result", [[], None, 3, b"bytes", [{"role": 1, "content": "x"}], ["x"]])
def test_bad_prompt_function_results_raise_type_error(result: Any) -> None:
    prompt = make_prompt(lambda output: result, "judge(x)")
    with pytest.raises(TypeError, match=r"judge\(x\)"):
        asyncio.run(prompt.messages((), {"output": "o"}))


class _Opaque:
    @property
    def __signature__(self) -> Any:
        raise ValueError("no signature here")

    def __call__(self) -> str:
        return ""


def test_unreadable_signature_is_a_configuration_error() -> None:
    with pytest.raises(eb.ConfigurationError, match="signature"):
        make_prompt(_Opaque(), "judge(x)")


# -- prompts in runs (moved from test_judge.py) --------------------------------------------


def test_template_fills_columns_output_row_and_case_id() -> None:
    client = Scripted(score(50))
    j = eb.judge("q", "{case_id}: {question} -> {output!r} ({row[ref]}) {{literal}}", client=client)
    df = pd.DataFrame({"id": ["c1"], "question": ["2+2"], "ref": ["4"]})
    run(df, task=lambda question: "four", scorers=[j])
    assert client.calls[0][0] == [{"role": "user", "content": "c1: 2+2 -> 'four' (4) {literal}"}]


def test_missing_placeholder_fails_before_any_case_runs() -> None:
    called: list[Any] = []

    def task(question: str) -> str:
        called.append(question)
        return question

    client = Scripted(score(50))
    j = eb.judge("q", "Q: {questoin}\nA: {output}", client=client)
    with pytest.raises(eb.ScorerSignatureError, match="questoin") as info:
        run(pd.DataFrame({"question": ["a"]}), task=task, scorers=[j])
    assert "judge(q)" in str(info.value) and "question" in str(info.value)
    assert called == [] and client.calls == []


@pytest.mark.parametrize("template", ["{}", "{0}", "{my col}", "{class}", "unbalanced {", "{a!x"])
def test_bad_templates_are_configuration_errors(template: str) -> None:
    with pytest.raises(eb.ConfigurationError):
        eb.judge("q", template, client=Scripted(score(1)))


def test_prompt_function_returns_messages_bound_by_name() -> None:
    client = Scripted(score(70))

    def prompt(question: str, output: str) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": "You grade answers."},
            {"role": "user", "content": f"{question} => {output}"},
        ]

    j = eb.judge("q", prompt, client=client)
    r = run(pd.DataFrame({"question": ["hi"]}), task=lambda question: "hello", scorers=[j])
    assert r.scores["value"].iloc[0] == 0.7
    assert client.calls[0][0][1] == {"role": "user", "content": "hi => hello"}


def test_async_prompt_function_and_string_result() -> None:
    async def prompt(output: str) -> str:
        return f"grade {output}"

    client = Scripted(score(10))
    rec = judged(eb.judge("q", prompt, client=client), output="x")
    assert rec.value == 0.1
    assert client.calls[0][0] == [{"role": "user", "content": "grade x"}]


def test_prompt_function_with_unbound_parameter_fails_before_any_case() -> None:
    def prompt(output: str, rubric: str) -> str:
        return output

    j = eb.judge("q", prompt, client=Scripted(score(1)))
    with pytest.raises(eb.ScorerSignatureError, match="rubric"):
        run(pd.DataFrame({"a": [1]}), task=lambda a: a, scorers=[j])


def test_prompt_function_returning_garbage_is_scorer_raised() -> None:
    j = eb.judge("q", lambda output: [{"content": "no role"}], client=Scripted(score(1)))
    r = run(pd.DataFrame({"a": [1]}), task=lambda a: a, scorers=[j])
    assert r.scores["reason"].iloc[0] == "scorer_raised"
    assert "role" in r.scores["message"].iloc[0]
