"""A run stopped by its budget (`max_cost=`) stores final files with samples that never
started; loading or resuming it reads those files, not the log, with no warning but the
incomplete run's own (docs/cost.md, docs/file-formats.md)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.testing import assert_frame_equal

import evalbook as eb

DATA = pd.DataFrame({"id": [f"q{i}" for i in range(6)], "question": ["x"] * 6})
PRICES = {"m": (1.0, 0.0)}  # $1 per 1M input tokens: a call of 1M tokens costs $1


def paid(question: str, ctx: Any) -> str:
    ctx.record_usage(input_tokens=1_000_000, output_tokens=0, model="m")
    return question


def one(output: str) -> float:
    return 1.0


def _capped(store: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the budget's own warning, tested in tests/runner
        return eb.run(
            DATA,
            task=paid,
            scorers=[one],
            prices=PRICES,
            max_cost=2.0,
            concurrency=1,
            store=store,
            progress=False,
        )


def test_a_budget_stopped_run_loads_from_its_files_without_rejected_values(
    tmp_path: Path,
) -> None:
    run = _capped(tmp_path / "runs")
    assert run.path is not None
    assert run.cases["outcome"].isna().sum() == 4  # 2 ran ($2 reached), 4 never started
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = eb.load_run(run.path)
    messages = [str(w.message) for w in caught]
    print(f"warnings on load: {messages}")
    assert len(messages) == 1 and "is incomplete: 4 of 6 cases" in messages[0], messages
    assert_frame_equal(loaded.scores, run.scores)
    assert_frame_equal(loaded.cases, run.cases)
    assert (loaded.scores["reason"] == "invalid_score").sum() == 0


def test_resuming_a_budget_stopped_run_reads_its_files_quietly(tmp_path: Path) -> None:
    run = _capped(tmp_path / "runs")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        done = eb.run(DATA, task=paid, scorers=[one], prices=PRICES, resume=run, progress=False)
    assert [str(w.message) for w in caught] == []
    assert done.cases["outcome"].eq("passed").all()
    assert done.usage_summary()["cost"].iloc[0] == 6.0
