"""A flaky run and its attempts table, cell by cell (tests/model/test_attempts.py, the store
and CLI tests of attempts)."""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

import evalbook as eb
from evalbook._model._attempts import ATTEMPT_COLUMNS

DATA = pd.DataFrame({"q": ["flaky", "slow", "steady"]}, index=["f", "s", "t"])


def flaky_task() -> Any:
    """Case f fails twice then passes (each epoch); s's epoch 2 times out once."""
    calls: Counter[tuple[str, int]] = Counter()

    async def task(q: str, epoch: int) -> str:
        # Async, and only the one cut attempt ever waits: every other attempt ends in the
        # first step of its call, which the event loop runs before the deadline's timer however
        # late that fires, so the short timeout= of `run_flaky` holds on a loaded machine.
        calls[q, epoch] += 1
        n = calls[q, epoch]
        if q == "flaky" and n <= 2:
            raise ConnectionError(f"reset #{n}")
        if q == "slow" and epoch == 2 and n == 1:
            await asyncio.Event().wait()  # nobody ever sets it: cut at timeout=
        return q.upper()

    return task


def run_flaky(**kw: Any) -> eb.Run:
    return eb.run(
        DATA,
        task=flaky_task(),
        scorers=[lambda output: float(output != "")],
        timeout=0.2,
        progress=False,
        **{"store": None, "attempts": 3, "epochs": 2, **kw},
    )


def check_flaky(table: pd.DataFrame, run: eb.Run) -> None:
    """The flaky run's attempts table, cell by cell."""
    assert list(table.columns) == ATTEMPT_COLUMNS
    rows = [
        ("f", 1, 1, "errored", "ConnectionError", "reset #1"),
        ("f", 1, 2, "errored", "ConnectionError", "reset #2"),
        ("f", 1, 3, "passed", None, None),
        ("f", 2, 1, "errored", "ConnectionError", "reset #1"),
        ("f", 2, 2, "errored", "ConnectionError", "reset #2"),
        ("f", 2, 3, "passed", None, None),
        ("s", 1, 1, "passed", None, None),
        ("s", 2, 1, "timed_out", "TimeoutError", "the task took longer than 0.2s"),
        ("s", 2, 2, "passed", None, None),
        ("t", 1, 1, "passed", None, None),
        ("t", 2, 1, "passed", None, None),
    ]
    got = [
        (r.case_id, r.epoch, r.attempt, r.outcome, _none(r.error_type), _none(r.error_message))
        for r in table.itertuples()
    ]
    assert got == rows
    assert table["outcome"].dtype == run.cases["outcome"].dtype  # the same categories
    assert table["epoch"].dtype == np.int32 and table["attempt"].dtype == np.int32
    assert str(table["started_at"].dtype) == "datetime64[ns, UTC]"
    assert table["duration_s"].dtype == np.float64
    assert table["error_type"].dtype == "category"
    cases = run.cases
    for (cid, epoch), rows_of in table.groupby(["case_id", "epoch"], sort=False):
        case = cases[(cases.case_id == cid) & (cases.epoch == epoch)].iloc[0]
        assert rows_of["started_at"].iloc[0] == case.started_at  # the sample's first attempt
        assert rows_of["started_at"].is_monotonic_increasing
        assert (rows_of["duration_s"] >= 0).all()
        assert rows_of["duration_s"].sum() <= case.duration_s + 1e-6
        assert rows_of["outcome"].iloc[-1] == case.outcome
    timed_out = table[table.outcome == "timed_out"].iloc[0]
    assert timed_out.duration_s >= 0.2
    # the retry starts once the cut attempt has ended
    later = table[(table.case_id == "s") & (table.epoch == 2)].iloc[1]
    gap = (later.started_at - timed_out.started_at).total_seconds()
    assert gap >= timed_out.duration_s - 1e-6


def _none(value: Any) -> Any:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value
