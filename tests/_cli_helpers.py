"""Shared helpers of the CLI tests (test_cli, test_cli_stored).

The eval files they run, and the CLI run as a subprocess (`cli`) or in-process (`in_process`,
`main`). In-process, the CLI is the `evalbook` console script's entry point as installed (the
`console_scripts` entry point named `evalbook`), so the tests call what a user runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from pathlib import Path

import pytest

_SCRIPTS = list(entry_points(group="console_scripts", name="evalbook"))
assert _SCRIPTS, "the evalbook console script is not installed (pip install -e .)"
main: Callable[[Sequence[str]], int] = _SCRIPTS[0].load()
"""`evalbook ARGS` in this process: `main(["show", "qa"])` is the exit code."""

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


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "EVALBOOK_DEBUG")}
    env["EVALBOOK_PROGRESS"] = "0"
    return env


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m evalbook ARGS` in `cwd`."""
    return subprocess.run(
        [sys.executable, "-m", "evalbook", *args],
        cwd=cwd,
        env=cli_env(),
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
