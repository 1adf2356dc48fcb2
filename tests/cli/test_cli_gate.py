"""The gate's conditions as a pure function over in-memory runs (`_compare/_gate_checks.py`),
and how the gate spells a measured value beside its threshold (`format_pair`,
`format_amounts`).

Private on purpose: these are units with no public surface of their own (a baseline's change
is injected as a function; the spelling is checked over any pair of values). `evalbook gate`
itself is tested through the CLI in test_cli_stored.py, test_cli_gate_cost.py and
test_gate_against.py.
"""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalbook as eb
from evalbook._compare._gate_checks import GateError, GateSpec, check_gate, gate_target
from evalbook._util._fmt import format_amounts, format_pair


def _run(values: list[object], *, primary: bool = True, extra: bool = False) -> eb.Run:
    """One case per value; the task raises on "raise", the scorer returns the value."""
    df = pd.DataFrame({"id": [f"c{i}" for i in range(len(values))], "v": values})
    main = eb.define_score("main", label="Main", primary=primary)
    other = eb.define_score("other")

    def task(v: object) -> object:
        if v == "raise":
            raise RuntimeError("boom")
        return v

    @eb.scorer(main)
    def score(output: object) -> object:
        if output == "skip":
            raise eb.SkipScore("no_reference")
        return output

    scorers: list[object] = [score]
    if extra:
        scorers.append(eb.scorer(other)(lambda output: 1.0))
    return eb.run(df, task=task, scorers=scorers, store=None, progress=False)  # type: ignore[arg-type]


def _holds(run: eb.Run, **spec: object) -> list[bool]:
    return [c.holds for c in check_gate(run, GateSpec(**spec))]  # type: ignore[arg-type]


def test_min_passes_at_and_above_the_threshold_and_fails_below() -> None:
    run = _run([1.0, 1.0, 1.0, 0.0])  # mean 0.75
    assert _holds(run, min=0.75) == [True]
    assert _holds(run, min=0.7) == [True]
    assert _holds(run, min=0.76) == [False]


def test_a_failed_check_names_observed_value_and_threshold() -> None:
    run = _run([1.0, 1.0, 1.0, 0.0])
    (check,) = check_gate(run, GateSpec(min=0.8))
    assert not check.holds
    assert "main" in check.text and "75%" in check.text and "80%" in check.text
    assert "--min" in check.text


def test_float_noise_at_the_threshold_still_meets_it() -> None:
    run = _run([0.1, 0.2])  # mean (0.1 + 0.2) / 2 = 0.15000000000000002
    assert _holds(run, min=0.15) == [True]
    run = _run([0.7, 0.7, 0.7])  # 2.0999999999999996 / 3
    assert _holds(run, min=0.7) == [True]


def test_no_counted_values_fails_min_and_ci_low() -> None:
    run = _run(["raise", "raise"])
    checks = check_gate(run, GateSpec(min=0.0, min_ci_low=0.0))
    assert [c.holds for c in checks] == [False, False]
    assert "no counted values" in checks[0].text


def test_min_ci_low_uses_the_lower_bound() -> None:
    run = _run([1.0] * 5)  # Wilson lower bound of 5/5 is about 0.57
    lo = run.summary()["ci_low"].iloc[0]
    assert 0.4 < lo < 0.7
    assert _holds(run, min=0.99, min_ci_low=0.5) == [True, True]
    assert _holds(run, min_ci_low=0.8) == [False]


def test_max_errors_counts_the_scores_error_records() -> None:
    run = _run([1.0, "raise", "high"])  # one errored case, one invalid_score
    assert _holds(run, max_errors=2) == [True]
    (check,) = check_gate(run, GateSpec(max_errors=1))
    assert not check.holds and "2 error records" in check.text


def test_max_unscored_rate() -> None:
    run = _run([1.0, "skip", "skip", 0.0])  # half unscored
    assert _holds(run, max_unscored_rate=0.5) == [True]
    (check,) = check_gate(run, GateSpec(max_unscored_rate=0.25))
    assert not check.holds and "50%" in check.text and "25%" in check.text


def test_explicit_score_and_unknown_score() -> None:
    run = _run([0.0, 0.0], primary=False, extra=True)
    assert _holds(run, score="other", min=1.0) == [True]
    assert _holds(run, score="main", min=0.1) == [False]
    with pytest.raises(GateError, match=r"unknown score 'nope'.*main, other"):
        check_gate(run, GateSpec(score="nope", min=0.5))


def test_without_a_headline_score_the_gate_checks_the_passed_rate() -> None:
    run = _run([1.0, "raise", 1.0, 1.0], primary=False, extra=True)
    target = gate_target(run, None)
    assert target.score is None and target.mean == pytest.approx(0.75)
    assert target.errors == 1
    assert _holds(run, min=0.75, max_errors=1) == [True, True]
    with pytest.raises(GateError, match="--score"):
        check_gate(run, GateSpec(max_unscored_rate=0.1))


def test_max_regression_uses_the_change_it_is_given() -> None:
    run = _run([1.0, 0.0])
    spec = GateSpec(max_regression=0.05)
    assert [c.holds for c in check_gate(run, spec, lambda score: -0.05)] == [True]
    assert [c.holds for c in check_gate(run, spec, lambda score: 0.2)] == [True]
    (check,) = check_gate(run, spec, lambda score: -0.1)
    assert not check.holds and "drop 10.0 pp" in check.text and "max 5.0 pp" in check.text
    (check,) = check_gate(run, spec, lambda score: None)
    assert not check.holds
    with pytest.raises(GateError, match="--baseline"):
        check_gate(run, spec)


def test_format_pair_example() -> None:
    assert format_pair(0.7996, 0.8) == ("79.96%", "80%")
    assert format_pair(0.8, 0.8) == ("80%", "80%")
    assert format_pair(0.1004, 0.1, points=True) == ("10.04 pp", "10.0 pp")


@given(
    st.floats(0, 1, allow_nan=False),
    st.floats(0, 1, allow_nan=False),
)
def test_format_pair_never_shows_unequal_values_as_equal(observed: float, threshold: float) -> None:
    for points in (False, True):
        obs, thr = format_pair(observed, threshold, points=points)
        if abs(observed - threshold) > 1e-7:
            assert obs != thr


def test_format_amounts_never_shows_unequal_values_equal() -> None:
    assert format_amounts(1.0004, 1.0, "$") == ("$1.0004", "$1")
    assert format_amounts(0.99999, 1.0, "$") == ("$0.99999", "$1")
    assert format_amounts(1.0 + 1e-12, 1.0, "$") == ("$1", "$1")  # float noise: equal
    assert format_amounts(1234.5, 1000.0, " s") == ("1234 s", "1000 s")


def test_min_completion_counts_passed_or_failed_cases_only() -> None:
    run = _run([1.0, "raise", 0.0, 1.0])  # one errored case: completion 3 of 4
    assert _holds(run, min_completion=0.75) == [True]
    (check,) = check_gate(run, GateSpec(min_completion=0.8))
    assert not check.holds
    assert check.text == "completion 75% (3 of 4 passed or failed) < min 80% (--min-completion)"
    assert GateSpec(min_completion=0.5).any()
