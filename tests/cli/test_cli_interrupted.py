"""`evalbook run` interrupted (Ctrl-C): where the partial run is, and `--resume` continuing it."""

from __future__ import annotations

from pathlib import Path

import pytest

import evalbook as eb
from _cli_helpers import in_process

# Case 3 raises KeyboardInterrupt (a Ctrl-C reaching the task) until the file "go" exists;
# every task call is logged to calls.txt, so the test sees which cases ran again.
FILE = """
import os
import pandas as pd
import evalbook as eb

def task(x):
    with open("calls.txt", "a") as f:
        f.write(f"{x}\\n")
    if x == 3 and not os.path.exists("go"):
        raise KeyboardInterrupt
    return x

ev = eb.Eval(pd.DataFrame({"x": [1, 2, 3, 4]}), task=task,
             scorers=[lambda output: 1.0], name="stop", concurrency=1)
"""


def test_an_interrupted_run_says_where_it_is_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stop.py").write_text(FILE)
    code, _, err = in_process(capsys, "run", "stop.py", "--store", "store")
    assert code == 130, err
    (folder,) = (tmp_path / "store").iterdir()
    assert f"the partial run is stored in {folder.resolve()}" in err
    assert f"evalbook run stop.py --resume {folder.resolve()}" in err
    assert f"resume={str(folder.resolve())!r}" in err
    assert "interrupted" in err.splitlines()[-1]
    calls = (tmp_path / "calls.txt").read_text().split()
    assert calls == ["1", "2", "3"]
    (tmp_path / "go").touch()
    code, out, err = in_process(capsys, "run", "stop.py", "--store", "store", "--resume", "stop")
    assert code == 0, err
    # only the unfinished cases ran again
    assert (tmp_path / "calls.txt").read_text().split() == [*calls, "3", "4"]
    latest = eb.runs(tmp_path / "store").iloc[-1]
    assert latest["status"] == "complete" and latest["n_cases"] == 4, out
    assert latest["completion"] == 1.0


def test_resume_needs_one_eval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "two.py").write_text(FILE + "ev2 = eb.Eval(pd.DataFrame({'x': [1]}), task=task)\n")
    code, _, err = in_process(capsys, "run", "two.py", "--resume", "stop")
    assert code == 2 and "--resume RUN continues one run" in err, err
