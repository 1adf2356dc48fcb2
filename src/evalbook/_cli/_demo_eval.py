"""The bundled offline demo (`evalbook demo` runs it): a small arithmetic dataset, a
deterministic local "model" and a judge whose client is scripted (no network)."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pandas as pd

from .._api._eval import Eval
from .._errors import SkipScore
from .._judges._judge import judge
from .._model._definitions import Grader, all_of, at_least, define_score
from .._model._scorers import scorer

__all__ = ["demo_eval"]

_EXPR = re.compile(r"What is (\d+) ([-+*/]|\*\*) (\d+)\?")
_JUDGED = re.compile(r"Question: (?P<question>.*)\nAnswer: (?P<answer>.*)\n")


def demo_data() -> pd.DataFrame:
    """The bundled arithmetic questions (`id`, `question`, `expected`)."""
    with resources.files("evalbook").joinpath("data/arithmetic.csv").open() as f:
        return pd.read_csv(f, dtype=str)


def local_model(question: str) -> str:
    """A deterministic stand-in for a model: right on most questions, wrong on a few.

    It cannot divide by zero (it raises, so that case errors) and gets powers wrong.
    """
    m = _EXPR.fullmatch(question)
    if m is None:
        return "I don't know"
    a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
    if op == "**":
        return str(a * b)  # a plausible-looking mistake
    if op == "/":
        return str(a // b)  # raises ZeroDivisionError on x / 0
    return str({"+": a + b, "-": a - b, "*": a * b}[op])


correct = define_score(
    "answer.correct", label="Correct answer", grader=Grader(kind="rule", id="exact")
)
concise = define_score("answer.concise", label="Concise", grader=Grader(kind="rule", id="length"))
passed = define_score(
    "answer.pass", label="Pass", combine=all_of(correct, at_least(concise, 0.5)), primary=True
)


@scorer(correct)
def exact(output: str, expected: str) -> float:
    """1.0 when the answer is exactly the expected text."""
    return 1.0 if output.strip() == expected else 0.0


@scorer(concise)
def short(output: str) -> float:
    """1.0 for answers of up to 8 characters, falling to 0 at 40."""
    if not output:
        raise SkipScore("empty_output")
    return max(0.0, min(1.0, (40 - len(output)) / 32))


def scripted_judge_client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
    """A stand-in for a judge model: scores how plausible an answer looks, on 0–100.

    It replies like a tool call (`{"score", "justification"}`) and, like real judges now and
    then, once answers off its scale (950 on 0–100): that record becomes an `invalid_score`
    error naming 950, never a clamped 100.
    """
    m = _JUDGED.search(str(messages[-1]["content"]))
    if m is None:
        return {"score": 0, "justification": "I could not find the question and the answer."}
    question, answer = m.group("question"), m.group("answer").strip()
    if "100 - 37" in question:
        return {"score": 950, "justification": "Perfectly plausible!"}
    if not answer.lstrip("-").isdigit():
        return {"score": 10, "justification": "The answer is not a number."}
    if "**" in question:
        return {"score": 35, "justification": "Powers grow fast; this looks too small."}
    return {"score": 90, "justification": "A number of the expected size."}


plausible = define_score(
    "answer.plausible",
    label="Judged plausible",
    description="A (scripted) judge's view of how plausible the answer looks, 0–100.",
    grader=Grader(kind="model", id="judge", model="scripted-demo-judge"),
)

plausibility_judge = judge(
    plausible,
    "Question: {question}\nAnswer: {output}\nHow plausible is this answer, from 0 to 100?",
    client=scripted_judge_client,
    scale=(0, 100),
    model="scripted-demo-judge",
    retries=0,
)


def demo_eval(**options: Any) -> Eval:
    """The demo as an `Eval` (the CLI's `evalbook demo` runs it); `options` are run options.

    Example:
        >>> run = demo_eval().run(store=None, progress=False)
        >>> run.headline.text
        'Pass 91% over 11 of 12 cases · completed 92% (1 errored)'
    """
    options.setdefault("name", "arithmetic-demo")
    name = options.pop("name")
    return Eval(
        demo_data(),
        task=local_model,
        scorers=[exact, short, plausibility_judge],
        scores=[passed],
        name=name,
        **options,
    )
