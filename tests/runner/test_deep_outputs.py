"""An output nested too deeply to store is that sample's error, never the run's abort."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for i in range(depth):
        value = [value] if i % 3 else {"k": value} if i % 2 else (value,)
    return value


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_a_deeply_nested_output_errors_its_sample_and_the_run_goes_on(
    tmp_path: Path, depth: int
) -> None:
    data = pd.DataFrame({"x": [0, 1, 2]})

    def task(x: int) -> Any:
        return _nested(depth) if x == 1 else x

    run = eb.run(data, task=task, scorers=[lambda output: 1.0], store=tmp_path, progress=False)
    assert run.cases["outcome"].tolist() == ["passed", "errored", "passed"]
    assert "more than 100 levels deep" in run.cases["error_message"][1]
    assert run.path is not None
    again = eb.run(data, task=task, scorers=[lambda output: 1.0], resume=run.path, progress=False)
    assert again.cases["outcome"].tolist() == ["passed", "errored", "passed"]
    pd.testing.assert_frame_equal(eb.load_run(run.path).cases, again.cases)


def test_an_output_exactly_at_the_limit_is_kept_stored_and_loaded(tmp_path: Path) -> None:
    run = eb.run(
        pd.DataFrame({"x": [0]}),
        task=lambda x: _nested(100),
        scorers=[lambda output: 1.0],
        store=tmp_path,
        progress=False,
    )
    assert run.cases["outcome"].tolist() == ["passed"]
    assert run.path is not None
    assert eb.load_run(run.path).cases["output"][0] == _nested(100)
