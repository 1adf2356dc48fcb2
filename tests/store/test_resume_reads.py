"""A resume reads `events.jsonl` once (issue 28): the lock, the stored state and the damage
check come from one pass over the log, not a replay for the state and another for appending.

The reads are counted where the operating system sees them (every open of the log that can
read it, through `os.open` or `open`), so the count holds whatever module does the reading.
"""

from __future__ import annotations

import io
import os
import traceback
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DATA = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")


def _interrupted(tmp_path: Path, *, final_files: bool) -> Path:
    """A stored run as a kill leaves it: the first case ended, no `run.ended`."""
    run = eb.run(DATA, task=lambda question: question, name="cut", store=tmp_path, progress=False)
    assert run.path is not None
    log = run.path / "events.jsonl"
    kept, ended = [], 0
    for line in log.read_text().splitlines(keepends=True):
        if '"run.ended"' in line:
            break
        if ended >= 1 and '"case.' in line:
            continue
        kept.append(line)
        ended += '"case.ended"' in line
    log.write_text("".join(kept))
    if not final_files:
        for name in ("cases.parquet", "scores.parquet", "summary.json"):
            (run.path / name).unlink()
    return run.path


def _count_reads(monkeypatch: pytest.MonkeyPatch, log: Path) -> list[str]:
    """Record (with its caller) every open of `log` that can read it."""
    reads: list[str] = []
    target = os.path.realpath(log)
    real_os_open, real_io_open = os.open, io.open

    def same(path: Any) -> bool:
        return isinstance(path, str | os.PathLike) and os.path.realpath(path) == target

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if same(path) and flags & (os.O_WRONLY | os.O_RDWR) != os.O_WRONLY:
            reads.append("".join(traceback.format_stack(limit=4)[:-1]))
        return real_os_open(path, flags, *args, **kwargs)

    def io_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if same(file) and ("r" in mode or "+" in mode):
            reads.append("".join(traceback.format_stack(limit=4)[:-1]))
        return real_io_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(io, "open", io_open)
    monkeypatch.setattr("builtins.open", io_open)
    return reads


@pytest.mark.parametrize("final_files", [False, True], ids=["log-only", "with-final-files"])
def test_a_resume_reads_the_log_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, final_files: bool
) -> None:
    folder = _interrupted(tmp_path, final_files=final_files)
    reads = _count_reads(monkeypatch, folder / "events.jsonl")
    done = eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    monkeypatch.undo()
    assert done.cases["outcome"].tolist() == ["passed"] * 3
    assert len(reads) == 1, "\n---\n".join(reads)
