"""`evalbook run FILE --against BASE --stop-when decided --max-drop X`, `--stop-when precise
--half-width H` and `--sample N` (docs/spend-less.md), in process and without tracebacks."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from tests._cli_helpers import in_process

import evalbook as eb

FILE = textwrap.dedent(
    """
    import numpy as np, pandas as pd
    import evalbook as eb

    rng = np.random.default_rng(5)
    df = pd.DataFrame({"id": [f"c{i}" for i in range(800)]})
    df["old"] = rng.random(800) < 0.6
    df["new"] = df["old"] | (rng.random(800) < 0.4)
    ok = eb.define_score("ok", primary=True)

    @eb.scorer(ok)
    def old_score(old):
        return float(old)

    @eb.scorer(ok)
    def new_score(new):
        return float(new)

    base = eb.Eval(df, task=lambda id: id, scorers=[old_score], name="base")
    """
)


def _files(tmp_path: Path) -> tuple[Path, Path]:
    base = tmp_path / "base_eval.py"
    base.write_text(FILE, encoding="utf-8")
    new = tmp_path / "new_eval.py"
    new.write_text(
        FILE.replace('scorers=[old_score], name="base"', 'scorers=[new_score], name="new"')
    )
    return base, new


def test_stop_when_decided_against_a_stored_base(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base, new = _files(tmp_path)
    store = str(tmp_path / "runs")
    code, _, err = in_process(capsys, "run", str(base), "--store", store)
    assert code == 0, err
    args = ["run", str(new), "--store", store, "--against", "base"]
    code, out, err = in_process(
        capsys, *args, "--stop-when", "decided", "--max-drop", "0.02", "--seed", "4"
    )
    assert code == 0, err
    assert "Early stop: stopped after" in out and "non-inferior at −2 pp" in out
    (folder,) = [p for p in Path(store).iterdir() if p.name.startswith("new-")]
    run = eb.load_run(folder)
    assert run.options["stopped"]["decision"] == "non_inferior"
    assert run.options["seed"] == 4 and run.options["against"]["name"] == "base"


def test_precise_and_sample(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, _ = _files(tmp_path)
    code, out, err = in_process(
        capsys, "run", str(base), "--no-store", "--stop-when", "precise", "--half-width", "0.1"
    )
    assert code == 0, err
    assert "precise to ±10 pp" in out
    code, out, err = in_process(capsys, "run", str(base), "--no-store", "--sample", "50")
    assert code == 0, err
    assert "50" in out


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (["--stop-when", "decided", "--max-drop", "0.02"], "needs --against BASE"),
        (["--max-drop", "0.02"], "goes with --stop-when"),
        (["--stop-when", "precise"], "takes --half-width"),
        (["--stop-when", "precise", "--half-width", "0"], "between 0 and 1"),
    ],
)
def test_usage_mistakes_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], fragment: str
) -> None:
    base, _ = _files(tmp_path)
    code, _, err = in_process(capsys, "run", str(base), "--no-store", *extra)
    assert code == 2
    assert fragment in err and "Traceback" not in err
