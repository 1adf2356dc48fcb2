"""The store against faults: a concurrent resume, damaged or hostile files (file-formats.md)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from evalbook._runner import _resume
from evalbook._store._log import being_written

DATA = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")


def _cut(folder: Path, keep_cases: int) -> None:
    """Leave the log as a kill would: the head and the first `keep_cases` cases, no end."""
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (folder / name).unlink()
    lines = (folder / "events.jsonl").read_text().splitlines(keepends=True)
    kept: list[str] = []
    ended = 0
    for line in lines:
        if '"run.ended"' in line:
            break
        if ended >= keep_cases and '"case.' in line:
            continue
        kept.append(line)
        ended += '"case.ended"' in line
    (folder / "events.jsonl").write_text("".join(kept))


def _interrupted(tmp_path: Path, keep_cases: int = 1) -> Path:
    run = eb.run(DATA, task=lambda question: question, name="cut", store=tmp_path, progress=False)
    assert run.path is not None
    _cut(run.path, keep_cases)
    return run.path


def test_a_resume_holds_the_log_lock_while_it_reads_the_stored_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _interrupted(tmp_path)
    seen: list[bool] = []
    read = _resume.read_run

    def spy(path: Any) -> Any:
        seen.append(being_written(folder / "events.jsonl"))
        return read(path)

    monkeypatch.setattr(_resume, "read_run", spy)
    eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    assert seen == [True]  # another process cannot read the same state and run it too


def test_a_resume_while_another_holds_the_log_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _interrupted(tmp_path)
    reads: list[Any] = []
    monkeypatch.setattr(_resume, "read_run", lambda path: reads.append(path))
    from evalbook._store._log import LogFile

    held = LogFile(folder / "events.jsonl", append=True)
    try:
        with pytest.raises(eb.ConfigurationError, match="another run"):
            eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    finally:
        held.close()
    assert reads == []


def test_a_failed_resume_releases_its_lock_so_a_second_try_runs(tmp_path: Path) -> None:
    folder = _interrupted(tmp_path)

    @eb.scorer
    def other(output: str) -> float:
        return 1.0

    with pytest.raises(eb.ConfigurationError, match="same scores"):
        eb.run(DATA, task=lambda question: question, scorers=[other], resume=folder, progress=False)
    assert not being_written(folder / "events.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    assert done.cases["output"].tolist() == ["x", "y", "z"]
