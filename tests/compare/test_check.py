"""`eb.check(run, ...)` → `eb.Check`: the CLI gate's logic and words, in Python; and the
conditions `eb.Eval(check=...)` stores.

The report is the words `evalbook gate` prints (tests/cli/test_cli_check_agree.py); the truth
of each condition is checked against the run's own figures, as a property too.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _compare_helpers import gate_run


def test_a_check_is_truthy_exactly_when_every_condition_holds() -> None:
    run = gate_run([1.0] * 9 + [0.0])  # 90 %
    passed = eb.check(run, min=0.8, max_errors=0)
    assert isinstance(passed, eb.Check)
    assert passed and passed.passed and passed.mean == pytest.approx(0.9)
    failed = eb.check(run, min=0.95)
    assert not failed and not failed.passed
    assert [c.holds for c in failed.checks] == [True, False]  # completion (default 1.0), min
    assert failed.verdict == "gate failed: 1 of 2 conditions"


def test_repr_and_str_are_the_report() -> None:
    run = gate_run([1.0, 0.0, 0.0, 0.0], name="weak")
    result = eb.check(run, min=0.8)
    assert repr(result) == str(result) == result.report
    assert result.report.splitlines() == [
        "gate weak: Right 25% · completed 100%",
        "ok    completion 100% (4 of 4 passed or failed) >= min 100% (--min-completion)",
        "FAIL  ok: mean 25% < min 80% (--min)",
        "gate failed: 1 of 2 conditions",
    ]


def test_an_errored_case_fails_the_default_completion_and_passes_without_it() -> None:
    run = gate_run([1.0, 1.0, 1.0, float("nan")])
    result = eb.check(run, min=0.5)
    assert not result
    assert "FAIL  completion 75% (3 of 4 passed or failed) < min 100%" in result.report
    assert eb.check(run, min=0.5, min_completion=None)
    assert eb.check(run, min=0.5, min_completion=0.75)


def test_underpowered_is_said_and_never_fails() -> None:
    base = gate_run([1.0] * 10 + [0.0] * 10, name="base")
    new = gate_run([1.0] * 20, name="new")  # clearly better, on too few cases to see a 2 pp drop
    result = eb.check(new, against=base, max_drop=0.02)
    assert result and result.underpowered and result.n_needed is not None
    assert f"underpowered: about {result.n_needed} paired cases needed" in result.report


def test_an_incomplete_run_never_passes(tmp_path: Path) -> None:
    gate_run([1.0] * 6, name="full", store=tmp_path / "runs")
    folder = tmp_path / "crashed"
    shutil.copytree(next((tmp_path / "runs").glob("full-*")), folder)
    for name in ("summary.json", "cases.parquet", "scores.parquet"):
        (folder / name).unlink(missing_ok=True)
    events = (folder / "events.jsonl").read_text().splitlines()
    last_ended = max(i for i, e in enumerate(events) if '"case.ended"' in e)
    kept = [e for i, e in enumerate(events) if i < last_ended and '"run.ended"' not in e]
    (folder / "events.jsonl").write_text("\n".join(kept) + "\n")
    with pytest.warns(RuntimeWarning, match="is incomplete"):
        crashed = eb.load_run(folder)
    for result in (eb.check(crashed, min=0.0), eb.check(crashed, min_completion=None)):
        assert not result
        assert "FAIL  the run is incomplete: 1 case has no final outcome" in result.report


def test_against_a_name_is_found_in_the_runs_store_or_given_as_run_or_folder(
    tmp_path: Path,
) -> None:
    store = tmp_path / "runs"
    base = gate_run([1.0] * 20, name="base", store=store)
    new = gate_run([1.0] * 20, name="new", store=store)
    # identical runs: the delta is 0, its CI about ±16 pp on 20 cases
    by_name = eb.check(new, against="base", max_drop=0.2)
    by_id = eb.check(new, against=base.id, max_drop=0.2)
    by_folder = eb.check(new, against=base.path, max_drop=0.2)
    by_run = eb.check(new, against=base, max_drop=0.2)
    assert [r.passed for r in (by_name, by_id, by_folder, by_run)] == [True] * 4
    assert by_name.report == by_folder.report == by_run.report == by_id.report
    with pytest.raises(eb.ConfigurationError, match=r"against='nope'.*no run named 'nope'"):
        eb.check(new, against="nope", max_drop=0.05)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min": 1.5}, "min must be a fraction between 0 and 1"),
        ({"min": "0.8"}, "min must be a fraction such as 0.05"),
        ({"max_errors": -1}, "max_errors must be 0 or more"),
        ({"max_errors": 1.5}, "max_errors must be a whole number"),
        ({"max_cost": -1}, "max_cost must be an amount of US dollars"),
        ({"max_drop": 0.05}, "against= and max_drop= go together"),
        ({"against": "base"}, "against= and max_drop= go together"),
        ({"against": "base", "max_drop": 0}, "max_drop must be above 0"),
        ({"score": "nope"}, "unknown score 'nope'"),
    ],
)
def test_bad_conditions_are_configuration_errors(kwargs: dict[str, object], message: str) -> None:
    run = gate_run([1.0, 1.0])
    with pytest.raises(eb.ConfigurationError, match=message):
        eb.check(run, **kwargs)  # type: ignore[arg-type]


def test_a_run_with_no_known_cost_fails_max_cost() -> None:
    result = eb.check(gate_run([1.0, 1.0]), max_cost=1.0)
    assert not result and "FAIL  cost unknown" in result.report


def test_not_a_run_is_a_configuration_error() -> None:
    with pytest.raises(eb.ConfigurationError, match=r"eb\.check needs a run"):
        eb.check("baseline", min=0.5)  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(
    values=st.lists(st.sampled_from([0.0, 1.0]), min_size=1, max_size=12),
    threshold=st.sampled_from([0.0, 0.25, 0.5, 0.6, 0.75, 1.0]),
)
def test_min_holds_exactly_when_the_mean_reaches_it(values: list[float], threshold: float) -> None:
    run = gate_run(values)
    mean = sum(values) / len(values)
    result = eb.check(run, min=threshold)
    assert result.passed is (mean >= threshold - 1e-9)
    assert bool(result) is result.passed
    assert result.mean == pytest.approx(mean)


# -- eb.Eval(check=...) ------------------------------------------------------------------------


def test_an_eval_stores_its_checked_conditions() -> None:
    df = pd.DataFrame({"v": [1.0]})
    ev = eb.Eval(df, task=lambda v: v, check=dict(min=0.8, against="baseline", max_drop=0.02))
    assert ev.check == {"min": 0.8, "against": "baseline", "max_drop": 0.02}
    assert eb.Eval(df, task=lambda v: v).check is None


@pytest.mark.parametrize(
    ("check", "message"),
    [
        ({"mni": 0.8}, "check= has an unknown condition 'mni'; the conditions are min, "),
        ({"min": 2}, "min must be a fraction between 0 and 1"),
        ({"against": "baseline"}, "against= and max_drop= go together"),
        ({"against": 3, "max_drop": 0.1}, "against must be a run, or a run's name"),
        ([("min", 0.8)], "check= must be a dict of conditions"),
    ],
)
def test_an_eval_with_bad_conditions_fails_when_made(check: object, message: str) -> None:
    with pytest.raises(eb.ConfigurationError, match=message):
        eb.Eval(pd.DataFrame({"v": [1.0]}), task=lambda v: v, check=check)  # type: ignore[arg-type]
