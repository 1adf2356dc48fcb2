"""The bundled offline demo: a small arithmetic dataset and a deterministic local "model"."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any

import pandas as pd

from ._errors import SkipScore
from ._eval import Eval
from ._scorers import scorer
from ._scores import Grader, all_of, at_least, define_score

__all__ = ["demo_data", "demo_eval", "local_model"]

_EXPR = re.compile(r"What is (\d+) ([-+*/]|\*\*) (\d+)\?")


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


def demo_eval(**options: Any) -> Eval:
    """The demo as an `Eval` (the CLI's `evalbook demo` runs it)."""
    return Eval(
        demo_data(),
        task=local_model,
        scorers=[exact, short],
        scores=[passed],
        name="arithmetic-demo",
        **options,
    )
