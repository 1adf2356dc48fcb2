"""`scorer_timeout=`: each scorer call of a case has a deadline (docs/concepts.md)."""

from __future__ import annotations

import asyncio
import threading

import pandas as pd
import pytest

import evalbook as eb
from evalbook import ConfigurationError

DF = pd.DataFrame({"x": ["a", "b"]})


def test_a_sync_scorer_past_its_deadline_is_scorer_timed_out_and_others_keep_theirs() -> None:
    release = threading.Event()

    @eb.scorer
    def stuck(output: str) -> float:
        release.wait()  # never returns in time; released at the end of the test
        return 1.0

    @eb.scorer
    def quick(output: str) -> float:
        return 1.0

    try:
        # quick's thread hop must end inside the deadline: a generous one, for a loaded machine
        run = eb.run(
            DF,
            task=lambda x: x,
            scorers=[stuck, quick],
            scorer_timeout=5,
            store=None,
            progress=False,
        )
    finally:
        release.set()
    scores = run.scores.set_index(["case_id", "score"])
    for case in ("0", "1"):
        row = scores.loc[(case, "stuck")]
        assert row["status"] == "error" and row["reason"] == "scorer_timed_out"
        assert "stuck'" in row["message"] and "scorer_timeout=5s" in row["message"]
        assert scores.loc[(case, "quick")]["value"] == 1.0
    assert run.options["scorer_timeout"] == 5


def test_an_async_scorer_past_its_deadline_is_scorer_timed_out() -> None:
    @eb.scorer
    async def slow(output: str) -> float:
        await asyncio.Event().wait()  # nobody ever sets it
        return 1.0

    # fast ends in the first step of its call, which the event loop runs before the deadline's
    # timer however late that fires: the short deadline cannot cut it on a loaded machine
    @eb.scorer
    async def fast(output: str) -> float:
        return 0.5

    run = eb.run(
        DF,
        task=lambda x: x,
        scorers=[slow, fast],
        scorer_timeout=0.2,
        store=None,
        progress=False,
    )
    by = run.scores.set_index(["case_id", "score"])
    assert set(by.xs("slow", level="score")["reason"]) == {"scorer_timed_out"}
    assert list(by.xs("fast", level="score")["value"]) == [0.5, 0.5]


def test_a_scorer_own_timeout_error_is_scorer_raised_not_timed_out() -> None:
    @eb.scorer
    def raises(output: str) -> float:
        raise TimeoutError("mine")

    run = eb.run(
        DF, task=lambda x: x, scorers=[raises], scorer_timeout=5, store=None, progress=False
    )
    assert set(run.scores["reason"]) == {"scorer_raised"}


def test_without_scorer_timeout_it_is_not_recorded() -> None:
    run = eb.run(DF, task=lambda x: x, scorers=[lambda output: 1.0], store=None, progress=False)
    assert "scorer_timeout" not in run.options


@pytest.mark.parametrize("bad", [0, -1, True, "3"])
def test_scorer_timeout_is_checked_like_timeout(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="scorer_timeout must be a number of seconds"):
        eb.run(DF, task=lambda x: x, scorer_timeout=bad, store=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="scorer_timeout must be a number of seconds"):
        eb.Eval(DF, task=lambda x: x, scorer_timeout=bad)


def test_eval_passes_scorer_timeout_on() -> None:
    @eb.scorer
    async def slow(output: str) -> float:
        await asyncio.Event().wait()  # nobody ever sets it
        return 1.0

    ev = eb.Eval(DF, task=lambda x: x, scorers=[slow], scorer_timeout=0.1)
    run = ev.run(store=None, progress=False)
    assert set(run.scores["reason"]) == {"scorer_timed_out"}
