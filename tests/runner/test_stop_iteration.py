"""A sync task or scorer that raises StopIteration is an error record, never a hung run.

asyncio futures cannot hold StopIteration; before the fix the worker thread's hand-over raised
TypeError on the loop and every result of that batch was lost, so the run waited for ever.
"""

from __future__ import annotations

import pandas as pd
import pytest

import evalbook as eb

pytestmark = pytest.mark.timeout(60)  # the old behaviour hangs: fail instead of waiting


def _task(x: int) -> int:
    if x % 3 == 0:
        raise StopIteration("from the task")
    return x


def _scorer(output: int) -> float:
    if output % 3 == 1:
        raise StopIteration("from the scorer")
    return 1.0


def test_sync_stop_iteration_is_an_error_record() -> None:
    data = pd.DataFrame({"x": range(30)})
    run = eb.run(data, task=_task, scorers=[_scorer], store=None, progress=False, concurrency=4)
    outcomes = run.cases["outcome"].astype(str).tolist()
    assert outcomes.count("errored") == 10 and outcomes.count("passed") == 20
    errored = run.cases[run.cases["outcome"] == "errored"]
    assert errored["error_message"].str.contains("StopIteration").all()
    reasons = run.scores["reason"].astype(str).tolist()
    assert reasons.count("scorer_raised") == 10  # x % 3 == 1
    assert reasons.count("case_errored") == 10
    assert run.scores["status"].astype(str).tolist().count("scored") == 10
