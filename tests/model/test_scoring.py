"""The scoring rule (docs/scoring.md): every outcome × errors-policy cell, means, CIs, headline."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._contract import ERROR, SCORED, UNSCORED
from evalbook._model._results import ERRORED, FAILED, PASSED, PENDING, TIMED_OUT
from evalbook._model._scoring_rule import counted_values, format_pct
from evalbook._model._stats import mean_ci, wilson

NAN = math.nan


@pytest.mark.parametrize(
    ("outcome", "status", "value", "zero", "expected"),
    [
        (PASSED, SCORED, 0.7, False, 0.7),
        (PASSED, SCORED, 0.7, True, 0.7),
        (PASSED, UNSCORED, NAN, False, NAN),
        (PASSED, UNSCORED, NAN, True, NAN),
        (PASSED, ERROR, NAN, False, NAN),
        (PASSED, ERROR, NAN, True, 0.0),
        (FAILED, SCORED, 1.0, False, 0.0),  # failed counts 0 whatever was recorded
        (FAILED, UNSCORED, NAN, False, 0.0),
        (FAILED, ERROR, NAN, False, 0.0),
        (ERRORED, ERROR, NAN, False, NAN),
        (ERRORED, ERROR, NAN, True, 0.0),
        (TIMED_OUT, ERROR, NAN, False, NAN),
        (TIMED_OUT, ERROR, NAN, True, 0.0),
        (PENDING, SCORED, 0.0, True, NAN),
    ],
)
def test_every_cell_of_the_rule(
    outcome: int, status: int, value: float, zero: bool, expected: float
) -> None:
    got = counted_values(
        np.array([outcome], dtype=np.int8),
        np.array([status], dtype=np.int8),
        np.array([value]),
        np.array([zero]),
    )[0]
    assert (math.isnan(got) and math.isnan(expected)) or got == expected


async def _task(x: str, ctx: Any) -> str:
    # Async, and only "slow" ever waits: every other case ends in the first step of its call,
    # which the event loop runs before the deadline's timer however late that fires, so the
    # short timeout= below cannot cut them on a loaded machine (a sync task's thread hop could
    # take longer than it). "slow" waits for an event nobody sets: it always times out.
    if x == "fail":
        ctx.record_score("s", 1.0)
        ctx.fail("wrong")
    if x == "err":
        raise RuntimeError("boom")
    if x == "slow":
        await asyncio.Event().wait()
    return x


def _run_policy(errors: str) -> eb.Run:
    df = pd.DataFrame({"x": ["ok", "fail", "err", "slow", "bad", "skip"]})
    s = eb.define_score("s", errors=errors)  # type: ignore[arg-type]

    @eb.scorer(s)
    def score(output: str) -> Any:
        return {"ok": 1.0, "bad": "1.0", "skip": eb.Unscored("nothing"), "slow": 1.0}[output]

    return eb.run(df, task=_task, scorers=[score], timeout=0.2, store=None, progress=False)


def test_end_to_end_exclude_policy() -> None:
    run = _run_policy("exclude")
    assert list(run.cases["outcome"]) == [
        "passed",
        "failed",
        "errored",
        "timed_out",
        "passed",
        "passed",
    ]
    counted = run.scores["counted"].tolist()
    assert counted[:2] == [1.0, 0.0] and all(math.isnan(c) for c in counted[2:])
    row = run.summary().iloc[0]
    assert row["mean"] == 0.5
    assert (row["counted"], row["zeroed"], row["excluded"], row["unscored"], row["errors"]) == (
        2,
        1,
        3,
        1,
        3,
    )
    assert row["counted"] + row["excluded"] + row["unscored"] == row["n_cases"]


def test_end_to_end_zero_policy() -> None:
    run = _run_policy("zero")
    assert run.scores["counted"].tolist()[:5] == [1.0, 0.0, 0.0, 0.0, 0.0]
    row = run.summary().iloc[0]
    assert row["mean"] == pytest.approx(1 / 5)
    assert (row["counted"], row["zeroed"], row["excluded"], row["unscored"]) == (5, 4, 0, 1)


def test_mean_is_none_when_nothing_is_counted() -> None:
    df = pd.DataFrame({"x": ["a", "b"]})
    run = eb.run(df, task=lambda x: x, scorers=[lambda output: eb.Unscored("n/a")], store=None)
    assert math.isnan(run.summary().iloc[0]["mean"])
    assert run.headline.value is None and run.headline.ci is None
    assert "—" in run.headline.text


def test_wilson_and_t_intervals_bracket_the_mean() -> None:
    mean, lo, hi = mean_ci(np.array([1.0, 1.0, 0.0, 1.0]))
    assert mean is not None and lo <= mean <= hi and lo >= 0 and hi <= 1
    assert (lo, hi) == pytest.approx(wilson(3, 4))
    mean, lo, hi = mean_ci(np.array([0.2, 0.4, 0.9]))
    assert mean is not None and lo < mean < hi
    # one value: the degenerate rule (docs/statistics.md), Wilson of the mean over 1 trial
    assert mean_ci(np.array([0.3])) == (0.3, *wilson(0.3, 1))
    assert mean_ci(np.array([]))[0] is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1), min_size=1, max_size=40))
def test_means_and_cis_stay_in_unit_interval(values: list[float]) -> None:
    mean, lo, hi = mean_ci(np.array(values))
    assert mean is not None
    assert 0.0 <= lo <= mean <= hi <= 1.0


@pytest.mark.parametrize(
    ("x", "text"),
    [(0.52, "52%"), (1.0, "100%"), (0.0, "0%"), (0.9996, "99.96%"), (0.001, "0.1%"), (None, "—")],
)
def test_percentages_never_round_to_the_bounds(x: float | None, text: str) -> None:
    assert format_pct(x) == text


def _headline_run(scores: list[eb.ScoreDefinition], values: dict[str, float]) -> eb.Run:
    df = pd.DataFrame({"x": ["a", "b", "err"]})

    def task(x: str, ctx: Any) -> str:
        if x == "err":
            raise ValueError("nope")
        for name, v in values.items():
            ctx.record_score(name, v)
        return x

    return eb.run(df, task=task, scores=scores, store=None)


def test_headline_uses_the_primary_score() -> None:
    a = eb.define_score("a", label="Pass", primary=True)
    b = eb.define_score("b")
    h = _headline_run([a, b], {"a": 1.0, "b": 0.0}).headline
    assert (h.score, h.label, h.value) == ("a", "Pass", 1.0)
    assert h.completion == pytest.approx(2 / 3)
    assert h.text == "Pass 100% · completed 67% (1 errored)"


def test_headline_single_score_without_primary() -> None:
    h = _headline_run([eb.define_score("only")], {"only": 0.5}).headline
    assert h.score == "only" and h.value == 0.5


def test_headline_falls_back_to_passed_rate() -> None:
    h = _headline_run([eb.define_score("a"), eb.define_score("b")], {"a": 1, "b": 1}).headline
    assert h.score is None and h.label == "Passed"
    assert h.value == pytest.approx(2 / 3)
    assert h.ci is not None and h.ci[0] <= h.value <= h.ci[1]


def test_headline_of_an_empty_run() -> None:
    run = eb.run(pd.DataFrame({"x": []}), task=lambda x: x, store=None)
    assert run.headline.completion is None
    assert len(run.scores) == 0 and len(run.cases) == 0


def test_t975_matches_scipy_without_importing_it() -> None:
    from scipy import stats

    from evalbook._model._stats import t975

    for df in [*range(1, 200), 500, 1_000, 10_000, 1_000_000]:
        assert abs(t975(df) - float(stats.t.ppf(0.975, df))) < 1e-9, df
    with pytest.raises(ValueError, match="at least 1"):
        t975(0)
