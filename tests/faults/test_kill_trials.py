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

pytestmark = pytest.mark.slow  # kill -9 trials in child processes

TRIALS = 20
SEED = 17
FIGURES = ["trials", "lost", "twice_run", "duplicate_ends", "different", "leftovers"]
FIGURES += ["no_folder", "startup", "startup_refused", "mid_run"]
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
    # a folder without a loadable run (killed before its log appeared) is refused before
    # anything runs, never guessed at (tests/store/test_startup_and_tmp.py builds each case)
    assert tally.startup_refused == tally.startup
    # the kills land while cases run or the final files are written (long form, seed 1: 123
    # and 61 of 200; 14 before the folder or after the exit), else the trials test little;
    # loose bounds, as the machine's load moves the kill times
    assert tally.mid_run >= 3
    assert tally.no_folder + tally.exited <= TRIALS // 2


def test_the_workload_has_errors_failures_retries_and_wrong_answers(tmp_path: Path) -> None:
    # the trials are only as good as their workload: errors, failures, retries, four values
    w = Workload(seed=5, is_async=True, concurrency=4, attempts=2, calls=str(tmp_path / "c"))
    run = run_workload(w, store=None)
    cases = run.cases.set_index("case_id")
    assert set(cases["outcome"]) == {"passed", "failed", "errored"}
    flaky = [c for c in IDS if w.kind(c) == "flaky"]
    assert flaky and set(cases.loc[flaky, "outcome"]) == {"passed"}
    assert set(cases.loc[flaky, "attempts"]) == {2}
    assert set(run.scores["value"].dropna()) == {0.0, 0.5, 0.75, 1.0}
