"""Epochs from the shells: `evalbook run FILE --epochs K` and `%%eval DATA --epochs K`
(docs/cli.md, docs/repeats.md).

The CLI runs in-process through `main(argv)` (and once as a subprocess for the usage error);
the cell magic runs in a real, terminal-less IPython shell, as in test_magics.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb
from _cli_helpers import EVAL_FILE, assert_user_error, cli, in_process


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary working directory holding `evals.py` (4 cases, one errors)."""
    (tmp_path / "evals.py").write_text(EVAL_FILE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- evalbook run --epochs -------------------------------------------------------------------


def test_run_with_epochs_runs_every_case_k_times_and_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = in_process(capsys, "run", "evals.py", "--epochs", "3", "--store", "runs")
    assert code == 0, err
    assert "qa · 4 cases × 3 epochs" in out
    [folder] = (project / "runs").iterdir()
    stored = eb.load_run(folder)
    cases = stored.cases
    assert len(cases) == 12
    assert cases.groupby("case_id", observed=True)["epoch"].apply(list).to_dict() == {
        cid: [1, 2, 3] for cid in ["a", "b", "c", "d"]
    }
    assert len(stored.scores) == 12  # one score, one record per sample
    row = stored.summary().iloc[0]
    assert (row["epochs"], row["n_cases"], row["counted"]) == (3, 4, 9)  # d errors 3 times


def test_run_without_epochs_prints_no_epochs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = in_process(capsys, "run", "evals.py", "--no-store")
    assert code == 0, err
    assert "qa · 4 cases · id" in out and "epochs" not in out.splitlines()[0]


@pytest.mark.parametrize("bad", ["0", "-2", "1.5", "three"])
def test_run_with_a_bad_epochs_is_a_one_line_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    code, out, err = in_process(capsys, "run", "evals.py", "--no-store", "--epochs", bad)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "--epochs" in lines[0] and repr(bad) in lines[0], err
    assert not (project / "runs").exists()


def test_run_with_epochs_zero_as_a_subprocess(project: Path) -> None:
    assert_user_error(cli("run", "evals.py", "--epochs", "0", cwd=project), "--epochs", "'0'")


def test_a_pass_at_k_above_the_epochs_is_a_usage_error_before_any_case_runs(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "passk.py").write_text(
        EVAL_FILE.replace("primary=True)", "primary=True, reducer=eb.pass_at(3))")
    )
    code, out, err = in_process(capsys, "run", "passk.py", "--epochs", "2", "--store", "runs")
    assert code == 2, (out, err)
    assert "epochs ≥ 3" in err and len(err.strip().splitlines()) == 1
    assert not (project / "runs").exists()
    code, out, err = in_process(capsys, "run", "passk.py", "--epochs", "3", "--no-store")
    assert code == 0, err
    # a, b pass 3 of 3; c 0 of 3; the fourth case errors in each epoch: no value
    assert "Correct 67% over 3 of 4 cases · completed 75% (3 errored)" in out


# -- %%eval --epochs -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


@pytest.fixture()
def shell(ip: Any) -> Any:
    ip.user_ns["df"] = pd.DataFrame({"q": ["a", "b", "c"], "expected": ["A", "B", "x"]})
    ip.run_cell(
        "import evalbook as eb\n"
        "@eb.scorer\n"
        "def exact(output, expected):\n"
        "    return float(output == expected)\n"
    )
    return ip


def test_cell_magic_with_epochs_runs_every_case_k_times(shell: Any, tmp_path: Path) -> None:
    body = "output = f'{q.upper()}' if epoch == 1 else q\n"  # `epoch` is bound in the cell
    run = shell.run_cell_magic("eval", f"df --scorers exact --epochs 2 --store {tmp_path}", body)
    assert isinstance(run, eb.Run)
    assert run.cases["epoch"].tolist() == [1, 2, 1, 2, 1, 2]
    assert run.cases["output"].tolist() == ["A", "a", "B", "b", "C", "c"]
    row = run.summary().iloc[0]
    assert (row["epochs"], row["counted"]) == (2, 6)
    assert row["mean"] == pytest.approx(1 / 3)  # a and b: 1 of 2 epochs; c: none
    reduced = run.reduced()
    assert reduced["value"].tolist() == [0.5, 0.5, 0.0]
    assert Path(str(run.path)).parent == tmp_path


@pytest.mark.parametrize("bad", ["0", "-1"])
def test_cell_magic_with_a_bad_epochs_is_a_usage_error(
    shell: Any, tmp_path: Path, bad: str
) -> None:
    with pytest.raises(UsageError) as caught:
        shell.run_cell_magic("eval", f"df --scorers exact --epochs {bad} --store {tmp_path}", "q")
    message = str(caught.value)
    assert "epochs" in message and "\n" not in message
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was stored


def test_cell_magic_with_a_non_integer_epochs_is_a_usage_error(shell: Any, tmp_path: Path) -> None:
    result = shell.run_cell(f"%%eval df --scorers exact --epochs two --store {tmp_path}\nq\n")
    assert isinstance(result.error_in_exec, UsageError)
    assert "epochs" in str(result.error_in_exec)
