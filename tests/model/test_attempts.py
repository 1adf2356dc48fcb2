"""`run.attempts()`: one row per attempt, in memory, on Dask, rescored, imported
(docs/concepts.md, "Attempts")."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _attempts_helpers import DATA, check_flaky, run_flaky
from _public import ATTEMPT_COLUMNS
from _runner_helpers import dask_client

# a real Inspect AI log: 5 samples x 2 epochs, "boom" errored (tests/interop/fixtures/inspect)
INSPECT_LOG = Path(__file__).resolve().parents[1] / "interop" / "fixtures" / "inspect" / "tiny.eval"


def test_a_flaky_task_shows_every_attempt_cell_by_cell() -> None:
    run = run_flaky()
    check_flaky(run.attempts(), run)
    assert len(run.attempts()) == run.cases["attempts"].sum() == 11


def test_rescore_keeps_every_attempt() -> None:
    run = run_flaky()
    again = run.rescore(scorers=[lambda output: 0.5], progress=False)
    pd.testing.assert_frame_equal(again.attempts(), run.attempts())


def test_a_sample_with_one_attempt_is_that_attempt() -> None:
    run = eb.run(DATA, task=lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    table = run.attempts()
    assert table["attempt"].tolist() == [1, 1, 1]
    assert table["started_at"].tolist() == run.cases["started_at"].tolist()
    assert table["duration_s"].tolist() == run.cases["duration_s"].tolist()
    assert table["outcome"].tolist() == run.cases["outcome"].tolist()


def test_outputs_from_a_column_have_no_attempts() -> None:
    data = pd.DataFrame({"answer": ["a", "b"]})
    run = eb.run(data, output_column="answer", scorers=[lambda output: 1.0], store=None)
    assert run.cases["attempts"].tolist() == [0, 0]
    table = run.attempts()
    assert len(table) == 0 and list(table.columns) == ATTEMPT_COLUMNS
    assert table["outcome"].dtype == run.cases["outcome"].dtype


# -- any pattern of failing attempts ------------------------------------------------------

# per attempt: "e" raises (errored, retried), "f" fails (final), "p" passes
patterns = st.lists(st.lists(st.sampled_from("efp"), min_size=1, max_size=4), max_size=6)


@settings(max_examples=40, deadline=None)
@given(plan=patterns, attempts=st.integers(1, 4), epochs=st.integers(1, 2))
def test_one_row_per_attempt_and_the_last_is_the_outcome(
    plan: list[list[str]], attempts: int, epochs: int
) -> None:
    data = pd.DataFrame({"k": range(len(plan))})
    calls: Counter[tuple[int, int]] = Counter()

    def task(k: int, epoch: int) -> str:
        calls[k, epoch] += 1
        steps = plan[k]
        step = steps[min(calls[k, epoch], len(steps)) - 1]
        if step == "e":
            raise RuntimeError(f"attempt {calls[k, epoch]}")
        assert step != "f", "wrong"
        return "ok"

    run = eb.run(
        data,
        task=task,
        scorers=[lambda output: 1.0],
        attempts=attempts,
        epochs=epochs,
        store=None,
        progress=False,
    )
    table = run.attempts()
    cases = run.cases
    assert len(table) == int(cases["attempts"].sum())
    if not len(cases):
        return
    last = table.groupby(["case_id", "epoch"], sort=False).tail(1)
    assert last["outcome"].tolist() == cases["outcome"].tolist()
    assert list(zip(last.case_id, last.epoch, strict=True)) == list(
        zip(cases.case_id, cases.epoch, strict=True)
    )
    # attempts of a sample in order, 1..n; every earlier one errored (only those are retried)
    n = cases["attempts"].to_numpy()
    assert table["attempt"].tolist() == [a for k in n for a in range(1, k + 1)]
    earlier = table[table.attempt < np.repeat(n, n)]
    assert (earlier["outcome"] == "errored").all()
    assert earlier["error_message"].tolist() == [
        f"attempt {a}" for a in earlier["attempt"].tolist()
    ]


# -- Dask ---------------------------------------------------------------------------------


def test_attempts_travel_back_from_dask() -> None:
    pytest.importorskip("distributed")
    with dask_client(1, processes=False) as client:
        run = run_flaky(executor=client)
    check_flaky(run.attempts(), run)


# -- imported runs ------------------------------------------------------------------------


def _imported(tmp_path: Path, retries: int) -> eb.Run:
    """tiny.eval as imported, its sample "boom" (epoch 1) retried `retries` times by Inspect
    before its last error: what a log of `inspect eval --retry-on-error` holds."""
    log_module = pytest.importorskip("inspect_ai.log", reason="the extra evalbook[inspect]")
    log = log_module.read_eval_log(str(INSPECT_LOG))
    assert log.samples is not None
    boom = next(s for s in log.samples if s.id == "boom" and s.epoch == 1)
    assert boom.error is not None
    boom.error_retries = [
        log_module.EvalRetryError(
            message=f"RuntimeError('retry {i}')",
            traceback=f"RuntimeError: retry {i}",
            traceback_ansi=f"RuntimeError: retry {i}",
        )
        for i in range(retries)
    ]
    path = tmp_path / "retried.json"
    log_module.write_eval_log(log, str(path), format="json")
    return eb.import_results(path, format="inspect")


def test_an_imported_run_has_one_row_per_sample(tmp_path: Path) -> None:
    run = _imported(tmp_path, 0)
    table = run.attempts()
    cases = run.cases
    assert list(table.columns) == ATTEMPT_COLUMNS and len(table) == len(cases) == 10
    assert table["case_id"].tolist() == cases["case_id"].tolist()
    assert table["attempt"].tolist() == [1] * 10
    assert table["outcome"].astype(str).tolist() == cases["outcome"].astype(str).tolist()
    assert table["error_message"].tolist() == cases["error_message"].tolist()
    assert table.loc[table.case_id == "a", "error_message"].tolist() == [None, None]
    assert "the solver broke on purpose" in table["error_message"][4]


def test_inspects_retries_are_rows_with_their_errors_and_unknown_times(tmp_path: Path) -> None:
    run = _imported(tmp_path, 2)
    assert run.cases.loc[run.cases.case_id == "boom", "attempts"].tolist() == [3, 1]
    table = run.attempts()
    b = table[(table.case_id == "boom") & (table.epoch == 1)]
    assert b["attempt"].tolist() == [1, 2, 3]
    assert b["outcome"].tolist() == ["errored"] * 3  # each retry is Inspect's error record
    assert b["error_message"].tolist() == ["retry 0", "retry 1", "the solver broke on purpose"]
    assert b["started_at"].iloc[:2].isna().all() and b["duration_s"].iloc[:2].isna().all()
    # the sample's own time is its last attempt's (Inspect times the attempt that ended it)
    boom = run.cases[(run.cases.case_id == "boom") & (run.cases.epoch == 1)].iloc[0]
    assert b["started_at"].iloc[2] == boom.started_at
    assert b["duration_s"].iloc[2] == boom.duration_s or math.isnan(boom.duration_s)
    assert len(table) == len(run.cases) + 2
