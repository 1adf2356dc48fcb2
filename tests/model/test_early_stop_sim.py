"""A bounded form of benchmarks/sim_early_stop.py (its long form: 2,000 sims per design, the
tables in benchmarks/RESULTS.md and docs/spend-less.md): a look after every sample keeps wrong
decisions within α where the naive repeated fixed-n interval does not, a true +5 pp stops
early, and `precise` ends at most ±H with its coverage."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import numpy as np

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sim_early_stop.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sim_early_stop", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_at_the_null_boundary_wrong_decisions_stay_within_alpha() -> None:
    sim = _script()
    got = sim.decide(-sim.MAX_DROP, 300, 600, seed=7)
    wrong = float((got.decision != "undecided").mean())
    assert wrong <= 0.05 + 0.02, wrong  # 300 sims: room for their noise
    assert got.naive_wrong >= 0.2, got.naive_wrong  # the rule it replaces is far off


def test_a_true_improvement_stops_early_and_is_called_non_inferior() -> None:
    sim = _script()
    got = sim.decide(0.05, 300, 2000, seed=8)
    assert float((got.decision == "non_inferior").mean()) >= 0.9
    assert float(np.median(got.stopped_at)) < 1000
    assert not (got.decision == "inferior").any()


def test_precise_ends_within_the_half_width_and_covers() -> None:
    sim = _script()
    got = sim.precise(lambda rng, k: rng.binomial(1, 0.7, k).astype(float), 0.7, 0.08, 300, 5000, 9)
    assert got.reached == 1.0
    assert got.widest <= 0.08
    assert got.coverage >= 0.93, got.coverage
