"""Shared helpers of the comparison tests (test_compare, test_compare_warnings)."""

from __future__ import annotations

from collections.abc import Sequence
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
