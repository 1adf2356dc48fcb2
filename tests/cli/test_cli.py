"""The `evalbook` CLI: help and entry points, `run`, `demo`, and every command of docs/cli.md.

Most behaviour is checked in-process through the console script's entry point (`main(argv)`,
tests/_cli_helpers.py); each command and each kind of
user error is also run once as a real subprocess (`python -m evalbook` and the console script).
The commands on stored runs (`show`, `runs`, `export`, `compare`, `gate`) are in
test_cli_stored.py.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from _cli_helpers import (
    BETTER_FILE,
    EVAL_FILE,
    assert_user_error,
    cli,
    cli_env,
    in_process,
    main,
)


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
    beside = Path(sys.executable).parent / "evalbook"  # the script of this interpreter's install
    script = str(beside) if beside.exists() else shutil.which("evalbook")
    assert script is not None
    scripted = subprocess.run(
        [script, "--help"], capture_output=True, text=True, env=cli_env(), timeout=120
    )
    assert scripted.returncode == 0 and scripted.stdout == proc.stdout


def test_no_command_and_unknown_command_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_user_error(cli(cwd=tmp_path), "COMMAND")
    code, out, err = in_process(capsys, "frobnicate")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "frobnicate" in err


# -- run -------------------------------------------------------------------------------------


def test_run_prints_headline_summary_and_in_memory_note(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = in_process(capsys, "run", "evals.py", "--no-store")
    assert code == 0, err
    assert "qa · 4 cases" in out
    assert "Correct 67% over 3 of 4 cases · completed 75% (1 errored)" in out
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


def test_run_user_errors_are_one_line(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(cli("run", "missing.py", cwd=project), "no such file: missing.py")
    assert_user_error(cli("run", "evals.py", "--limit", "abc", cwd=project), "--limit", "'abc'")
    code, _, err = in_process(capsys, "run", "evals.py", "--timeout", "-1")
    assert code == 2 and "--timeout" in err and len(err.splitlines()) == 1
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
    assert "answer.plausible" in proc.stdout and "invalid_score" in proc.stdout  # the judge
    warnings = proc.stderr.strip().splitlines()
    assert len(warnings) == 1 and warnings[0].startswith("evalbook: warning: ")
    assert "950" in warnings[0]
    assert f"stored: {tmp_path / 'store'}" in proc.stdout


# -- docs/cli.md: every command on the page runs, with the exit code it shows ----------------


def test_every_command_in_the_cli_doc_runs_as_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_docs import DOCS, code_blocks

    blocks = code_blocks((DOCS / "cli.md").read_text(encoding="utf-8"))
    source = next(b.source for b in blocks if b.source.startswith("# evals.py"))
    (tmp_path / "evals.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    commands: list[tuple[list[str], int]] = []
    for block in blocks:
        if block.info != "bash":
            continue
        for line in block.source.splitlines():
            command, _, comment = line.partition("#")
            if command.strip().startswith("evalbook "):
                code = re.search(r"exit (\d)", comment)
                commands.append((shlex.split(command)[1:], int(code.group(1)) if code else 0))
    assert len(commands) >= 10
    shown = ""
    for args, expected in commands:
        code = main(args)
        captured = capsys.readouterr()
        assert code == expected, (args, captured.out, captured.err)
        shown += captured.out + captured.err
    volatile = re.compile(r"[0-9a-f]{12}|\d{8}T\d{6}Z|/home/me|^\.\.\.$")
    for block in blocks:
        if block.info == "text":
            for line in block.source.splitlines():
                if line.strip() and not volatile.search(line):
                    assert line in shown, line


def test_functions_of_a_run_file_travel_by_value(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Dask workers cannot import the file: its functions must pickle by value.

    The file's task pickles itself while `evalbook run` runs it; the blob must load and work
    once the file's module is gone from `sys.modules` (as on a worker that never imported it).
    """
    cloudpickle = pytest.importorskip("cloudpickle")
    (project / "travels.py").write_text(
        EVAL_FILE.replace(
            "def model(question):\n",
            "def model(question):\n"
            "    import cloudpickle, pathlib\n"
            "    pathlib.Path('model.pkl').write_bytes(cloudpickle.dumps(model))\n",
        )
    )
    code, _, err = in_process(capsys, "run", "travels.py", "--no-store", "--limit", "1")
    assert code == 0, err
    blob = (project / "model.pkl").read_bytes()
    (name,) = [
        n
        for n, m in sys.modules.items()
        if getattr(m, "__file__", None) == str((project / "travels.py").resolve())
    ]
    del sys.modules[name]
    assert cloudpickle.loads(blob)("2+2") == "4"


def test_an_eval_with_an_unknown_run_option(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "opt.py").write_text(EVAL_FILE.replace('name="qa")', 'name="qa", retries=3)'))
    code, _, err = in_process(capsys, "run", "opt.py", "--no-store")
    assert code == 2 and "unknown run option" in err and "retries" in err
