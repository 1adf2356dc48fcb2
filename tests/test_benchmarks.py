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
