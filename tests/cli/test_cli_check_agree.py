"""`evalbook gate` and `eb.check` are one gate: the same run and conditions give the same
verdict and the CLI prints the check's report, word for word (without colour)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests._cli_helpers import in_process

import evalbook as eb
from _compare_helpers import gate_run


def test_the_report_has_the_words_the_cli_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "runs"
    gate_run([1.0] * 30 + [0.0] * 10, name="base", store=store)
    new = gate_run([1.0] * 28 + [0.0] * 12, name="new", store=store)
    result = eb.check(new, min=0.6, max_errors=0, against="base", max_drop=0.1)
    code, out, _ = in_process(
        capsys,
        "gate",
        "new",
        "--store",
        str(store),
        "--min",
        "0.6",
        "--max-errors",
        "0",
        "--min-completion",
        "1.0",
        "--against",
        "base",
        "--max-drop",
        "0.1",
    )
    assert code == 1 and not result  # the drop's CI reaches below −10 pp
    assert out.splitlines() == result.report.splitlines()
    assert result.report.splitlines()[1].startswith("against base (")
    assert result.delta == pytest.approx(-0.05) and result.p_value is not None
