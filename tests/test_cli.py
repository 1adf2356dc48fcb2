"""The `evalbook` CLI: every command, its exit codes and its error paths.

Most behaviour is checked in-process through `main(argv)`; each command and each kind of
user error is also run once as a real subprocess (`python -m evalbook` and the console script).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalbook._cli import main

EVAL_FILE = textwrap.dedent(
    """
    import pandas as pd
    import evalbook as eb

    df = pd.DataFrame({
        "id": ["a", "b", "c", "d"],
        "question": ["1+1", "2+2", "3+3", "1/0"],
        "expected": ["2", "4", "7", "0"],
    })
    correct = eb.define_score("qa.correct", label="Correct", primary=True)

    @eb.scorer(correct)
    def exact(output, expected):
        return float(output == expected)

    def model(question):
        return str(int(eval(question)))

    qa = eb.Eval(df, task=model, scorers=[exact], name="qa")
    """
)

BETTER_FILE = EVAL_FILE.replace('"7", "0"]', '"6", "0"]').replace('name="qa"', 'name="qa2"')


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "EVALBOOK_DEBUG")}
    env["EVALBOOK_PROGRESS"] = "0"
    return env


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m evalbook ARGS` in `cwd`."""
    return subprocess.run(
        [sys.executable, "-m", "evalbook", *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def assert_user_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2, one line on stderr containing every fragment, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def in_process(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary working directory holding `evals.py`."""
    (tmp_path / "evals.py").write_text(EVAL_FILE)
    (tmp_path / "better.py").write_text(BETTER_FILE)
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- help, entry points ----------------------------------------------------------------------

COMMANDS = ["run", "show", "runs", "compare", "export", "gate", "demo"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: evalbook {command}")


def test_python_m_and_console_script_are_the_same(tmp_path: Path) -> None:
    proc = cli("--help", cwd=tmp_path)
    assert proc.returncode == 0
    for command in COMMANDS:
        assert command in proc.stdout
    script = shutil.which("evalbook")
    assert script is not None
    scripted = subprocess.run(
        [script, "--help"], capture_output=True, text=True, env=_env(), timeout=120
    )
    assert scripted.returncode == 0 and scripted.stdout == proc.stdout


def test_no_command_and_unknown_command_are_usage_errors(tmp_path: Path) -> None:
    assert_user_error(cli(cwd=tmp_path), "COMMAND")
    assert_user_error(cli("frobnicate", cwd=tmp_path), "frobnicate")


# -- run -------------------------------------------------------------------------------------


def test_run_prints_headline_summary_and_in_memory_note(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = in_process(capsys, "run", "evals.py", "--no-store")
    assert code == 0, err
    assert "qa · 4 cases" in out
    assert "Correct 67% · completed 75% (1 errored)" in out
    assert "qa.correct *" in out and "[" in out
    assert "not stored" in out


def test_run_options_reach_the_run(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(
        capsys, "run", "evals.py", "--no-store", "--limit", "2", "--name", "nightly",
        "--concurrency", "1", "--attempts", "2", "--timeout", "30",
    )  # fmt: skip
    assert code == 0
    assert "nightly · 2 cases" in out
    assert "Correct 100% · completed 100%" in out


def test_run_several_evals_prefixes_the_name(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "two.py").write_text(
        EVAL_FILE + "\nqa_copy = qa\nother = eb.Eval(df, task=model, scorers=[exact])\n"
    )
    code, out, _ = in_process(capsys, "run", "two.py", "--no-store", "--name", "n")
    assert code == 0
    assert out.count(" · 4 cases") == 2  # qa_copy is the same Eval: run once
    assert "n-qa · 4 cases" in out and "n-other · 4 cases" in out


def test_run_user_errors_are_one_line(project: Path) -> None:
    assert_user_error(cli("run", "missing.py", cwd=project), "no such file: missing.py")
    assert_user_error(cli("run", "evals.py", "--limit", "abc", cwd=project), "--limit", "'abc'")
    assert_user_error(cli("run", "evals.py", "--timeout", "-1", cwd=project), "--timeout")
    (project / "broken.py").write_text("import evalbook\n\nx = 1 / 0\n")
    assert_user_error(
        cli("run", "broken.py", cwd=project), "broken.py, line 3,", "ZeroDivisionError"
    )


def test_run_file_errors_in_process(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "empty.py").write_text("x = 1\n")
    code, _, err = in_process(capsys, "run", "empty.py")
    assert code == 2 and "defines no eb.Eval" in err
    (project / "syntax.py").write_text("def f(:\n")
    code, _, err = in_process(capsys, "run", "syntax.py")
    assert code == 2 and "line 1" in err and "SyntaxError" in err
    (project / "notes.txt").write_text("")
    code, _, err = in_process(capsys, "run", "notes.txt")
    assert code == 2 and "not a Python file" in err
    bad = EVAL_FILE.replace("scorers=[exact]", "scorers=[exact], scores=['nope']")
    (project / "badconfig.py").write_text(bad)
    code, _, err = in_process(capsys, "run", "badconfig.py", "--no-store")
    assert code == 2 and "Eval 'qa'" in err and "nope" in err
    assert len(err.strip().splitlines()) == 1


def test_run_imports_helpers_next_to_the_file(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "helpers_for_cli_test.py").write_text(
        "def model(question):\n    return '2'\n"
    )
    (project / "sub" / "ev.py").write_text(
        EVAL_FILE.replace(
            "qa = eb.Eval(df, task=model",
            "from helpers_for_cli_test import model as m\nqa = eb.Eval(df, task=m",
        )
    )
    code, out, err = in_process(capsys, "run", "sub/ev.py", "--no-store")
    assert code == 0, err
    assert "Correct 25% · completed 100%" in out


# -- demo ------------------------------------------------------------------------------------


def test_demo_runs_offline_and_prints_the_headline(tmp_path: Path) -> None:
    proc = cli("demo", "--store", str(tmp_path / "store"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "arithmetic-demo" in proc.stdout
    assert "Pass " in proc.stdout and "completed" in proc.stdout
    assert "\x1b[" not in proc.stdout  # not a TTY: no colour
