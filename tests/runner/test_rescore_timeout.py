"""`run.rescore(..., scorer_timeout=)`: rescored scorers and judges have eb.run's deadline."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from evalbook import ConfigurationError

DF = pd.DataFrame({"x": ["a", "b"]})


def _first() -> eb.Run:
    return eb.run(
        DF, task=lambda x: x.upper(), scorers=[lambda output: 0.0], store=None, progress=False
    )


def test_a_sleeping_sync_scorer_is_scorer_timed_out_in_a_rescore() -> None:
    release = threading.Event()

    @eb.scorer
    def slow(output: str) -> float:
        release.wait()  # never returns in time; released at the end of the test
        return 1.0

    @eb.scorer
    def quick(output: str) -> float:
        return 1.0

    first = _first()
    try:
        # quick's thread hop must end inside the deadline: a generous one, for a loaded machine
        again = first.rescore(scorers=[slow, quick], scorer_timeout=5, progress=False)
    finally:
        release.set()
    scores = again.scores.set_index(["case_id", "score"])
    for case in ("0", "1"):
        row = scores.loc[(case, "slow")]
        assert row["status"] == "error" and row["reason"] == "scorer_timed_out"
        assert "scorer_timeout=5s" in row["message"]
        assert scores.loc[(case, "quick")]["value"] == 1.0
        assert scores.loc[(case, "lambda")]["value"] == 0.0  # kept from the source
    assert again.options["scorer_timeout"] == 5
    assert again.cases["outcome"].tolist() == ["passed", "passed"]


def test_a_sleeping_async_judge_is_scorer_timed_out_in_a_rescore() -> None:
    verdict = eb.define_score("verdict")

    async def client(messages: object, tool: object) -> dict[str, object]:
        await asyncio.Event().wait()  # nobody ever sets it
        return {"score": 100, "justification": "late"}

    judge = eb.judge(verdict, "Rate {output}", client=client)
    again = _first().rescore(scorers=[judge], scorer_timeout=0.2, progress=False)
    rows = again.scores[again.scores["score"] == "verdict"]
    assert rows["reason"].tolist() == ["scorer_timed_out"] * 2


def test_without_scorer_timeout_a_slow_scorer_is_scored() -> None:
    @eb.scorer
    async def slowish(output: str) -> float:
        await asyncio.sleep(0.3)
        return 1.0

    again = _first().rescore(scorers=[slowish], progress=False)
    assert again.scores.set_index("score").loc["slowish", "value"].tolist() == [1.0, 1.0]
    assert "scorer_timeout" not in again.options


def test_a_stored_rescore_records_its_scorer_timeout(tmp_path: Path) -> None:
    first = eb.run(
        DF, task=lambda x: x, scorers=[lambda output: 0.0], store=tmp_path, progress=False
    )
    again = first.rescore(scorers=[lambda output: 1.0], scorer_timeout=5, progress=False)
    assert again.path is not None
    assert eb.load_run(again.path).options["scorer_timeout"] == 5


@pytest.mark.parametrize("bad", [0, -1, True, "1"])
def test_a_bad_scorer_timeout_is_refused_as_eb_run_refuses_it(bad: object) -> None:
    with pytest.raises(ConfigurationError, match="scorer_timeout must be a number of seconds"):
        _first().rescore(scorers=[lambda output: 1.0], scorer_timeout=bad, progress=False)  # type: ignore[arg-type]
