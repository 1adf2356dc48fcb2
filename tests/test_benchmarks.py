"""The benchmarks keep working (a tiny smoke run; no time is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every benchmark in its quick form

ROOT = Path(__file__).resolve().parents[1]


def test_every_benchmark_runs_in_its_quick_form() -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(
                ROOT / "benchmarks" / "run_all.py",
            ),
            "--quick",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    for heading in ("Harness overhead", "Latency-bound", "Import time", "Scale"):
        assert heading in out.stdout, heading
    assert "| 200 |" in out.stdout and "×" in out.stdout


def test_the_browser_benchmark_imports_and_reads_its_arguments() -> None:
    """bench_view_browser.py needs a Chromium and minutes, so run_all.py's quick form leaves it
    out: its imports (tests/_chromium.py, tests/_jupyter.py, bench_case_table.py) and options
    are checked here, and a wrong option is refused before any server starts."""
    script = str(ROOT / "benchmarks" / "bench_view_browser.py")
    out = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                         check=True, timeout=120)  # fmt: skip
    for option in ("--run", "--cases", "--store", "--repeats", "--opens"):
        assert option in out.stdout, option
    bad = subprocess.run([sys.executable, script, "--repeats", "many"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2 and "--repeats" in bad.stderr, bad.stderr
