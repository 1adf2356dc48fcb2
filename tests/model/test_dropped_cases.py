"""Every summary row's cases add up, with the reasons a case has no value, and the headline
says when its score's mean leaves cases out (docs/concepts.md, "Tables")."""

from __future__ import annotations

from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb

KINDS = ("one", "zero", "unscored", "invalid", "raise")


def _value(kind: str) -> Any:
    if kind == "raise":
        raise RuntimeError("scorer broke")
    return {"one": 1.0, "zero": 0.0, "unscored": eb.Unscored("refusal"), "invalid": "high"}[kind]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(KINDS), st.booleans()), min_size=1, max_size=6),
    st.integers(1, 3),
    st.sampled_from(["mean", "pass_at", "pass_hat"]),
    st.sampled_from(["exclude", "zero"]),
)
def test_cases_counted_and_dropped_add_up_to_the_cases(
    plan: list[tuple[str, bool]], epochs: int, reducer: str, errors: str
) -> None:
    calls: dict[int, int] = {}

    def task(i: int) -> int:
        calls[i] = calls.get(i, 0) + 1
        if plan[i][1] and calls[i] == 1:  # this case's first epoch errors
            raise ConnectionError("flaky")
        return i

    chosen = {"mean": "mean", "pass_at": eb.pass_at(epochs), "pass_hat": eb.pass_hat(epochs)}
    score = eb.define_score("s", primary=True, reducer=chosen[reducer], errors=errors)
    run = eb.run(
        pd.DataFrame({"i": range(len(plan))}),
        task=task,
        scorers=[eb.scorer(score)(lambda output: _value(plan[output][0]))],
        epochs=epochs,
        concurrency=1,
        store=None,
        progress=False,
    )
    row = run.summary().iloc[0]
    reduced = run.reduced()
    assert row["cases_counted"] + row["cases_dropped"] == row["n_cases"] == len(plan)
    assert row["cases_counted"] == int((reduced["status"] == "scored").sum())
    dropped = reduced[reduced["status"] != "scored"]
    if len(dropped):
        counts = dropped["reason"].value_counts()
        for reason, n in counts.items():
            assert f"{reason} {n}" in row["dropped_reasons"]
        if row["cases_counted"]:
            assert f"over {row['cases_counted']} of {len(plan)} cases" in run.headline.text
        else:  # no value at all: the headline's "—" says it
            assert " — " in run.headline.text and " over " not in run.headline.text
    else:
        assert row["dropped_reasons"] is None and " over " not in run.headline.text


def test_pass_at_k_with_an_errored_epoch_says_the_case_was_dropped() -> None:
    """The failure that was silent: pass@2 under errors="exclude" leaves out a case with an
    errored epoch (too_few_epochs); the summary counted 3 cases, the mean was over 2."""
    calls: dict[str, int] = {}

    def task(q: str) -> str:
        calls[q] = calls.get(q, 0) + 1
        if q == "c" and calls[q] == 1:
            raise ConnectionError("flaky")
        return q

    score = eb.define_score("ok", primary=True, reducer=eb.pass_at(2))
    run = eb.run(
        pd.DataFrame({"q": ["a", "b", "c"]}),
        task=task,
        scorers=[eb.scorer(score)(lambda output: 1.0)],
        epochs=2,
        concurrency=1,
        store=None,
        progress=False,
    )
    row = run.summary().iloc[0]
    assert (row["n_cases"], row["cases_counted"], row["cases_dropped"]) == (3, 2, 1)
    assert row["dropped_reasons"] == "too_few_epochs 1"
    assert "ok 100% over 2 of 3 cases · completed 83% (1 errored)" in repr(run)
    assert "mean over 2 of 3 cases (too_few_epochs 1)" in repr(run)
