"""The `evalbook` CLI on stored runs: `show`, `runs`, `export`, `compare` and `gate`.

Checked in-process through the console script's entry point (`main(argv)`) and as real
subprocesses, against a store made once for the module; the gate's conditions themselves are
tested in test_cli_gate.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
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


def _as_version_99(summary: Path) -> int:
    """Rewrite a run's summary.json as schema version 99; the version it had (this
    evalbook's, docs/file-formats.md)."""
    version = int(json.loads(summary.read_text())["schema_version"])
    text = summary.read_text()
    changed = text.replace(f'"schema_version": {version}', '"schema_version": 99')
    assert changed != text
    summary.write_text(changed)
    return version


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
    assert "Correct 67% over 3 of 4 cases · completed 75% (1 errored)" in proc.stdout
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
    env = {**cli_env(), "PYTHONIOENCODING": "ascii"}
    proc = subprocess.run(
        [sys.executable, "-m", "evalbook", "runs"],
        cwd=store,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Correct 67% over 3 of 4 cases ? completed 75% (1 errored)" in proc.stdout


def test_runs_of_an_empty_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, "runs", str(tmp_path))
    assert code == 0 and "no runs" in out


def test_export_writes_each_table(store: Path, tmp_path: Path) -> None:
    proc = cli("export", "qa", str(tmp_path / "scores.csv"), cwd=store)
    assert proc.returncode == 0, proc.stderr
    scores = pd.read_csv(tmp_path / "scores.csv")
    assert list(scores.columns[:4]) == ["case_id", "epoch", "score", "status"] and len(scores) == 4
    assert main(["export", "qa", str(tmp_path / "out" / "cases.parquet"), "--table", "cases",
                 "--store", str(store / "runs")]) == 0  # fmt: skip
    cases = pd.read_parquet(tmp_path / "out" / "cases.parquet")
    assert cases["outcome"].astype(str).tolist() == ["passed", "passed", "passed", "errored"]
    assert main(["export", "qa", str(tmp_path / "s.pq"), "--table", "summary",
                 "--store", str(store / "runs")]) == 0  # fmt: skip
    assert pd.read_parquet(tmp_path / "s.pq")["counted"].tolist() == [3]


def test_export_user_errors(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert_user_error(cli("export", "qa", "out.xlsx", cwd=store), ".csv, .parquet or .pq")
    code, _, err = in_process(capsys, "export", "qa", "o.csv", "--table", "nope")
    assert code == 2 and "--table" in err and "'nope'" in err


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
    assert code == 2 and "no run named 'nope'" in err and "runs there: qa, qa2" in err


def test_gate_against_a_baseline(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(store)
    code, out, _ = in_process(capsys, "gate", "qa", "--baseline", "qa2", "--max-regression", "0.1")
    assert code == 1
    assert "FAIL  qa.correct: drop 33.3 pp vs baseline > max 10.0 pp (--max-regression)" in out
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


def test_unreadable_runs_are_one_line_errors(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "copy"
    shutil.copytree(next((store / "runs").glob("qa-*")), folder)
    version = _as_version_99(folder / "summary.json")
    code, out, err = in_process(capsys, "show", str(folder))
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "cannot read the run" in err and "99" in err and str(version) in err
    (tmp_path / "empty").mkdir()
    code, _, err = in_process(capsys, "gate", str(tmp_path / "empty"), "--min", "0.5")
    assert code == 2 and "is not a stored run" in err


def test_an_incomplete_run_is_shown_and_fails_every_gate(
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
    # An incomplete run never passes a gate, whatever the conditions: a false pass otherwise.
    code, out, _ = in_process(capsys, "gate", str(folder), "--max-errors", "5")
    assert code == 1
    assert "FAIL  the run is incomplete: 1 case has no final outcome" in out
    assert "ok    qa.correct: 1 error record <= max 5" in out
    code, out, _ = in_process(capsys, "gate", str(folder), "--min-completion", "0.5")
    assert code == 1 and "ok    completion 50% (2 of 4 passed or failed) >= min 50%" in out, out


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


def test_a_warning_about_a_damaged_run_is_one_clean_line(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not `_load.py:315: RuntimeWarning: ...` with the source line: one `warning:` line."""
    copy = tmp_path / "damaged-store"
    copy.mkdir()
    folder = copy / "qa-damaged"
    shutil.copytree(next((store / "runs").glob("qa-*")), folder)
    _as_version_99(folder / "summary.json")
    code, out, err = in_process(capsys, "runs", str(copy))
    assert code == 0 and "no runs in" in out, err
    (line,) = err.splitlines()
    assert line.startswith("evalbook: warning: skipping ") and "qa-damaged" in line, err
    assert ".py:" not in err and "RuntimeWarning" not in err
