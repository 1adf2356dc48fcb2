"""The failure origin in the run store (docs/file-formats.md, "Versions"): schema_version 4
writes each failed sample's `origin` on its `case.ended` line and each error record's on its
`score.recorded` line, and an `origin` column in cases.parquet and scores.parquet.

Older runs load with what can be known: a sample's origin is NA (a version 3 log cannot say
whether the task or a provider failed), an error record's is read off its code (a scorer's
error is the grader's; a record that errored because its case did is NA, as its case)."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import as_v3, drop_final_files

FIXTURES = Path(__file__).parent / "fixtures"
DATA = pd.DataFrame({"x": ["ok", "env", "bug", "bad-score", "ok2"]})


def task(x: str) -> str:
    if x == "env":
        raise eb.EnvironmentFailure("the sandbox did not start")
    if x == "bug":
        raise KeyError("a bug in the task")
    return x


def score(output: str) -> float:
    if output == "bad-score":
        raise ValueError("the scorer broke")
    return 1.0


def run_mixed(store: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the infrastructure warning
        return eb.run(DATA, task=task, scorers=[score], store=store, progress=False, concurrency=1)


def _loaded(folder: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return eb.load_run(folder)


def test_origins_are_written_and_read_back_from_files_and_from_the_log(tmp_path: Path) -> None:
    run = run_mixed(tmp_path / "runs")
    assert run.path is not None
    assert run.cases["origin"].tolist()[1:3] == ["environment", "task"]
    assert run.scores["origin"].tolist()[1:4] == ["environment", "task", "grader"]
    events = [json.loads(line) for line in (run.path / "events.jsonl").read_text().splitlines()]
    assert {e["schema_version"] for e in events} == {4}
    ended = {e["case_id"]: e.get("origin") for e in events if e["event"] == "case.ended"}
    assert ended == {"0": None, "1": "environment", "2": "task", "3": None, "4": None}
    assert_frame_equal(_loaded(run.path).cases, run.cases)
    assert_frame_equal(_loaded(run.path).scores, run.scores)
    drop_final_files(run.path)
    from_log = _loaded(run.path)
    assert_frame_equal(from_log.cases, run.cases)
    assert_frame_equal(from_log.scores, run.scores)


def _as_v3_folder(run: eb.Run, tmp: Path) -> Path:
    """The run's folder as a version 3 writer would have left it after a crash."""
    assert run.path is not None
    folder = tmp / "v3"
    folder.mkdir()
    text = (run.path / "events.jsonl").read_text(encoding="ascii")
    (folder / "events.jsonl").write_text(as_v3(text), encoding="ascii")
    shutil.copy(run.path / "data.parquet", folder / "data.parquet")
    return folder


def test_a_version_3_log_loads_with_the_origins_it_can_know(tmp_path: Path) -> None:
    run = run_mixed(tmp_path / "runs")
    old = _loaded(_as_v3_folder(run, tmp_path))
    assert old.cases["origin"].isna().all()  # task or provider? a version 3 log cannot say
    origins: list[Any] = old.scores["origin"].tolist()
    assert pd.isna(origins[1]) and pd.isna(origins[2])  # case_errored: as its case
    assert origins[3] == "grader"  # scorer_raised: the scorer's, whatever the version
    # everything else is as it was
    assert_frame_equal(old.cases.drop(columns="origin"), run.cases.drop(columns="origin"))
    assert "failed outside the model" not in old.headline.text


def test_resuming_a_version_3_log_goes_on_in_version_4(tmp_path: Path) -> None:
    run = run_mixed(tmp_path / "runs")
    folder = _as_v3_folder(run, tmp_path)
    log = folder / "events.jsonl"
    lines = log.read_text(encoding="ascii").splitlines(keepends=True)
    ended = [i for i, line in enumerate(lines) if '"case.ended"' in line]
    log.write_text("".join(lines[: ended[2] + 1]), encoding="ascii")  # three cases logged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        resumed = eb.run(DATA, task=task, scorers=[score], resume=folder, progress=False)
    versions = [json.loads(line)["schema_version"] for line in log.read_text().splitlines()]
    assert versions[: ended[2] + 1] == [3] * (ended[2] + 1) and set(versions[ended[2] + 1 :]) == {4}
    assert resumed.cases["origin"].iloc[3:].isna().all()  # they passed
    assert resumed.scores["origin"].tolist()[3] == "grader"  # run by this evalbook
    drop_final_files(folder)
    again = _loaded(folder)  # a version 3 log with version 4 lines after it reads whole
    assert_frame_equal(again.cases, resumed.cases)
    assert_frame_equal(again.scores, resumed.scores)


def test_version_2_files_load_with_no_origin(tmp_path: Path) -> None:
    folder = tmp_path / "v2-files"
    shutil.copytree(FIXTURES / "v2-files", folder)
    old = _loaded(folder)
    assert "origin" in old.cases.columns and old.cases["origin"].isna().all()
    errors = old.scores["status"] == "error"
    assert old.scores.loc[~errors, "origin"].isna().all()
    assert list(old.cases["origin"].cat.categories) == [
        "task",
        "provider",
        "environment",
        "grader",
        "harness",
    ]


def test_a_record_the_log_lost_is_the_harnesss(tmp_path: Path) -> None:
    run = run_mixed(tmp_path / "runs")
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_text(encoding="ascii").splitlines(keepends=True)
    (lost,) = [i for i, line in enumerate(lines) if '"score.recorded","case_id":"4"' in line]
    log.write_text("".join(lines[:lost] + lines[lost + 1 :]), encoding="ascii")
    drop_final_files(run.path)
    loaded = _loaded(run.path)
    row = loaded.scores.iloc[4]
    assert (row.reason, row.origin) == ("record_missing", "harness")
    assert pd.isna(loaded.cases["origin"].iloc[4])  # the sample itself passed
