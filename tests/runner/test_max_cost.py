"""`max_cost=`: no sample starts once the recorded cost reaches the budget (docs/cost.md).

Every sample records a known cost (the task's, and a judge's through the sample's meter),
so the test knows after which sample the budget is reached. It counts the samples the task
started, checks the one warning (the budget, how many did not start), the run's status in
`eb.runs`, and resuming with the same budget (nothing new starts) or a higher one (it
finishes). With `concurrency=8`, at most the samples already in flight run past the budget.
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


def _workload(
    started: list[tuple[str, int]], task_cost: float, judge_cost: float, pause: float = 0.0
) -> tuple[Any, Any]:
    async def task(question: str, case_id: str, epoch: int, ctx: Any) -> str:
        started.append((case_id, epoch))
        await asyncio.sleep(pause)  # with concurrency > 1, samples overlap
        ctx.record_usage(input_tokens=10, cost=task_cost)
        return question

    client = metered_client()

    @eb.scorer
    def judge(output: str) -> float:
        # one call of 1 prompt token, priced at judge_cost (see `_run`'s prices), recorded
        # under "judge": the budget counts it too
        call_model(client, 1, model="judge-model")
        return 1.0

    return task, judge


def _run(
    tmp_path: Path, n: int, started: list[tuple[str, int]], **options: Any
) -> tuple[eb.Run, list[str]]:
    task_cost = options.pop("task_cost", 0.25)
    judge_cost = options.pop("judge_cost", 0.0)
    pause = options.pop("pause", 0.0)
    task, judge = _workload(started, task_cost, judge_cost, pause)
    data = pd.DataFrame({"id": [f"c{i:02d}" for i in range(n)], "question": ["q"] * n})
    prices = {"judge-model": (judge_cost * 1e6, 0.0)}  # per million tokens: 1 token, judge_cost
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.run(
            data, task=task, scorers=[judge], store=tmp_path, name="budget", progress=False,
            prices=prices, **options,
        )  # fmt: skip
    return run, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


def _status(tmp_path: Path) -> str:
    table = eb.runs(tmp_path)
    assert len(table) == 1
    return str(table["status"].iloc[0])


def _budget_warnings(messages: list[str]) -> list[str]:
    return [m for m in messages if "reached its budget" in m]


@pytest.mark.parametrize(
    ("task_cost", "judge_cost", "max_cost", "reached_after"),
    [
        (0.25, 0.0, 1.0, 4),  # the 4th sample's cost reaches the budget exactly
        (0.3, 0.0, 1.0, 4),  # 0.9 < 1.0 after 3 samples, 1.2 after 4
        (0.125, 0.125, 1.0, 4),  # the judge's cost counts as much as the task's
        (0.25, 0.0, 0.0, 0),  # a budget of 0: nothing starts
    ],
)
def test_stops_right_after_the_sample_that_reaches_the_budget(
    tmp_path: Path, task_cost: float, judge_cost: float, max_cost: float, reached_after: int
) -> None:
    started: list[tuple[str, int]] = []
    run, messages = _run(
        tmp_path, 10, started, concurrency=1, max_cost=max_cost,
        task_cost=task_cost, judge_cost=judge_cost,
    )  # fmt: skip
    assert len(started) == reached_after
    assert run.cases["outcome"].notna().sum() == reached_after
    assert run.cases["outcome"].isna().sum() == 10 - reached_after
    assert _status(tmp_path) == "incomplete"
    (budget,) = _budget_warnings(messages)
    assert f"max_cost=${max_cost:g}" in budget
    assert f"{10 - reached_after} sample(s) did not start" in budget
    cost = run.usage_summary()["cost"].iloc[0]
    assert cost == pytest.approx(reached_after * (task_cost + judge_cost)) or (
        reached_after == 0 and math.isnan(cost)
    )


def test_resume_with_the_same_budget_starts_nothing_then_a_higher_one_finishes(
    tmp_path: Path,
) -> None:
    started: list[tuple[str, int]] = []
    first, _ = _run(tmp_path, 10, started, concurrency=1, max_cost=1.0)
    assert len(started) == 4
    again, messages = _run(tmp_path, 10, started, concurrency=1, max_cost=1.0, resume=first)
    assert len(started) == 4, "a resume under the same, reached budget started samples"
    (budget,) = _budget_warnings(messages)
    assert "6 sample(s) did not start" in budget
    assert again.cases["outcome"].notna().sum() == 4
    assert _status(tmp_path) == "incomplete"
    more, _ = _run(tmp_path, 10, started, concurrency=1, max_cost=2.0, resume=first)
    assert len(started) == 8  # the kept $1 counts: $1 more is 4 samples
    assert more.cases["outcome"].notna().sum() == 8
    done, messages = _run(tmp_path, 10, started, concurrency=1, max_cost=100.0, resume=first)
    assert len(started) == 10 and len(set(started)) == 10  # no sample ran twice
    assert not _budget_warnings(messages)
    assert _status(tmp_path) == "complete"
    assert done.usage_summary()["cost"].iloc[0] == 2.5
    assert done.cases["outcome"].notna().all()


def test_epochs_count_as_samples(tmp_path: Path) -> None:
    started: list[tuple[str, int]] = []
    run, messages = _run(tmp_path, 3, started, concurrency=1, max_cost=1.0, epochs=3)
    assert len(started) == 4  # 9 samples, the budget reached by the 4th
    assert len(set(started)) == 4
    (budget,) = _budget_warnings(messages)
    assert "5 sample(s) did not start" in budget
    assert run.cases["outcome"].notna().sum() == 4
    done, _ = _run(tmp_path, 3, started, concurrency=1, max_cost=10.0, epochs=3, resume=run)
    assert sorted(started) == sorted({(f"c{i:02d}", e) for i in range(3) for e in (1, 2, 3)})
    assert done.usage_summary()["cost"].iloc[0] == 9 * 0.25


def test_concurrency_runs_at_most_the_samples_in_flight_past_the_budget(tmp_path: Path) -> None:
    started: list[tuple[str, int]] = []
    concurrency, reached_after = 8, 4
    run, messages = _run(tmp_path, 40, started, concurrency=concurrency, max_cost=1.0, pause=0.01)
    # once the budget is reached, only the samples already started may still finish
    assert reached_after <= len(started) <= reached_after + concurrency - 1, len(started)
    assert run.cases["outcome"].notna().sum() == len(started)
    (budget,) = _budget_warnings(messages)
    assert f"{40 - len(started)} sample(s) did not start" in budget
    print(f"max_cost with concurrency {concurrency}: {len(started)} samples started of 40")
