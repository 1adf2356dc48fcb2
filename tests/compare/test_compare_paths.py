"""compare() gives the same answer whether the runs' cases line up (fast path) or not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

import evalbook as eb

A = eb.define_score("a", primary=True)
B = eb.define_score("b")


def _run(df: pd.DataFrame, shift: float) -> eb.Run:
    @eb.scorer(A)
    def sa(x: float) -> Any:
        return 1.0 if x + shift > 0.5 else 0.0

    @eb.scorer(B)
    def sb(x: float) -> Any:
        if x < 0.1:
            return eb.Unscored("small")
        return min(1.0, x + shift)

    def task(x: float) -> float:
        if x > 0.95:
            raise RuntimeError("down")
        return x

    return eb.run(df, task=task, scorers=[sa, sb], store=None, progress=False)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.astype({"case_id": str, "score": str, "change": str})
    return out.sort_values(["score", "case_id"]).reset_index(drop=True)


def test_aligned_and_reordered_runs_compare_alike() -> None:
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"id": [f"c{i}" for i in range(300)], "x": rng.random(300)})
    a = _run(df, 0.0)
    aligned = eb.compare(a, _run(df, 0.1))  # same ids, same order
    shuffled = eb.compare(a, _run(df.sample(frac=1.0, random_state=3), 0.1))
    pd.testing.assert_frame_equal(_sorted(aligned.cases), _sorted(shuffled.cases))
    pd.testing.assert_frame_equal(aligned.summary, shuffled.summary)
    assert aligned.warnings == shuffled.warnings
