"""A real crash: a run SIGKILLs its own process; `resume=` finishes it (docs/file-formats.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb

N = 40
KILL_AT = 23
DATA = pd.DataFrame(
    {"id": [f"c{i:02d}" for i in range(N)], "question": [f"q{i}" for i in range(N)]}
)

# The same definitions in the crashing child and in this process.
SCORERS = textwrap.dedent(
    """
    import evalbook as eb

    @eb.scorer
    def upper(output, question):
        return 1.0 if output == question.upper() else 0.0

    @eb.scorer
    def length(output):
        return eb.Score(min(1.0, len(output) / 4), rationale=f"{len(output)} chars")
    """
)
namespace: dict[str, Any] = {}
exec(SCORERS, namespace)  # the test's own source text
SCORER_LIST = [namespace["upper"], namespace["length"]]

CHILD = SCORERS + textwrap.dedent(
    """
    import os, signal, sys
    import pandas as pd

    store, calls, kill_at, concurrency = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    n = int(sys.argv[5])
    data = pd.DataFrame({"id": [f"c{i:02d}" for i in range(n)],
                         "question": [f"q{i}" for i in range(n)]})

    def task(question, case_id):
        with open(calls, "a") as f:
            f.write(case_id + "\\n")
        if case_id == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return question.upper() if case_id != "c05" else question

    eb.run(data, task=task, scorers=[upper, length], name="crashy", store=store,
           concurrency=concurrency, progress=False)
    """
)


def _crash(tmp_path: Path, concurrency: int) -> tuple[Path, list[str]]:
    store = tmp_path / "store"
    calls = tmp_path / "calls-first.txt"
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    proc = subprocess.run(
        [
            sys.executable,
            str(script),
            str(store),
            str(calls),
            f"c{KILL_AT:02d}",
            str(concurrency),
            str(N),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    assert proc.returncode == -9, proc.stderr  # killed, not a clean exit
    (folder,) = list(store.iterdir())
    return folder, calls.read_text(encoding="utf-8").split()


@pytest.mark.parametrize("concurrency", [1, 4])
def test_sigkill_then_resume_runs_every_case_exactly_once(tmp_path: Path, concurrency: int) -> None:
    folder, first_calls = _crash(tmp_path, concurrency)
    assert not (folder / "summary.json").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # maybe a truncated last line
        crashed = eb.load_run(folder)
        listed = eb.runs(folder.parent)
    assert listed["status"].tolist() == ["incomplete"]
    done = crashed.cases.loc[crashed.cases["outcome"].notna(), "case_id"].tolist()
    assert 0 < len(done) < N
    assert f"c{KILL_AT:02d}" not in done  # it was in flight
    if concurrency == 1:
        assert done == [f"c{i:02d}" for i in range(KILL_AT)]

    second_calls: list[str] = []

    def task(question: str, case_id: str) -> str:
        second_calls.append(case_id)
        return question.upper() if case_id != "c05" else question

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = eb.run(
            DATA, task=task, scorers=SCORER_LIST, resume=folder, concurrency=3, progress=False
        )

    # only cases without a final outcome ran again; completed ones were not paid for twice
    assert sorted(second_calls) == sorted(set(DATA["id"]) - set(done))
    assert not set(second_calls) & set(done)
    assert set(first_calls) >= set(done)
    # one complete run, every case exactly once, in input order
    assert resumed.path == folder and resumed.id == crashed.id and resumed.name == "crashy"
    assert resumed.cases["case_id"].tolist() == DATA["id"].tolist()
    assert resumed.cases["outcome"].notna().all()
    assert resumed.headline.completion == 1.0
    # the kept cases' outputs and records are the ones logged before the crash
    kept = resumed.cases["case_id"].isin(done)
    assert_frame_equal(
        resumed.cases[kept].reset_index(drop=True),
        crashed.cases[crashed.cases["case_id"].isin(done)].reset_index(drop=True),
    )
    keep_scores = resumed.scores["case_id"].isin(done)
    assert_frame_equal(
        resumed.scores[keep_scores].reset_index(drop=True),
        crashed.scores[crashed.scores["case_id"].isin(done)].reset_index(drop=True),
    )
    # the log has exactly one case.ended per case, and the folder loads to the same run
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    ended = [e["case_id"] for e in events if e["event"] == "case.ended"]
    assert sorted(ended) == sorted(DATA["id"])
    assert [e["event"] for e in events].count("run.resumed") == 1
    assert events[-1]["event"] == "run.ended" and events[-1]["status"] == "complete"
    for loaded in (eb.load_run(folder), _from_log(folder)):
        assert_frame_equal(loaded.cases, resumed.cases)
        assert_frame_equal(loaded.scores, resumed.scores)
        assert loaded.headline == resumed.headline
    assert eb.runs(folder.parent)["status"].tolist() == ["complete"]


def _from_log(folder: Path) -> eb.Run:
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (folder / name).unlink()
    return eb.load_run(folder)


# -- resume without a crash -----------------------------------------------------------------


def _partial(tmp_path: Path, keep: int) -> tuple[eb.Run, Path]:
    """A stored run whose log is cut after `keep` finished cases (as a crash would leave it)."""
    run = eb.run(
        DATA,
        task=lambda question: question.upper(),
        scorers=SCORER_LIST,
        store=tmp_path,
        concurrency=1,
        progress=False,
    )
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    ends = [i for i, line in enumerate(lines) if '"case.ended"' in line]
    log.write_text("".join(lines[: ends[keep - 1] + 1]) + lines[ends[keep]][:30], encoding="utf-8")
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    return run, run.path


def test_resume_takes_a_run_object(tmp_path: Path) -> None:
    full, folder = _partial(tmp_path, keep=10)
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(RuntimeWarning, match="truncated"),
    ):
        partial = eb.load_run(folder)
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question.upper()

    with pytest.warns(RuntimeWarning, match="truncated"):  # resume reads the folder again
        resumed = eb.run(DATA, task=task, scorers=SCORER_LIST, resume=partial, progress=False)
    assert len(calls) == N - 10
    assert_frame_equal(resumed.scores, full.scores)
    assert resumed.cases["output"].tolist() == full.cases["output"].tolist()


def test_resume_an_in_memory_run_into_a_new_folder(tmp_path: Path) -> None:
    _, folder = _partial(tmp_path / "a", keep=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partial = eb.load_run(folder)
    partial.path = None  # as if it had never been stored
    resumed = eb.run(
        DATA,
        task=lambda question: question.upper(),
        scorers=SCORER_LIST,
        resume=partial,
        store=tmp_path / "b",
        progress=False,
    )
    assert resumed.path is not None and resumed.path.parent == (tmp_path / "b").resolve()
    loaded = eb.load_run(resumed.path)
    assert_frame_equal(loaded.scores, resumed.scores)
    assert loaded.cases["outcome"].notna().all()


def test_resume_with_reordered_data_keeps_the_new_order(tmp_path: Path) -> None:
    _, folder = _partial(tmp_path, keep=7)
    shuffled = DATA.iloc[::-1].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = eb.run(
            shuffled,
            task=lambda question: question.upper(),
            scorers=SCORER_LIST,
            resume=folder,
            progress=False,
        )
    assert resumed.cases["case_id"].tolist() == shuffled["id"].tolist()
    _from_log(folder)  # the log says the new order too
    assert eb.load_run(folder).cases["case_id"].tolist() == shuffled["id"].tolist()


def test_resume_of_a_complete_run_runs_nothing(tmp_path: Path) -> None:
    run = eb.run(
        DATA,
        task=lambda question: question.upper(),
        scorers=SCORER_LIST,
        store=tmp_path,
        progress=False,
    )
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    again = eb.run(DATA, task=task, scorers=SCORER_LIST, resume=run, progress=False)
    assert calls == []
    assert_frame_equal(again.scores, run.scores)


def test_resume_mismatches_are_configuration_errors(tmp_path: Path) -> None:
    _, folder = _partial(tmp_path, keep=3)
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(eb.ConfigurationError, match="same scores"):
            eb.run(DATA, task=task, scorers=SCORER_LIST[:1], resume=folder, progress=False)
        with pytest.raises(eb.ConfigurationError, match=r"same cases.*2 stored cases"):
            eb.run(DATA.iloc[2:], task=task, scorers=SCORER_LIST, resume=folder, progress=False)
    with pytest.raises(eb.ConfigurationError, match="no run folder"):
        eb.run(DATA, task=task, scorers=SCORER_LIST, resume=tmp_path / "nope", progress=False)
    with pytest.raises(eb.ConfigurationError, match="resume= takes"):
        eb.run(DATA, task=task, scorers=SCORER_LIST, resume=42, progress=False)
    assert calls == []
