"""`evalbook run FILE --retry-errors RUN`: a new run that re-runs RUN's errored and timed-out
cases (and those that never ran) and keeps the rest as they were (docs/cli.md).

Through the CLI, but for one test: the in-memory form `eb.run(..., resume=RetryErrors(run,
name))`, on which `--retry-errors` is built, has no public surface of its own (the CLI's
option needs a stored run), so that test imports `RetryErrors` from `_runner`.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _cli_helpers import in_process, main
from evalbook._runner._resume import RetryErrors

# Until the file "fixed" exists, case 2 and 5 raise and case 4 overruns timeout= (it waits for
# an event nobody sets); case 6 stops the run (a Ctrl-C reaching the task) while "stop" exists.
# Each call is logged to calls.txt. The other cases must finish inside the deadline, so it is
# a generous one (a sync task's thread hop may be slow on a loaded machine).
FILE = """
import os, threading
import pandas as pd
import evalbook as eb

def task(x):
    with open("calls.txt", "a") as f:
        f.write(f"{x}\\n")
    if not os.path.exists("fixed"):
        if x in (2, 5):
            raise ValueError(f"flaky {x}")
        if x == 4:
            threading.Event().wait()
    if x == 6 and os.path.exists("stop"):
        raise KeyboardInterrupt
    return x * 10

@eb.scorer
def tens(output):
    return eb.Score(1.0 if output % 20 == 0 else 0.0, rationale=f"got {output}")

ev = eb.Eval(pd.DataFrame({"x": [1, 2, 3, 4, 5, 6]}), task=task, scorers=[tens],
             name="flaky", concurrency=1, timeout=5)
"""


def _calls(tmp_path: Path) -> list[str]:
    path = tmp_path / "calls.txt"
    return path.read_text().split() if path.exists() else []


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file()
    }


def _load(folder: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an incomplete source warns when loaded
        return eb.load_run(folder)


@pytest.fixture(scope="module")
def first_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with FILE and its stored run (2 errored and 1 timed-out case), made once: the
    timed-out case waits out the 5 s deadline, which every test would pay again otherwise."""
    root = tmp_path_factory.mktemp("first")
    (root / "flaky.py").write_text(FILE)
    out, err = io.StringIO(), io.StringIO()
    with (
        pytest.MonkeyPatch.context() as patch,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        patch.chdir(root)
        code = main(["run", "flaky.py", "--store", "store"])
    assert code == 0, (out.getvalue(), err.getvalue())
    (root / "calls.txt").unlink()
    return root


@pytest.fixture
def first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_made: Path) -> Path:
    """A stored run of FILE with 2 errored and 1 timed-out case (a copy of `first_made`, in
    the test's own folder, the working directory); its folder."""
    shutil.copytree(first_made, tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    (folder,) = (tmp_path / "store").iterdir()
    return folder


def test_retry_errors_reruns_only_errored_and_timed_out_cases_into_a_new_run(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _digest(first)
    old = _load(first)
    outcomes = ["passed", "errored", "passed", "timed_out", "errored", "passed"]
    assert old.cases["outcome"].tolist() == outcomes
    (tmp_path / "fixed").touch()
    code, out, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", "flaky"
    )
    assert code == 0, err
    assert sorted(_calls(tmp_path)) == ["2", "4", "5"]
    lines = out.splitlines()
    assert lines[0] == (
        f"retrying 3 of 6 cases (2 errors, 1 timed out) from flaky ({first.resolve()})"
    ), out
    assert lines[2] == "tens 50% · completed 100%", out
    new_folders = sorted(set((tmp_path / "store").iterdir()) - {first})
    assert len(new_folders) == 1
    (folder,) = new_folders
    assert f"stored: {folder.resolve()}" in out
    assert _digest(first) == before  # RUN itself is never modified
    new = _load(folder)
    assert new.id != old.id and new.name == "flaky"
    assert new.options["retried_from"] == old.id
    # a new run, started now: the name RUN now names it (the latest run of that name)
    code, shown, err = in_process(capsys, "show", "flaky", "--store", "store")
    assert code == 0 and f"id {new.id}" in shown, err
    assert new.cases["outcome"].tolist() == ["passed"] * 6
    kept = [0, 2, 5]  # x = 1, 3, 6: output, times and records exactly as they were
    cols = ["case_id", "outcome", "attempts", "output", "started_at", "duration_s"]
    assert_frame_equal(
        new.cases.iloc[kept][cols].reset_index(drop=True),
        old.cases.iloc[kept][cols].reset_index(drop=True),
    )
    rows = new.scores["case_id"].isin(["0", "2", "5"])
    assert_frame_equal(  # as values: the categories differ (the old run had errors)
        new.scores[rows].reset_index(drop=True).astype(object),
        old.scores[old.scores["case_id"].isin(["0", "2", "5"])]
        .reset_index(drop=True)
        .astype(object),
    )
    retried = new.scores[~rows]
    assert retried["rationale"].tolist() == ["got 20", "got 40", "got 50"]


def test_cases_that_never_ran_are_run_too(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # an interrupted second run: cases 1-5 final, case 6 never finished
    (tmp_path / "stop").touch()
    code, _, err = in_process(capsys, "run", "flaky.py", "--store", "store")
    assert code == 130, err
    (partial,) = set((tmp_path / "store").iterdir()) - {first}
    (tmp_path / "stop").unlink()
    (tmp_path / "fixed").touch()
    (tmp_path / "calls.txt").unlink()
    code, out, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", str(partial)
    )
    assert code == 0, err
    assert sorted(_calls(tmp_path)) == ["2", "4", "5", "6"]
    assert out.splitlines()[0].startswith(
        "retrying 4 of 6 cases (2 errors, 1 timed out, 1 not run) from flaky"
    ), out
    latest = eb.runs(tmp_path / "store").sort_values("started_at").iloc[-1]
    assert latest["status"] == "complete" and latest["completion"] == 1.0


def test_nothing_errored_says_so_and_writes_nothing(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fixed").touch()
    code, _, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", "flaky"
    )
    assert code == 0, err
    folders = set((tmp_path / "store").iterdir())
    (retried,) = folders - {first}
    (tmp_path / "calls.txt").unlink()
    code, out, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", str(retried)
    )
    assert code == 0, err
    assert out.startswith("nothing to retry: flaky (") and "no run written" in out, out
    assert set((tmp_path / "store").iterdir()) == folders
    assert _calls(tmp_path) == []


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("scorers=[tens]", "scorers=[lambda output: 1.0]", "needs the same scores"),
        ("[1, 2, 3, 4, 5, 6]", "[1, 2, 3, 4, 5, 6, 7]", "needs the same cases"),
    ],
)
def test_a_mismatch_is_refused_before_anything_runs(
    tmp_path: Path,
    first: Path,
    capsys: pytest.CaptureFixture[str],
    old: str,
    new: str,
    fragment: str,
) -> None:
    (tmp_path / "flaky.py").write_text(FILE.replace(old, new))
    fragment = f"--retry-errors {fragment} as the stored run 'flaky'"
    before = _digest(first)
    code, out, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", "flaky"
    )
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
    assert "retrying" not in out
    assert list((tmp_path / "store").iterdir()) == [first]
    assert _calls(tmp_path) == [] and _digest(first) == before


def test_retry_errors_with_resume_is_a_usage_error(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = in_process(
        capsys, "run", "flaky.py", "--retry-errors", "flaky", "--resume", "flaky"
    )
    assert code == 2 and "not allowed with argument" in err, err
    assert len(err.strip().splitlines()) == 1


def test_an_unknown_run_is_a_one_line_error(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", "nope"
    )
    assert code == 2 and "no run named 'nope'" in err, err
    assert len(err.strip().splitlines()) == 1


def test_retry_errors_needs_one_eval(
    tmp_path: Path, first: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "flaky.py").write_text(
        FILE + "ev2 = eb.Eval(pd.DataFrame({'x': [1]}), task=task)\n"
    )
    code, _, err = in_process(
        capsys, "run", "flaky.py", "--store", "store", "--retry-errors", "flaky"
    )
    assert code == 2 and "--retry-errors RUN continues one run" in err, err


def test_the_in_memory_form_keeps_the_source_untouched() -> None:
    calls: list[int] = []

    def task(x: int) -> int:
        calls.append(x)
        if x == 2 and len(calls) < 4:
            raise ValueError("flaky")
        return x

    df = pd.DataFrame({"x": [1, 2, 3]})
    first = eb.run(df, task=task, scorers=[lambda output: 1.0], store=None, progress=False)
    again = eb.run(
        df,
        task=task,
        scorers=[lambda output: 1.0],
        store=None,
        resume=RetryErrors(first, "again"),
        progress=False,
    )
    assert calls == [1, 2, 3, 2]
    assert first.cases["outcome"].tolist() == ["passed", "errored", "passed"]
    assert again.cases["outcome"].tolist() == ["passed"] * 3 and again.name == "again"
    assert again.path is None and again.options["retried_from"] == first.id
