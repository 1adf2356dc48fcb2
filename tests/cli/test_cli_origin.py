"""The failure origin at the command line (docs/origin.md): `run` says how many samples failed
outside the model and warns above 10 %; `run --retry-errors RUN --origin provider,environment`
runs only those again; `gate --max-infra-errors R` fails a run above that share."""

from __future__ import annotations

from pathlib import Path

import pytest

from _cli_helpers import in_process

# Until the file "fixed" exists, cases 1-3 find their sandbox down (environment) and case 9 has
# a bug (task); each call is logged to calls.txt.
FILE = """
import os
import pandas as pd
import evalbook as eb

def task(x):
    with open("calls.txt", "a") as f:
        f.write(f"{x}\\n")
    if x == 9:
        raise KeyError("a bug")
    if x in (1, 2, 3) and not os.path.exists("fixed"):
        raise eb.EnvironmentFailure("sandbox down")
    return x

ev = eb.Eval(pd.DataFrame({"x": range(10)}), task=task, scorers=[lambda output: 1.0],
             name="infra", concurrency=1)
"""


@pytest.fixture
def first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[Path, str]:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "infra.py").write_text(FILE)
    code, out, err = in_process(capsys, "run", "infra.py", "--store", "store")
    assert code == 0, err
    (tmp_path / "calls.txt").unlink()
    (folder,) = (tmp_path / "store").iterdir()
    return folder, out


def test_run_says_what_failed_outside_the_model_and_warns(first: tuple[Path, str]) -> None:
    folder, out = first
    assert "3 samples failed outside the model (environment 3)" in out
    warning = [line for line in out.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "30% of the samples" in warning[0]
    assert "may reflect infrastructure, not the model" in warning[0]
    assert f"--retry-errors {folder} --origin provider,environment" in warning[0]


def test_retry_errors_with_origin_runs_only_those(
    first: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, _ = first
    (tmp_path / "fixed").write_text("")
    code, out, err = in_process(
        capsys,
        "run",
        "infra.py",
        "--store",
        "store",
        "--retry-errors",
        str(folder),
        "--origin",
        "provider,environment",
    )
    assert code == 0, err
    assert (tmp_path / "calls.txt").read_text().split() == ["1", "2", "3"]
    assert "retrying 3 of 10 cases (3 errors of origin environment or provider)" in out
    assert "outside the model" not in out and "warning:" not in out
    assert "completed 90% (1 errored)" in out  # the task's own bug is kept, not retried


def test_origin_needs_retry_errors_and_known_names(
    first: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = in_process(capsys, "run", "infra.py", "--origin", "provider")
    assert code == 2 and "--origin says which failures --retry-errors RUN runs again" in err
    code, _, err = in_process(capsys, "run", "infra.py", "--retry-errors", "x", "--origin", "model")
    assert code == 2 and "expected origins among task, provider, environment" in err


def test_gate_max_infra_errors(first: tuple[Path, str], capsys: pytest.CaptureFixture[str]) -> None:
    folder, _ = first
    code, out, _ = in_process(capsys, "gate", str(folder), "--max-infra-errors", "0.2")
    assert code == 1
    assert "infrastructure errors 30% (3 of 10 samples: 3 samples failed outside the model" in out
    assert "> max 20% (--max-infra-errors)" in out
    code, out, _ = in_process(capsys, "gate", str(folder), "--max-infra-errors", "30%")
    assert code == 0, out
