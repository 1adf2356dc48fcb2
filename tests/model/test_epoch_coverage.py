"""CI coverage with epochs, a small seeded form of benchmarks/sim_epoch_coverage.py: the
case-level interval covers about 95 %, the naive one (samples as independent) far less."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_epoch_coverage.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_epoch_coverage", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_case_level_ci_covers_and_the_naive_one_does_not(record_property: Any) -> None:
    got = _script().simulate(300, cases=60, epochs=5, a=1.5, b=1.0, seed=7)
    figure = (
        f"coverage with epochs: {got.sims} sims, case level {got.case_level:.1%}, "
        f"naive {got.naive:.1%}, naive width {got.width_ratio:.2f}× the case-level width"
    )
    print(figure)
    record_property("coverage", figure)
    # 300 sims: a Monte Carlo sd of about 1.3 points around 95 %
    assert 0.90 <= got.case_level <= 0.99
    assert got.naive < 0.90 and got.naive < got.case_level - 0.05
    assert got.width_ratio < 0.9
