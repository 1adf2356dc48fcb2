"""Shared helpers of the runner tests (test_runner, test_runner_scores)."""

from __future__ import annotations

from typing import Any

import pandas as pd

import evalbook as eb

DF = pd.DataFrame({"question": ["a", "b", "c"], "expected": ["A", "B", "x"]})


def upper(question: str) -> str:
    return question.upper()


@eb.scorer
def exact(output: str, expected: str) -> float:
    return 1.0 if output == expected else 0.0


def run(*args: Any, **kwargs: Any) -> eb.Run:
    kwargs.setdefault("store", None)
    kwargs.setdefault("progress", False)
    return eb.run(*args, **kwargs)
