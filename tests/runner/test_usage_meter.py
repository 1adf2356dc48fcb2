"""The sample's meter: calls land under the source that made them, in every kind of call.

A client made by `eb.wrap_openai` (over a fake SDK client, no network) records each call; the
source is the task's or the running score's, whether the code is sync (a worker thread) or
async.
"""

from __future__ import annotations

import asyncio
import math
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _runner_helpers import call_model, metered_client

CLIENT = metered_client()


def fake_call(tokens: int) -> None:
    """A model call whose reply reports `tokens` prompt tokens, recorded into the sample."""
    call_model(CLIENT, tokens)


def frame(n: int = 3) -> pd.DataFrame:
    return pd.DataFrame({"q": [f"q{i}" for i in range(n)]})


def sources(run: eb.Run) -> dict[tuple[str, int, str], tuple[int, float]]:
    u = run.usage()
    return {
        (r.case_id, r.epoch, r.source): (r.calls, r.input_tokens) for r in u.itertuples(index=False)
    }


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_task_and_scorer_calls_land_under_their_sources(kind: str) -> None:
    if kind == "sync":

        def task(q: str) -> str:
            fake_call(10)
            return q

        @eb.scorer("judged")
        def judged(output: str) -> float:
            fake_call(3)
            return 1.0

    else:

        async def task(q: str) -> str:  # type: ignore[misc]
            await asyncio.sleep(0)
            fake_call(10)
            return q

        @eb.scorer("judged")
        async def judged(output: str) -> float:  # type: ignore[misc]
            await asyncio.sleep(0)
            fake_call(3)
            return 1.0

    run = eb.run(frame(), task=task, scorers=[judged], store=None, progress=False, epochs=2)
    got = sources(run)
    assert len(got) == 3 * 2 * 2
    for i in range(3):
        for epoch in (1, 2):
            assert got[(str(i), epoch, "task")] == (1, 10.0)
            assert got[(str(i), epoch, "judged")] == (1, 3.0)
    assert sorted(set(run.usage()["source"])) == ["judged", "task"]  # nowhere else
    assert run.cases["input_tokens"].tolist() == [13.0] * 6
    assert math.isnan(run.cases["cost"].iloc[0])  # no prices: unknown, never 0


def test_a_scorer_of_several_scores_records_under_their_names() -> None:
    a, b = eb.define_score("a"), eb.define_score("b")

    @eb.scorer(a, b)
    def both(output: str) -> dict[str, float]:
        fake_call(2)
        return {"a": 1.0, "b": 0.0}

    run = eb.run(frame(1), task=lambda q: q, scorers=[both], store=None, progress=False)
    assert set(run.usage()["source"]) == {"a,b"}


def test_scorer_timeout_path_keeps_the_source() -> None:
    @eb.scorer("slowish")
    def slowish(output: str) -> float:
        fake_call(4)
        return 1.0

    run = eb.run(
        frame(2), task=lambda q: q, scorers=[slowish], store=None, progress=False,
        scorer_timeout=30,
    )  # fmt: skip
    assert set(run.usage()["source"]) == {"slowish"}
    assert run.usage()["input_tokens"].tolist() == [4.0, 4.0]


def test_prices_turn_tokens_into_cost_and_unpriced_models_warn_once() -> None:
    def task(q: str, ctx: Any) -> str:
        ctx.record_usage(input_tokens=1_000_000, output_tokens=500_000, model="m")
        ctx.record_usage(input_tokens=10, output_tokens=10, model="other")
        return q

    with pytest.warns(RuntimeWarning, match=r"no price for 'other' \(2 calls\)") as caught:
        run = eb.run(frame(2), task=task, store=None, progress=False, prices={"m": (1.0, 2.0)})
    assert len([w for w in caught if "no price" in str(w.message)]) == 1
    assert run.cases["cost"].tolist() == [2.0, 2.0]
    assert run.usage_summary()["cost"].iloc[0] == 4.0
    assert run.options["prices"] == {"m": [1.0, 2.0]}


def test_a_priced_call_without_tokens_is_of_unknown_cost_not_of_an_unpriced_model() -> None:
    # what a call retried after a 429 records: the model, no tokens
    def task(q: str, ctx: Any) -> str:
        ctx.record_usage(model="judge-model")
        ctx.record_usage(input_tokens=1_000_000, output_tokens=0, model="judge-model")
        return q

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "no price for 'judge-model'"
        run = eb.run(
            frame(2), task=task, store=None, progress=False, prices={"judge-model": (1.0, 2.0)}
        )
    assert run.cases["cost"].tolist() == [1.0, 1.0]  # the known part; the other call is unknown
    assert run.usage()["calls"].tolist() == [2, 2]


def test_rescore_keeps_the_task_usage_and_records_new_scoring(tmp_path: Path) -> None:
    def task(q: str, ctx: Any) -> str:
        ctx.record_usage(input_tokens=7, cost=0.5)
        return q

    @eb.scorer("old")
    def old(output: str) -> float:
        fake_call(1)
        return 1.0

    @eb.scorer("new")
    def new(output: str) -> float:
        fake_call(5)
        return 1.0

    run = eb.run(frame(2), task=task, scorers=[old], store=tmp_path, progress=False)
    again = run.rescore(scorers=[new], progress=False)
    got = sources(again)
    # the task's usage produced the outputs scored here; the kept score's calls stay with it
    assert got[("0", 1, "task")] == (1, 7.0)
    assert got[("0", 1, "old")] == (1, 1.0)
    assert got[("0", 1, "new")] == (1, 5.0)
    assert again.cases["cost"].tolist() == [0.5, 0.5]
    loaded = eb.load_run(again.path)
    pd.testing.assert_frame_equal(loaded.usage(), again.usage())


def test_usage_survives_load_from_files_and_from_the_log(tmp_path: Path) -> None:
    def task(q: str, ctx: Any) -> str:
        ctx.record_usage({"input_tokens": 11, "output_tokens": 2}, cost=0.01)
        ctx.record_usage(output_tokens=3)
        return q

    run = eb.run(frame(3), task=task, store=tmp_path, progress=False, epochs=2)
    from_files = eb.load_run(run.path)
    pd.testing.assert_frame_equal(from_files.usage(), run.usage())
    pd.testing.assert_frame_equal(from_files.cases, run.cases)
    for name in ("summary.json", "cases.parquet", "scores.parquet"):
        (run.path / name).unlink()
    from_log = eb.load_run(run.path)
    pd.testing.assert_frame_equal(from_log.usage(), run.usage())
    pd.testing.assert_frame_equal(from_log.usage_summary(), run.usage_summary())
    assert run.usage()["output_tokens"].tolist() == [5.0] * 6
