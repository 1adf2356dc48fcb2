"""The CLI's summary table names each score's reducer when a run has epochs."""

from __future__ import annotations

import pandas as pd

import evalbook as eb
from evalbook._cli._terminal import summary_table


def _run(epochs: int, reducer: str = "mean") -> eb.Run:
    d = eb.define_score("ok", reducer=reducer)
    return eb.run(pd.DataFrame({"q": ["a", "b"]}), lambda q, epoch: q * epoch,
                  scorers=[eb.scorer(d)(lambda output: float(len(output) > 1))],
                  epochs=epochs, store=None, progress=False)  # fmt: skip


def test_a_pass_at_k_score_shows_its_reducer() -> None:
    lines = summary_table(_run(3, eb.pass_at(2)).summary())
    assert lines[0].split()[:4] == ["score", "label", "reducer", "mean"]
    assert "pass@2" in lines[-1]


def test_a_run_without_epochs_and_mean_reducers_has_no_reducer_column() -> None:
    lines = summary_table(_run(1).summary())
    assert "reducer" not in lines[0]
