"""run.rescore(): stored outputs scored again, the task never called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import (
    assert_same,
    correct,
    run_t,
)

# -- rescore --------------------------------------------------------------------------------


def test_rescore_scores_stored_outputs_without_the_task(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    loaded = eb.load_run(run.path)  # type: ignore[arg-type]

    @eb.scorer(correct)
    def lenient(output: Any, expected: str) -> float:
        return float(str(output).lower() == expected.lower())

    again = loaded.rescore(scorers=[lenient], progress=False)
    assert again.path is not None and again.path.parent == tmp_path.resolve()
    assert again.id != run.id and again.name == "t-rescored"
    assert again.options["rescored_from"] == run.id
    by = again.scores.set_index(["case_id", "score"], drop=False)
    old = run.scores.set_index(["case_id", "score"], drop=False)
    # case 1 ("B" vs "x") stays wrong, case 5 ("BOOM"): the new scorer does not raise
    assert by.loc[("5", "correct"), "status"] == "scored"
    assert old.loc[("5", "correct"), "status"] == "error"
    # judged records are kept as they were, derived ones derived again
    assert_frame_equal(
        again.scores[again.scores["score"] == "judged"].reset_index(drop=True).astype(object),
        run.scores[run.scores["score"] == "judged"].reset_index(drop=True).astype(object),
    )
    assert by.loc[("5", "pass"), "status"] == "scored"
    # outcomes and outputs are the source's; errored / failed cases stay so
    assert_frame_equal(again.cases, run.cases)
    assert_same(again, eb.load_run(again.path))


def test_rescore_in_memory_stays_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = run_t(None)
    calls: list[Any] = []

    @eb.scorer
    def seen(output: Any) -> float:
        calls.append(output)
        return 1.0

    again = run.rescore(scorers=[seen], progress=False)
    assert again.path is None and list(tmp_path.iterdir()) == []
    # scorers are called on passed cases only (a, b, none, boom, bad, c)
    assert len(calls) == 6
    assert [d.name for d in again.definitions] == ["seen", "correct", "judged", "pass"]
