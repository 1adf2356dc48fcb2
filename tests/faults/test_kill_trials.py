"""kill -9 at random moments, then resume: no case lost, none run again once its end is logged.

The counted, randomised form of tests/store/test_resume_crash.py (docs/file-formats.md: a
case is final once its `case.ended` line is logged; resume runs only the others). Each trial
runs a stored run of 60 cases in a child process (async or sync task with small random
sleeps, concurrency 1..8, two scores, erroring, failing and flaky cases, attempts 1 or 2),
SIGKILLs it at a moment drawn uniformly over the run's expected duration (start-up and the
final file writes included), resumes it in this process and checks the result. The long
form is `python tools/faults_kill.py --trials 200 --seed 1`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _fault_procs import IDS, Workload, kill_trials, run_workload

import evalbook as eb

TRIALS = 20
SEED = 17
FIGURES = ["trials", "lost", "twice_run", "duplicate_ends", "different", "leftovers"]
FIGURES += ["no_folder", "startup", "startup_refused", "startup_other", "mid_run"]
FIGURES += ["after_end", "exited"]


def test_kill_9_at_random_moments_then_resume_loses_nothing_and_runs_nothing_twice(
    tmp_path: Path, record_property: Callable[[str, Any], None]
) -> None:
    tally = kill_trials(tmp_path, TRIALS, SEED)
    print(tally.line())
    for name in FIGURES:
        record_property(name, getattr(tally, name))
    assert tally.problems == []
    assert tally.trials == TRIALS
    assert (tally.lost, tally.twice_run, tally.duplicate_ends, tally.different) == (0, 0, 0, 0)
    assert tally.leftovers == 0  # a resume clears what a kill in the final writes left
    # a folder without a loadable run is refused before anything runs, never guessed at
    # (an empty log is refused with a plain ValueError: the strict xfail below)
    assert tally.startup_refused + tally.startup_other == tally.startup
    # most kills land while cases run, else the trials would test little
    assert tally.mid_run >= TRIALS // 4


def _killed_in_start_up(tmp_path: Path, log: str | None) -> tuple[Workload, Path]:
    """A folder as a kill during eb.run's start-up leaves it: data.parquet, maybe an empty log.

    The run writes data.parquet, then creates events.jsonl, then writes its run.started line
    (src/evalbook/_store/_sink.py, open_new); the random trials rarely land in these windows,
    so they are built here from a whole run.
    """
    w = Workload(seed=1, is_async=False, concurrency=2, attempts=1, calls=str(tmp_path / "c"))
    folder = run_workload(w, store=tmp_path / "store", name="k").path
    assert folder is not None
    for path in folder.iterdir():
        if path.name != "data.parquet":
            path.unlink()
    if log is not None:
        (folder / "events.jsonl").write_text(log)
    return w, folder


def _resume_refused(w: Workload, folder: Path, tmp_path: Path) -> eb.ConfigurationError:
    calls = tmp_path / "after.txt"
    with pytest.raises(eb.ConfigurationError) as info:
        run_workload(Workload(**{**w.__dict__, "calls": str(calls)}), resume=folder)
    assert not calls.exists()  # refused before any case ran
    assert str(folder) in str(info.value)
    return info.value


def test_a_resume_of_a_folder_killed_before_its_log_existed_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    w, folder = _killed_in_start_up(tmp_path, log=None)
    error = _resume_refused(w, folder, tmp_path)
    assert "no events.jsonl" in str(error)
    assert eb.runs(tmp_path / "store").empty  # not listed as a run either


@pytest.mark.xfail(
    strict=True,
    raises=ValueError,
    reason="bug: resume= of a folder whose events.jsonl is empty (a kill between the log's "
    "creation and its run.started line in _store/_sink.open_new) raises NotARunLog, a plain "
    "ValueError, out of _runner/_resume._read, which turns only FileNotFoundError into a "
    "ConfigurationError; every other unresumable folder is a ConfigurationError",
)
def test_a_resume_of_a_folder_killed_before_run_started_was_written_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    w, folder = _killed_in_start_up(tmp_path, log="")
    error = _resume_refused(w, folder, tmp_path)
    assert "run.started" in str(error)


def test_the_workload_has_errors_failures_retries_and_wrong_answers(tmp_path: Path) -> None:
    # the trials are only as good as their workload: every outcome, retries, both values
    w = Workload(seed=5, is_async=True, concurrency=4, attempts=2, calls=str(tmp_path / "c"))
    run = run_workload(w, store=None)
    cases = run.cases.set_index("case_id")
    assert set(cases["outcome"]) == {"passed", "failed", "errored"}
    flaky = [c for c in IDS if w.kind(c) == "flaky"]
    assert flaky and set(cases.loc[flaky, "outcome"]) == {"passed"}
    assert set(cases.loc[flaky, "attempts"]) == {2}
    assert set(run.scores["value"].dropna()) == {0.0, 0.5, 0.75, 1.0}
