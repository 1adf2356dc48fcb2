"""The benchmarks keep working (a tiny smoke run; no time is asserted)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_core_benchmark_smoke() -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "bench_core.py"), "--quick"],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    assert "| 200 |" in out.stdout and "×" in out.stdout
