"""A pass@k or pass^k score needs k epochs: `eb.run` refuses fewer while the plan is made,
before any case runs (docs/repeats.md)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DATA = pd.DataFrame({"q": ["a", "b"]})


def _run(definitions: list[eb.ScoreDefinition], epochs: int) -> tuple[list[str], eb.Run]:
    """Run `definitions` (every value 1.0) over two cases; the task calls made."""
    calls: list[str] = []

    def task(q: str) -> str:
        calls.append(q)
        return q

    scorers: list[Any] = []
    if definitions:
        names = [d.name for d in definitions]
        scorers = [eb.scorer(*definitions)(lambda output: dict.fromkeys(names, 1.0))]
    run = eb.run(DATA, task=task, scorers=scorers, epochs=epochs, store=None, progress=False)
    return calls, run


def test_too_few_epochs_names_the_scores_and_the_epochs_needed() -> None:
    defs = [
        eb.define_score("plain"),
        eb.define_score("p3", reducer=eb.pass_at(3)),
        eb.define_score("h5", reducer=eb.pass_hat(5)),
    ]
    for epochs in (5, 9):
        calls, run = _run(defs, epochs)
        assert len(calls) == 2 * epochs and run.headline.epochs == epochs
    with pytest.raises(eb.ConfigurationError) as err:
        _run(defs, 3)
    message = str(err.value)
    assert "'h5' (pass^5)" in message and "p3" not in message
    assert "epochs ≥ 5" in message and "epochs=5" in message and "epochs=3" in message
    with pytest.raises(eb.ConfigurationError, match=r"'p3' \(pass@3\), 'h5' \(pass\^5\)"):
        _run(defs, 1)


def test_no_case_runs_when_the_epochs_are_too_few() -> None:
    calls: list[str] = []

    def task(q: str) -> str:
        calls.append(q)
        return q

    scorer = eb.scorer(eb.define_score("p3", reducer=eb.pass_at(3)))(lambda output: 1.0)
    with pytest.raises(eb.ConfigurationError, match="epochs"):
        eb.run(DATA, task=task, scorers=[scorer], epochs=2, store=None, progress=False)
    assert calls == []


def test_runs_without_pass_k_need_no_epochs() -> None:
    calls, run = _run([eb.define_score("a", reducer="mode")], 1)
    assert len(calls) == 2 and run.summary()["score"].tolist() == ["a"]
    calls, run = _run([], 1)
    assert len(calls) == 2 and run.definitions == []
