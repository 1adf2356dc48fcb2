"""A new run folder starts with its log; a kill during start-up leaves a run that loads, or
nothing listed as one (docs/file-formats.md)."""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

DATA = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")

# a run whose start-up is killed (SIGKILL: no cleanup at all) as it makes the first file named
# `sys.argv[2]` (every file of a run folder is written to a temporary file first, then renamed)
_KILLED_RUN = """
import os, signal, sys, tempfile
import pandas as pd
import evalbook as eb

real = tempfile.mkstemp

def mkstemp(*args, **kwargs):
    if kwargs.get("prefix", "").startswith("." + sys.argv[2] + "."):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)

tempfile.mkstemp = mkstemp
data = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")
eb.run(data, task=lambda question: question, scorers=[lambda output: 1.0], name="k",
       store=sys.argv[1], progress=False)
"""


def _killed_at(store: Path, file: str) -> Path | None:
    """Run `_KILLED_RUN` killed as it starts `file`; the run folder it left (None if none)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_RUN), str(store), file],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    folders = [p for p in store.iterdir() if p.is_dir()]
    assert len(folders) <= 1
    return folders[0] if folders else None


def test_the_log_is_the_first_file_of_a_new_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[list[str]] = []
    real = tempfile.mkstemp

    def spy(*args: Any, **kwargs: Any) -> Any:
        if str(kwargs.get("prefix", "")).startswith(".data.parquet."):
            seen.append(sorted(p.name for p in Path(kwargs["dir"]).iterdir()))
        return real(*args, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", spy)
    run = eb.run(DATA, task=lambda question: question, store=tmp_path, progress=False)
    assert seen == [["events.jsonl"]]  # when the data is written, the log is there already
    assert run.path is not None and (run.path / "data.parquet").exists()
    first = (run.path / "events.jsonl").read_text().splitlines()[0]
    assert '"event":"run.started"' in first and '"data_file":"data.parquet"' in first


def test_a_kill_after_the_log_before_the_data_leaves_a_run_that_loads(tmp_path: Path) -> None:
    folder = _killed_at(tmp_path, "data.parquet")
    assert folder is not None
    assert sorted(p.name for p in folder.iterdir()) == ["events.jsonl"]
    listed = eb.runs(tmp_path)
    assert listed["status"].tolist() == ["incomplete"] and listed["n_cases"].tolist() == [3]
    with pytest.warns(RuntimeWarning) as caught:
        run = eb.load_run(folder)
    messages = " ".join(str(w.message) for w in caught)
    assert "data.parquet" in messages and "missing" in messages  # inputs missing: said so
    assert "incomplete" in messages
    assert run.cases["case_id"].tolist() == ["a", "b", "c"]
    assert run.cases["outcome"].isna().all() and len(run.scores) == 3
    assert list(run.data.columns) == [] and run.data.index.tolist() == ["a", "b", "c"]
    # and it resumes: every case runs, the data is stored this time
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reading the stored state says the data is missing
        done = eb.run(
            DATA,
            task=lambda question: question,
            scorers=[lambda output: 1.0],
            resume=folder,
            progress=False,
        )
    assert done.cases["outcome"].eq("passed").all()
    assert (folder / "data.parquet").exists()
    pd.testing.assert_frame_equal(eb.load_run(folder).data, DATA)


_KILLED_LOG = """
import os, signal, sys
import pandas as pd
import evalbook as eb

real = os.replace

def replace(src, dst):
    if str(dst).endswith("events.jsonl"):  # the log's first lines are whole in a temporary file
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst)

os.replace = replace
data = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")
eb.run(data, task=lambda question: question, name="k", store=sys.argv[1], progress=False)
"""


def test_a_kill_as_the_log_appears_leaves_no_empty_log(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_LOG), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    (folder,) = list(tmp_path.iterdir())
    (name,) = [p.name for p in folder.iterdir()]
    assert name.startswith(".events.jsonl.") and name.endswith(".tmp")  # never events.jsonl
    assert eb.runs(tmp_path).empty
    with pytest.raises(FileNotFoundError, match="not a stored run"):
        eb.load_run(folder)


def test_a_kill_before_the_log_leaves_nothing_listed_as_a_run(tmp_path: Path) -> None:
    folder = _killed_at(tmp_path, "events.jsonl")  # the data is encoded: before any file
    assert folder is not None and list(folder.iterdir()) == []
    assert eb.runs(tmp_path).empty
    with pytest.raises(FileNotFoundError, match="not a stored run"):
        eb.load_run(folder)


# -- temporary files left by a kill during the final writes ---------------------------------

_KILLED_FINISH = """
import os, signal, sys
import pandas as pd
import evalbook as eb

real = os.replace

def replace(src, dst):
    if str(dst).endswith("cases.parquet"):  # cases.parquet is whole in its temporary file
        os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst)

os.replace = replace
data = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")
eb.run(data, task=lambda question: question, scorers=[lambda output: 1.0], name="k",
       store=sys.argv[1], progress=False)
"""

# names that are not temporary files of a run folder's own files: never removed
_NOT_OURS = ("notes.tmp", ".other.abcd1234.tmp", ".cases.parquet.tmp", ".summary.json.ABCDEFGH.tmp")


def _killed_in_final_writes(store: Path) -> Path:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_KILLED_FINISH), str(store)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    (folder,) = [p for p in store.iterdir() if p.is_dir()]
    for name in _NOT_OURS:
        (folder / name).write_text("someone else's")
    return folder


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# the temporary file of a run folder's own file: `.<file>.<8 of a-z 0-9 _>.tmp`
_TEMP = re.compile(
    r"\.(events\.jsonl|data\.parquet|cases\.parquet|scores\.parquet|summary\.json)"
    r"\.[a-z0-9_]{8}\.tmp"
)


def test_atomic_writes_name_their_temporary_files_recognisably(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    staged: list[tuple[str, str]] = []
    real = os.replace

    def spy(src: str | Path, dst: str | Path) -> None:
        staged.append((Path(src).name, Path(dst).name))
        real(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    run = eb.run(DATA, task=lambda question: question, store=tmp_path, progress=False)
    monkeypatch.undo()
    assert run.path is not None
    # the log's head, data, cases, scores, summary: each renamed from a temporary file of its own
    assert sorted(dst for _, dst in staged) == sorted(p.name for p in run.path.iterdir())
    assert len(staged) == 5
    assert all(_TEMP.fullmatch(src) and src[1:].startswith(dst + ".") for src, dst in staged)
    # a resume removes a stale temporary file named so, and no file of any other name
    stale = [src for src, _ in staged]
    for name in (*stale, *_NOT_OURS):
        (run.path / name).write_text("left behind")
    eb.run(DATA, task=lambda question: question, resume=run.path, progress=False)
    assert not any((run.path / name).exists() for name in stale)
    assert all((run.path / name).exists() for name in _NOT_OURS)


def test_a_stale_temporary_file_stays_on_load_and_goes_on_resume(tmp_path: Path) -> None:
    store = tmp_path / "store"
    store.mkdir()
    folder = _killed_in_final_writes(store)
    (store / ".summary.json.abcd1234.tmp").write_text("{}")  # in the store itself
    stale = [n for n in _temps(folder) if n.startswith(".cases.parquet.") and n not in _NOT_OURS]
    assert len(stale) == 1  # what the kill left
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    # reading never changes a folder: load and list it, every file stays as it was
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the log is complete: nothing to warn about
        loaded = eb.load_run(folder)
        listed = eb.runs(store)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert listed["path"].tolist() == [str(folder)] and listed["status"].tolist() == ["complete"]
    assert loaded.cases["outcome"].eq("passed").all()
    # a writer holding the folder removes evalbook's stale temporary files, and only those
    resumed = eb.run(
        DATA,
        task=lambda question: question,
        scorers=[lambda output: 1.0],
        resume=folder,
        progress=False,
    )
    assert _temps(folder) == sorted(n for n in _NOT_OURS if n.endswith(".tmp"))
    assert (store / ".summary.json.abcd1234.tmp").exists()  # not a run folder's file
    assert all((folder / n).exists() for n in ("cases.parquet", "scores.parquet", "summary.json"))
    pd.testing.assert_frame_equal(resumed.cases, eb.load_run(folder).cases)


def test_saving_into_a_run_folder_removes_its_stale_temporary_files(tmp_path: Path) -> None:
    run = eb.run(DATA, task=lambda question: question, store=tmp_path, progress=False)
    assert run.path is not None
    planted = [".scores.parquet.x1y2z3_4.tmp", ".events.jsonl.aaaa0000.tmp"]
    for name in planted:
        (run.path / name).write_bytes(b"half a file")
    (run.path / "summary.json").unlink()
    assert run.save() == run.path
    assert _temps(run.path) == []
    assert (run.path / "summary.json").exists()


def test_saving_into_a_folder_a_run_is_writing_is_refused(tmp_path: Path) -> None:
    run = eb.run(DATA, task=lambda question: question, store=tmp_path, progress=False)
    assert run.path is not None
    (run.path / ".cases.parquet.abcd1234.tmp").write_bytes(b"in use")
    # another writer holds the folder: a writer locks its log (flock, docs/file-formats.md)
    fd = os.open(run.path / "events.jsonl", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(eb.ConfigurationError, match="another run"):
            run.save()
    finally:
        os.close(fd)
    assert _temps(run.path) == [".cases.parquet.abcd1234.tmp"]  # not its to remove
