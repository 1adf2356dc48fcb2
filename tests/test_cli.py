"""The `evalbook` CLI: every command, its exit codes and its error paths.

Most behaviour is checked in-process through `main(argv)`; each command and each kind of
user error is also run once as a real subprocess (`python -m evalbook` and the console script).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from evalbook._cli import main
from evalbook._events import SCHEMA_VERSION

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
    beside = Path(sys.executable).parent / "evalbook"  # the script of this interpreter's install
    script = str(beside) if beside.exists() else shutil.which("evalbook")
    assert script is not None
    scripted = subprocess.run(
        [script, "--help"], capture_output=True, text=True, env=_env(), timeout=120
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


# -- stored runs: show, runs, export, compare, gate ------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding `qa` (67 %, one errored case) and `qa2` (100 %), made in-process."""
    root = tmp_path_factory.mktemp("cli_store")
    (root / "evals.py").write_text(EVAL_FILE)
    (root / "better.py").write_text(BETTER_FILE)
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert main(["run", "evals.py", "--store", "runs"]) == 0
        assert main(["run", "better.py", "--store", "runs"]) == 0
    finally:
        os.chdir(cwd)
    return root


def test_run_stores_and_prints_the_path(store: Path) -> None:
    folders = sorted(p.name for p in (store / "runs").iterdir())
    assert [f.split("-")[0] for f in folders] == ["qa", "qa2"]


def test_show_by_name_and_by_path(store: Path) -> None:
    proc = cli("show", "qa", cwd=store)
    assert proc.returncode == 0, proc.stderr
    assert "Correct 67% · completed 75% (1 errored)" in proc.stdout
    assert "unscored and error records:" in proc.stdout and "case_errored" in proc.stdout
    assert "errored 1" in proc.stdout
    folder = next((store / "runs").glob("qa2-*"))
    code = main(["show", str(folder)])
    assert code == 0


def test_show_unknown_run_and_missing_store(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert_user_error(cli("show", "nope", cwd=store), "no run named 'nope'", "qa, qa2")
    code, _, err = in_process(capsys, "show", "qa", "--store", str(tmp_path / "none"))
    assert code == 2 and "no run store" in err


def test_runs_lists_the_store(store: Path, tmp_path: Path) -> None:
    proc = cli("runs", cwd=store)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split()[:2] == ["name", "id"]
    assert [line.split()[0] for line in lines[2:]] == ["qa", "qa2"]
    assert main(["runs", str(tmp_path / "none")]) == 2


def test_a_terminal_without_unicode_gets_replacements_not_a_crash(store: Path) -> None:
    env = {**_env(), "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalbook", "runs"],
        cwd=store,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Correct 67% ? completed 75% (1 errored)" in proc.stdout


def test_runs_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, "runs", str(tmp_path))
    assert code == 0 and "no runs" in out


def test_export_writes_each_table(store: Path, tmp_path: Path) -> None:
    proc = cli("export", "qa", str(tmp_path / "scores.csv"), cwd=store)
    assert proc.returncode == 0, proc.stderr
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert list(scores.columns[:3]) == ["case_id", "score", "status"] and len(scores) == 4
    assert main(["export", "qa", str(tmp_path / "out" / "cases.parquet"), "--table", "cases",
                 "--store", str(store / "runs")]) == 0  # fmt: skip
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert cases["outcome"].astype(str).tolist() == ["passed", "passed", "passed", "errored"]
    assert main(["export", "qa", str(tmp_path / "s.pq"), "--table", "summary",
                 "--store", str(store / "runs")]) == 0  # fmt: skip
    assert pd.read_parquet(tmp_path / "s.pq")["counted"].tolist() == [3]


def test_export_user_errors(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(cli("export", "qa", "out.xlsx", cwd=store), ".csv, .parquet or .pq")
    code, _, err = in_process(capsys, "export", "qa", "o.csv", "--table", "wide")
    assert code == 2 and "--table" in err and "'wide'" in err


def test_compare_prints_deltas_and_regressions(store: Path) -> None:
    proc = cli("compare", "qa2", "qa", cwd=store)
    assert proc.returncode == 0, proc.stderr
    assert "qa.correct" in proc.stdout and "B − A" in proc.stdout
    assert "top regressions (1 of 1):" in proc.stdout
    assert proc.stdout.splitlines()[-1].split()[:2] == ["c", "qa.correct"]


def test_compare_the_other_way_has_no_regression(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(store)
    code, out, _ = in_process(capsys, "compare", "qa", "qa2", "--score", "qa.correct")
    assert code == 0 and "no case regressed" in out
    code, _, err = in_process(capsys, "compare", "qa2", "qa", "--score", "nope")
    assert code == 2 and "unknown score 'nope'" in err


def test_gate_exit_codes(store: Path) -> None:
    ok = cli("gate", "qa2", "--min", "0.9", "--max-errors", "1", cwd=store)
    assert ok.returncode == 0, ok.stderr
    assert "gate passed: 2 conditions hold" in ok.stdout
    failed = cli("gate", "qa", "--min", "80%", "--max-errors", "0", "--min-ci-low", "0",
                 cwd=store)  # fmt: skip
    assert failed.returncode == 1, failed.stderr
    fails = [line for line in failed.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [
        "FAIL  qa.correct: mean 67% < min 80% (--min)",
        "FAIL  qa.correct: 1 error record > max 0 (--max-errors)",
    ]
    assert "gate failed: 2 of 3 conditions" in failed.stdout
    assert_user_error(cli("gate", "qa", "--min", "1.5", cwd=store), "--min", "'1.5'")


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        ([], "no condition"),
        (["--min", "abc"], "expected a number, got 'abc'"),
        (["--max-errors", "-1"], "whole number >= 0"),
        (["--score", "x", "--min", "0.5"], "unknown score 'x'; this run's scores are: qa.correct"),
        (["--max-regression", "0.1"], "go together"),
    ],
)
def test_gate_usage_errors(
    store: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    fragment: str,
) -> None:
    monkeypatch.chdir(store)
    code, out, err = in_process(capsys, "gate", "qa", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and fragment in err
    code, _, err = in_process(capsys, "gate", "nope", "--min", "0.5")
    assert code == 2 and "no run named 'nope'" in err


def test_gate_against_a_baseline(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(store)
    code, out, _ = in_process(capsys, "gate", "qa", "--baseline", "qa2", "--max-regression", "0.1")
    assert code == 1
    assert "FAIL  qa.correct: drop 33% vs baseline > max 10% (--max-regression)" in out
    code, out, _ = in_process(capsys, "gate", "qa2", "--baseline", "qa", "--max-regression", "0")
    assert code == 0 and "no drop" in out
    code, _, err = in_process(capsys, "gate", "qa", "--baseline", "qa2")
    assert code == 2 and "go together" in err


def test_the_latest_run_of_a_name_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "evals.py").write_text(EVAL_FILE)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "evals.py", "--limit", "1"]) == 0
    assert main(["run", "evals.py", "--limit", "2"]) == 0
    capsys.readouterr()
    code, out, _ = in_process(capsys, "show", "qa")
    assert code == 0 and "qa · 2 cases" in out
    assert len(list((tmp_path / "runs").iterdir())) == 2


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


def test_unreadable_runs_are_one_line_errors(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(next((store / "runs").glob("qa-*")), folder)
    summary = folder / "summary.json"
    summary.write_text(
        summary.read_text().replace(f'"schema_version": {SCHEMA_VERSION}', '"schema_version": 99')
    )
    code, out, err = in_process(capsys, "show", str(folder))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "cannot read the run" in err and "99" in err and str(SCHEMA_VERSION) in err
    (tmp_path / "empty").mkdir()
    code, _, err = in_process(capsys, "gate", str(tmp_path / "empty"), "--min", "0.5")
    assert code == 2 and "is not a stored run" in err


def test_functions_of_a_run_file_travel_by_value(project: Path) -> None:
    """Dask workers cannot import the file: its functions must pickle by value."""
    cloudpickle = pytest.importorskip("cloudpickle")
    from evalbook._cli_commands import import_file

    module = import_file("evals.py")
    blob = cloudpickle.dumps(module.model)
    del sys.modules[module.__name__]
    assert cloudpickle.loads(blob)("2+2") == "4"


def test_an_incomplete_run_is_shown_and_gated_with_a_note(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashed run (no summary, log cut before the last cases ended) still reads."""
    folder = tmp_path / "store" / "qa-crashed"
    shutil.copytree(next((store / "runs").glob("qa-*")), folder)
    for name in ("summary.json", "cases.parquet", "scores.parquet"):
        (folder / name).unlink(missing_ok=True)
    events = (folder / "events.jsonl").read_text().splitlines()
    last_ended = max(i for i, e in enumerate(events) if '"case.ended"' in e)
    kept = [e for i, e in enumerate(events) if i < last_ended and '"run.ended"' not in e]
    (folder / "events.jsonl").write_text("\n".join(kept) + "\n")
    code, out, err = in_process(capsys, "runs", str(tmp_path / "store"))
    assert code == 0 and "incomplete" in out, err
    code, out, _ = in_process(capsys, "show", str(folder))
    assert code == 0 and "not run 1" in out
    code, out, _ = in_process(capsys, "gate", str(folder), "--max-errors", "5")
    assert code == 0
    assert "note: the run is incomplete: 1 case has no final outcome" in out


def test_a_folder_named_like_a_run_does_not_hide_it(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(store)
    (store / "qa2").mkdir(exist_ok=True)  # not a run folder
    code, out, err = in_process(capsys, "show", "qa2")
    assert code == 0 and "qa2 · 4 cases" in out, err


def test_parquet_export_of_outputs_that_are_not_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "objs.py").write_text(
        "import pandas as pd\nimport evalbook as eb\n"
        "ev = eb.Eval(pd.DataFrame({'x': [1, 2]}), task=lambda x: {'answer': x} if x == 1 else x,"
        " scorers=[lambda output: 1.0], name='objs')\n"
    )
    assert main(["run", "objs.py"]) == 0
    assert main(["export", "objs", "cases.parquet", "--table", "cases"]) == 0
    assert main(["export", "objs", "cases.csv", "--table", "cases"]) == 0
    capsys.readouterr()
    outputs = pd.read_parquet("cases.parquet")["output"].tolist()
    assert outputs == ['{"answer": 1}', "2"]


def test_an_eval_with_an_unknown_run_option(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "opt.py").write_text(EVAL_FILE.replace('name="qa")', 'name="qa", retries=3)'))
    code, _, err = in_process(capsys, "run", "opt.py", "--no-store")
    assert code == 2 and "unknown run option" in err and "retries" in err


def test_gate_baseline_without_the_score(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--store", str(tmp_path)]) == 0
    demo = next(tmp_path.glob("arithmetic-demo-*"))
    capsys.readouterr()
    code, out, err = in_process(
        capsys, "gate", "qa", "--store", str(store / "runs"),
        "--baseline", str(demo), "--max-regression", "0.1",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert "the baseline run 'arithmetic-demo' has no score 'qa.correct'" in err
