"""The CLI's summary table names each score's reducer when a run has epochs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import in_process


def _summary(
    capsys: pytest.CaptureFixture[str], store: Path, epochs: int, reducer: str = "mean"
) -> list[str]:
    """The summary table `evalbook show` prints for a stored run: its header, rule and rows."""
    d = eb.define_score("ok", reducer=reducer)
    run = eb.run(pd.DataFrame({"q": ["a", "b"]}), lambda q, epoch: q * epoch,
                 scorers=[eb.scorer(d)(lambda output: float(len(output) > 1))],
                 epochs=epochs, store=store, progress=False)  # fmt: skip
    code, out, err = in_process(capsys, "show", str(run.path))
    assert code == 0, err
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("score "))
    return lines[start : start + 3]  # one score: the header, the rule, its row


def test_a_pass_at_k_score_shows_its_reducer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _summary(capsys, tmp_path, 3, eb.pass_at(2))
    assert lines[0].split()[:4] == ["score", "label", "reducer", "mean"]
    assert "pass@2" in lines[-1]


def test_a_run_without_epochs_and_mean_reducers_has_no_reducer_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _summary(capsys, tmp_path, 1)
    assert lines[0].split()[:3] == ["score", "label", "mean"] and "reducer" not in lines[0]
    assert lines[2].startswith("ok ")
