"""`show --format`, `compare --format` and `report`: the CLI wires them (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import in_process


@pytest.fixture
def store(tmp_path: Path) -> Path:
    frame = pd.DataFrame({"id": [f"c{i}" for i in range(40)], "i": range(40)})
    ok = eb.define_score("ok", label="Ok <b>|", primary=True)
    for name, worse in (("base", False), ("new", True)):
        eb.run(
            frame,
            task=lambda i: f"out {i}",
            scorers=[eb.scorer(ok)(lambda i, worse=worse: 0.0 if worse and i % 2 else 1.0)],
            name=name,
            store=tmp_path / "runs",
            progress=False,
        )
    return tmp_path / "runs"


def test_show_format_json_round_trips(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = in_process(capsys, "show", "new", "--format", "json", "--store", str(store))
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"format", "kind", "run", "summary", "unscored", "verdict"}
    assert data["kind"] == "run" and data["run"]["name"] == "new"
    assert data["summary"][0]["mean"] == pytest.approx(0.5)
    assert data["summary"][0]["label"] == "Ok <b>|"  # JSON keeps the text as it is
    assert data["verdict"]["passed"] is True


def test_compare_format_json_has_comparison_and_verdict(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("compare", "base", "new", "--format", "json", "--store", str(store))
    code, out, err = in_process(capsys, *args, "--max-drop", "0.05")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"a", "b", "comparison", "verdict"}
    comparison = data["comparison"]
    assert set(comparison) >= {"summary", "warnings", "changes", "n_regressions", "regressions"}
    assert comparison["n_regressions"] == 20 == comparison["changes"]["regressed"]
    assert comparison["summary"][0]["delta"] == pytest.approx(-0.5)
    assert comparison["regressions"][0]["output_b"].startswith("out ")
    assert data["verdict"]["passed"] is False
    assert [c["flag"] for c in data["verdict"]["checks"]] == ["--min-completion", "--max-drop"]


def test_compare_format_markdown(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ("compare", "base", "new", "--format", "markdown", "--store", str(store))
    code, out, err = in_process(capsys, *args)
    assert code == 0, err
    assert out.startswith("### evalbook · base → new · ✅ check passed")
    assert "Ok &lt;b&gt;\\|" in out and "regressions (20)" in out


def test_show_format_markdown(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, "show", "new", "--format", "markdown", "--store", str(store))
    assert code == 0 and out.startswith("### evalbook · new")
    assert "| score | mean |" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show", "new", "--format", "json", "--pool"), "--pool does not apply with --format"),
        (("compare", "base", "new", "--max-drop", "0.05"), "--max-drop applies with --format"),
        (("report", "new", "--max-drop", "0.05"), "--max-drop needs --against"),
    ],
)
def test_format_usage_errors(
    store: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = in_process(capsys, *args, "--store", str(store))
    assert code == 2 and message in err


def test_report_command_writes_one_file(
    store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out" / "report.html"
    target.parent.mkdir()
    args = ("report", "new", "--against", "base", "-o", str(target), "--store", str(store))
    code, out, err = in_process(capsys, *args)
    assert code == 0, err
    assert out.startswith(f"wrote {target}")
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and 'data-evalbook="regressions"' in page
