"""Judge prompts: template placeholders and prompt functions."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

import evalbook as eb
from evalbook._judge_prompt import make_prompt, placeholders


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
