"""One options model: `RunOptions`, checked once, before any case runs, for every entry point."""

from __future__ import annotations

import asyncio
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DF = pd.DataFrame({"x": ["a", "b"]})


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency must be an integer >= 1, got 0"),
        ({"concurrency": True}, "concurrency must be an integer >= 1, got True"),
        ({"attempts": 1.5}, "attempts must be an integer >= 1, got 1.5"),
        ({"timeout": 0}, "timeout must be a number of seconds > 0 or None, got 0"),
        ({"timeout": "1"}, "timeout must be a number of seconds > 0 or None, got '1'"),
    ],
)
def test_every_entry_point_rejects_a_bad_option_before_any_case_runs(
    options: dict[str, Any], message: str
) -> None:
    calls: list[str] = []

    def task(x: str) -> str:
        calls.append(x)
        return x

    entry_points = [
        lambda: eb.run(DF, task=task, store=None, progress=False, **options),
        lambda: asyncio.run(eb.arun(DF, task=task, store=None, progress=False, **options)),
        lambda: eb.Eval(DF, task=task, **options),
        lambda: eb.Eval(DF, task=task).run(store=None, progress=False, **options),
    ]
    for call in entry_points:
        with pytest.raises(eb.ConfigurationError) as info:
            call()
        assert str(info.value) == message
    assert calls == []


def test_an_eval_with_an_unknown_option_says_which_and_lists_the_known_ones() -> None:
    with pytest.raises(eb.ConfigurationError) as info:
        eb.Eval(DF, task=lambda x: x, retries=3, concurency=2)
    text = str(info.value)
    assert text.startswith("unknown run options 'retries', 'concurency'")
    assert "concurrency" in text.split("run options are:")[1]


def test_an_unknown_override_of_eval_run_is_a_configuration_error() -> None:
    with pytest.raises(eb.ConfigurationError, match="unknown run option 'retries'"):
        eb.Eval(DF, task=lambda x: x).run(store=None, retries=3)


def test_eval_run_options_reach_the_run() -> None:
    ev = eb.Eval(DF, task=lambda x: x, scorers=[lambda output: 1.0], name="echo", attempts=2)
    run = ev.run(store=None, progress=False, concurrency=3)
    assert run.name == "echo"
    assert run.options == {
        "concurrency": 3,
        "timeout": None,
        "attempts": 2,
        "output_column": None,
    }


def test_rescore_checks_its_concurrency_once_too() -> None:
    run = eb.run(DF, task=lambda x: x, scorers=[lambda output: 1.0], store=None, progress=False)
    with pytest.raises(eb.ConfigurationError, match="concurrency must be an integer >= 1, got 0"):
        run.rescore(scorers=[lambda output: 0.0], concurrency=0)
