"""Shared helpers of the comparison tests (test_compare, test_compare_warnings) and of the
gate's (tests/compare/test_check.py, tests/cli/test_cli_check_agree.py)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

import evalbook as eb

Value = float | str | None  # a number; "unscored"; "crash" (the task raises); None (invalid)


def make_run(
    values: dict[str, Sequence[Value]],
    *,
    name: str = "run",
    ids: Sequence[str] | None = None,
    definitions: dict[str, eb.ScoreDefinition] | None = None,
    scores: Sequence[eb.ScoreDefinition] = (),
) -> eb.Run:
    """A run whose scorer `s` returns `values[s][i]` for case i.

    `"unscored"` leaves the record unscored, `None` is an invalid value (an error record),
    `"crash"` in any score makes the task raise for that case (errored).
    """
    n = len(next(iter(values.values())))
    frame = pd.DataFrame({"id": list(ids) if ids is not None else [f"c{i}" for i in range(n)]})
    frame["i"] = range(n)
    defs = definitions or {}

    def task(i: int) -> str:
        if any(v[i] == "crash" for v in values.values()):
            raise RuntimeError("boom")
        return f"out-{name}-{i}"

    def scorer_for(score: str) -> Any:
        def score_it(i: int) -> Any:
            v = values[score][i]
            return eb.Unscored("skipped") if v == "unscored" else v

        return eb.scorer(defs.get(score, score))(score_it)

    return eb.run(
        frame,
        task=task,
        scorers=[scorer_for(s) for s in values],
        scores=list(scores),
        name=name,
        store=None,
        progress=False,
    )


GATE_OK = eb.define_score("ok", label="Right", primary=True)


def gate_run(values: list[float], name: str = "new", store: Path | None = None) -> eb.Run:
    """A run whose case i scores values[i] (a NaN value: the task errors on that case)."""
    df = pd.DataFrame({"id": [f"c{i}" for i in range(len(values))], "v": values})

    def task(v: float) -> float:
        if v != v:
            raise RuntimeError("no answer")
        return v

    scorer = eb.scorer(GATE_OK)(lambda output: output)
    return eb.run(df, task=task, scorers=[scorer], name=name, store=store, progress=False)
