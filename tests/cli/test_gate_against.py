"""The gate against a baseline (non-inferiority): `evalbook gate RUN --against BASE --max-drop X`
and `gate_against` in Python, on stored runs built with known paired deltas.

`gate_against` (`_compare/_gate_against.py`) is imported for what the CLI cannot show: the
exact delta, CI, mde and N behind the rounded lines it prints, and the checks of its own
arguments (the CLI's parser refuses those values before they reach it).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from tests import _power_ref as ref
from tests._cli_helpers import in_process

import evalbook as eb
from evalbook._compare._gate import gate_against

# The mde and N are those of the exact McNemar test the comparison runs on 0/1 values (or of
# the clustered t), computed independently with scipy in tests/_power_ref.py.


def _store(
    values: list[float],
    name: str,
    store: Path | None,
    ids: list[str] | None = None,
    label: str = "Right",
) -> eb.Run:
    """A run whose case i scores values[i] (0/1), stored under `store` when given."""
    ids = ids if ids is not None else [f"c{i}" for i in range(len(values))]
    df = pd.DataFrame({"id": ids, "v": values})
    ok = eb.define_score("ok", label=label, primary=True)
    scorer = eb.scorer(ok)(lambda v: v)
    return eb.run(df, task=lambda v: v, scorers=[scorer], name=name, store=store, progress=False)  # type: ignore[arg-type]


def _pair(base: list[float], new: list[float], tmp: Path) -> None:
    _store(base, "base", tmp / "runs")
    _store(new, "new", tmp / "runs")


def _flip(values: list[float], where: range, to: float) -> list[float]:
    out = list(values)
    for i in where:
        out[i] = to
    return out


BASE_400 = [float(i % 10 < 7) for i in range(400)]  # 70 %: cases 0-6 of every ten pass


def test_non_inferior_passes_with_its_delta_ci_and_mde(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 4 of the 120 failing cases fixed: delta +1 pp, a narrow CI, well powered
    fixed = [i for i in range(400) if BASE_400[i] == 0][:4]
    new = list(BASE_400)
    for i in fixed:
        new[i] = 1.0
    _pair(BASE_400, new, tmp_path)
    code, out, err = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "5%")
    assert code == 0, (out, err)
    assert "ok    ok: delta +1.0 pp vs baseline, 95% CI [" in out
    assert ">= −5.0 pp (--max-drop)" in out
    mde = ref.mcnemar_mde(400, 4 / 400)  # 4 discordant pairs of 400
    assert f"mde {mde * 100:.1f} pp (80% power, two-sided 5%, 400 paired cases)" in out
    assert "underpowered" not in out
    assert out.splitlines()[1].startswith("against base (")
    assert out.rstrip().endswith("gate passed: 1 condition holds")


def test_inferior_fails_on_the_lower_bound_and_is_not_underpowered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 40 of the 280 passing cases broken: delta −10 pp; the mde (about 4.6 pp) is below 5 pp
    broken = [i for i in range(400) if BASE_400[i] == 1][:40]
    new = list(BASE_400)
    for i in broken:
        new[i] = 0.0
    _pair(BASE_400, new, tmp_path)
    code, out, _ = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "0.05")
    assert code == 1
    assert "FAIL  ok: delta −10.0 pp vs baseline, 95% CI [" in out
    assert "< −5.0 pp (--max-drop)" in out
    assert "underpowered" not in out
    assert "gate failed: 1 of 1 conditions" in out
    result = gate_against(
        eb.load_run(next((tmp_path / "runs").glob("new-*"))),
        eb.load_run(next((tmp_path / "runs").glob("base-*"))),
        max_drop=0.05,
    )
    assert not result.passed and result.delta == pytest.approx(-0.1)
    assert result.ci is not None and result.ci[0] < result.ci[1] < -0.05
    assert result.mde == pytest.approx(ref.mcnemar_mde(400, 40 / 400), rel=1e-6)
    assert result.mde < 0.05 and result.n_needed is None


def test_underpowered_fails_and_says_how_many_paired_cases_are_needed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 20 cases, 2 fixed and 2 broken: delta 0, a wide CI; 4 of 20 pairs discordant
    base = [float(i % 2) for i in range(20)]
    new = _flip(_flip(base, range(0, 4, 2), 1.0), range(1, 5, 2), 0.0)
    _pair(base, new, tmp_path)
    code, out, _ = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "0.05")
    assert code == 1  # the bound fails: underpowered is why, not a failure of its own
    needed = 658  # the exact McNemar test at 20 % discordant pairs (the z formula said 661)
    assert ref.mcnemar_power(needed, 0.05, 0.2) >= 0.8 > ref.mcnemar_power(needed - 1, 0.05, 0.2)
    assert f"underpowered: about {needed} paired cases needed" in out
    assert f"mde {ref.mcnemar_mde(20, 0.2) * 100:.1f} pp" in out
    assert "FAIL  ok: delta 0 pp vs baseline" in out


def test_underpowered_but_the_bound_holds_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The rule: being underpowered never fails a gate whose lower bound holds."""
    base = [float(i % 4 > 0) for i in range(40)]  # 75 %
    _pair(base, [1.0] * 40, tmp_path)  # +25 pp
    code, out, _ = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "0.05")
    assert code == 0, out
    needed = 817  # the exact McNemar test at 10 of 40 pairs discordant
    assert ref.mcnemar_power(needed, 0.05, 0.25) >= 0.8 > ref.mcnemar_power(needed - 1, 0.05, 0.25)
    assert f"underpowered: about {needed} paired cases needed" in out
    assert "gate passed: 1 condition holds" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--against", "base"], "--against BASE and --max-drop X go together"),
        (["--max-drop", "0.05"], "--against BASE and --max-drop X go together"),
        (["--against", "base", "--max-drop", "0"], "expected a drop above 0"),
        (["--against", "base", "--max-drop", "1.5"], "expected a fraction between 0 and 1"),
        (["--against", "base", "--max-drop", "x"], "expected a number"),
        (["--against", "nope", "--max-drop", "0.05"], "no run named 'nope'"),
        (["--against", "base", "--max-drop", "0.05", "--score", "nope"], "unknown score"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    _pair([1.0, 0.0], [1.0, 1.0], tmp_path)
    code, out, err = in_process(capsys, "gate", "new", *args)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and message in err, err


def test_an_incomplete_run_never_passes_against_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _pair([1.0] * 300, [1.0] * 300, tmp_path)
    folder = next((tmp_path / "runs").glob("new-*"))
    for name in ("summary.json", "cases.parquet", "scores.parquet"):
        (folder / name).unlink(missing_ok=True)
    events = (folder / "events.jsonl").read_text().splitlines()
    last_ended = max(i for i, e in enumerate(events) if '"case.ended"' in e)
    kept = [e for i, e in enumerate(events) if i < last_ended and '"run.ended"' not in e]
    (folder / "events.jsonl").write_text("\n".join(kept) + "\n")
    code, out, _ = in_process(
        capsys,
        "gate",
        str(folder),
        "--against",
        "base",
        "--max-drop",
        "0.05",
        "--min-completion",
        "0.5",
    )
    assert code == 1
    assert "FAIL  the run is incomplete: 1 case has no final outcome" in out
    assert "ok    completion" in out  # 299 of 300 >= 50 %
    assert "ok    ok: delta 0 pp vs baseline" in out  # the bound itself holds
    assert "gate failed: 1 of 3 conditions" in out


def test_run_text_is_escaped_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "Right\x1b[31m\u202e"
    _store([1.0, 1.0, 0.0], "base", tmp_path / "runs", ids=["a", "b", "c"], label=hostile)
    _store([1.0, 1.0, 1.0], "new", tmp_path / "runs", ids=["a", "b", "d"], label=hostile)
    code, out, _ = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "0.2")
    assert "\x1b" not in out and "\u202e" not in out
    assert "against base (" in out and "Right\\x1b[31m\\u202e" in out  # the headline's label
    assert "note: Case sets differ" in out
    assert code == 1  # two paired cases, both the same: the CI is too wide for 20 pp


def test_gate_against_in_python_checks_its_arguments(tmp_path: Path) -> None:
    base = _store([1.0, 0.0, 1.0], "base", None)
    new = _store([1.0, 1.0, 1.0], "new", None)
    for bad in (0, 0.0, -0.1, 1.5, True, "5%"):
        with pytest.raises(eb.ConfigurationError, match="max_drop"):
            gate_against(new, base, max_drop=bad)  # type: ignore[arg-type]
    with pytest.raises(eb.ConfigurationError, match="unknown score 'nope'"):
        gate_against(new, base, max_drop=0.1, score="nope")
    with pytest.raises(eb.ConfigurationError, match="min_completion"):
        gate_against(new, base, max_drop=0.1, min_completion=2.0)
    result = gate_against(new, base, max_drop=0.1, min_completion=0.9)
    assert [c.flag for c in result.checks] == ["--min-completion", "--max-drop"]
    assert str(result).splitlines()[-1] == result.verdict
    assert result.delta == pytest.approx(1 / 3)


def test_a_baseline_without_the_score_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store([1.0, 1.0], "new", tmp_path / "runs")
    df = pd.DataFrame({"id": ["c0", "c1"]})
    eb.run(
        df,
        task=lambda: 1,
        scorers=[eb.scorer("other")(lambda: 1.0)],
        name="base",
        store=tmp_path / "runs",
        progress=False,
    )
    code, _, err = in_process(capsys, "gate", "new", "--against", "base", "--max-drop", "0.05")
    assert code == 2 and "the baseline run 'base' has no score 'ok'" in err
    shutil.rmtree(tmp_path / "runs")


def test_a_clustered_baseline_gives_a_clustered_mde_and_n(tmp_path: Path) -> None:
    """compare() clusters by the baseline's cluster= column: the gate's mde and N follow it."""
    n = 80
    df = pd.DataFrame(
        {"id": [f"c{i}" for i in range(n)], "passage": [f"p{i // 8}" for i in range(n)]}
    )
    ok = eb.define_score("ok", primary=True)
    # whole passages flip together: the clustered sd of the deltas is far above the plain one
    base_values = {f"c{i}": float((i // 8) % 2) for i in range(n)}
    new_values = {f"c{i}": float((i // 8) % 3 > 0) for i in range(n)}

    def one(values: dict[str, float], name: str) -> eb.Run:
        scorer = eb.scorer(ok)(lambda case_id: values[case_id])
        return eb.run(df, task=lambda: 1, scorers=[scorer], name=name, store=None,
                      progress=False, cluster="passage")  # fmt: skip

    base, new = one(base_values, "base"), one(new_values, "new")
    result = gate_against(new, base, max_drop=0.05)
    row = eb.compare(base, new).summary.iloc[0]
    assert row["test"] == "clustered t" and int(row["n_clusters"]) == 10
    assert result.mde == pytest.approx(float(row["mde"]))
    plain = eb.compare(base, new, cluster=False).summary.iloc[0]
    assert result.mde > float(plain["mde"])  # the clustered one, not the plain one
    # the clustered t on 10 - 1 df: mde = lambda(9) · sd / √n, so sd; planned n keeps 8 per cluster
    sd = float(row["mde"]) * math.sqrt(n) / ref.t_mde(1.0, 9)
    assert result.n_needed is not None
    for m, detects in ((result.n_needed, True), (result.n_needed - 1, False)):
        assert (ref.t_mde(sd / math.sqrt(m), round(m / 8) - 1) <= 0.05) is detects
