"""`eb.run(..., epochs=K)`: every case runs K times as K samples (docs/repeats.md)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb


def _frame(n: int) -> pd.DataFrame:
    return pd.DataFrame({"q": [f"q{i}" for i in range(n)], "target": [f"q{i}" for i in range(n)]})


def test_every_case_runs_epochs_times_and_the_task_and_scorers_see_the_epoch() -> None:
    seen: list[tuple[str, int, int]] = []
    lock = threading.Lock()

    def task(q: str, case_id: str, epoch: int, ctx: Any) -> str:
        with lock:
            seen.append((case_id, epoch, ctx.epoch))
        return q if epoch != 2 else "wrong"

    def exact(output: str, target: str, epoch: int) -> float:
        assert epoch in (1, 2, 3)
        return float(output == target)

    run = eb.run(_frame(4), task, scorers=[exact], epochs=3, store=None, progress=False)
    assert sorted(seen) == sorted((str(i), e, e) for i in range(4) for e in (1, 2, 3))
    cases = run.cases
    assert list(cases.columns[:2]) == ["case_id", "epoch"]
    assert list(zip(cases["case_id"], cases["epoch"], strict=True)) == [
        (str(i), e) for i in range(4) for e in (1, 2, 3)
    ]
    scores = run.scores
    assert len(scores) == 4 * 3 * 1
    assert scores["epoch"].tolist() == [1, 2, 3] * 4
    assert scores.loc[scores["epoch"] == 2, "value"].tolist() == [0.0] * 4
    assert scores.loc[scores["epoch"] != 2, "value"].tolist() == [1.0] * 8


def test_epochs_one_keeps_an_epoch_column_of_ones() -> None:
    run = eb.run(_frame(3), lambda q: q, scorers=[lambda output: 1.0], store=None, progress=False)
    assert run.cases["epoch"].tolist() == [1, 1, 1]
    assert run.scores["epoch"].tolist() == [1, 1, 1]
    assert "epochs" not in run.options  # a run without epochs records as before


def test_attempts_apply_per_sample() -> None:
    calls: Counter[tuple[str, int]] = Counter()

    def flaky(case_id: str, ctx: Any) -> str:
        calls[(case_id, ctx.epoch)] += 1
        if ctx.attempt == 1 and ctx.epoch == 2:
            raise RuntimeError("first attempt of epoch 2 fails")
        return "ok"

    run = eb.run(
        _frame(2),
        flaky,
        scorers=[lambda output: 1.0],
        epochs=2,
        attempts=2,
        store=None,
        progress=False,
        concurrency=1,
    )
    assert calls == {("0", 1): 1, ("0", 2): 2, ("1", 1): 1, ("1", 2): 2}
    assert run.cases["attempts"].tolist() == [1, 2, 1, 2]
    assert run.cases["outcome"].astype(str).tolist() == ["passed"] * 4


def test_samples_start_in_input_order_then_epoch_with_concurrency_one() -> None:
    order: list[tuple[str, int]] = []

    async def task(case_id: str, epoch: int) -> str:
        order.append((case_id, epoch))
        await asyncio.sleep(0)
        return "x"

    eb.run(
        _frame(3),
        task,
        scorers=[lambda output: 1.0],
        epochs=2,
        concurrency=1,
        store=None,
        progress=False,
    )
    assert order == [(str(i), e) for i in range(3) for e in (1, 2)]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3", None])
def test_bad_epochs_is_a_configuration_error_before_any_case_runs(bad: object) -> None:
    calls: list[str] = []
    with pytest.raises(eb.ConfigurationError, match="epochs must be an integer >= 1"):
        eb.run(
            _frame(2),
            lambda q: calls.append(q),
            scorers=[lambda output: 1.0],
            epochs=bad,
            store=None,
            progress=False,
        )  # type: ignore[arg-type]
    assert calls == []


def test_a_data_column_named_epoch_that_a_scorer_takes_is_refused() -> None:
    frame = _frame(2).assign(epoch=[7, 8])
    with pytest.raises(eb.ConfigurationError, match="column named 'epoch'"):
        eb.run(frame, lambda q: q, scorers=[lambda output, epoch: 1.0], store=None, progress=False)


def test_completion_and_counts_are_of_samples() -> None:
    def task(case_id: str, epoch: int) -> str:
        if case_id == "0" and epoch == 1:
            raise RuntimeError("boom")
        return "x"

    run = eb.run(
        _frame(2), task, scorers=[lambda output: 1.0], epochs=2, store=None, progress=False
    )
    h = run.headline
    assert (h.n_cases, h.epochs, h.n_samples) == (2, 2, 4)
    assert h.counts["errored"] == 1 and h.counts["passed"] == 3
    assert h.completion == pytest.approx(3 / 4)
    assert "2 cases × 2 epochs" in repr(run)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 5), k=st.integers(1, 4), fail=st.sets(st.integers(0, 19)))
def test_the_tables_have_one_row_per_sample_and_per_sample_score(
    n: int, k: int, fail: set[int]
) -> None:
    def task(case_id: str, epoch: int) -> str:
        return "x" if (int(case_id) * k + epoch - 1) not in fail else "y"

    def a(output: str) -> float:
        return float(output == "x")

    def b(output: str) -> eb.Score:
        return eb.Score(0.5)

    run = eb.run(_frame(n), task, scorers=[a, b], epochs=k, store=None, progress=False)
    assert len(run.cases) == n * k
    assert len(run.scores) == n * k * 2
    key = run.scores.groupby(["case_id", "epoch", "score"], observed=True).size()
    assert (key == 1).all() and len(key) == n * k * 2
    expected = [0.0 if i in fail else 1.0 for i in range(n * k)]
    assert run.scores.loc[run.scores["score"] == "a", "value"].tolist() == expected


def test_pass_at_k_in_a_run_is_the_estimator_over_each_cases_epochs() -> None:
    passes = {"0": 0, "1": 2, "2": 5}  # epochs (of 5) that pass, per case

    def task(case_id: str, epoch: int) -> str:
        return "ok" if epoch <= passes[case_id] else "no"

    at2 = eb.define_score("at2", reducer=eb.pass_at(2))
    hat2 = eb.define_score("hat2", reducer=eb.pass_hat(2))

    @eb.scorer(at2, hat2)
    def both(output: str) -> dict[str, float]:
        v = float(output == "ok")
        return {"at2": v, "hat2": v}

    run = eb.run(_frame(3), task, scorers=[both], epochs=5, store=None, progress=False)
    reduced = run.reduced().set_index(["case_id", "score"], drop=False)
    for cid, c in passes.items():
        at = 1 - math.comb(5 - c, 2) / math.comb(5, 2)
        hat = math.comb(c, 2) / math.comb(5, 2)
        assert reduced.loc[(cid, "at2"), "value"] == pytest.approx(at, abs=1e-12)
        assert reduced.loc[(cid, "hat2"), "value"] == pytest.approx(hat, abs=1e-12)
    summary = run.summary().set_index("score")
    expected = sum(1 - math.comb(5 - c, 2) / math.comb(5, 2) for c in passes.values()) / 3
    assert summary.loc["at2", "mean"] == pytest.approx(expected)
    assert summary.loc["at2", "reducer"] == "pass@2" and summary.loc["at2", "epochs"] == 5
    assert summary.loc["at2", "counted"] == 15  # counts are of samples


def test_a_pass_at_k_larger_than_epochs_is_refused_before_any_case_runs() -> None:
    calls: list[str] = []
    d = eb.define_score("p", reducer=eb.pass_at(3))
    with pytest.raises(eb.ConfigurationError, match=r"needs epochs ≥ 3.*epochs=2"):
        eb.run(
            _frame(2),
            lambda q: calls.append(q) or q,
            scorers=[eb.scorer(d)(lambda output: 1.0)],
            epochs=2,
            store=None,
            progress=False,
        )
    assert calls == []


def test_rescore_keeps_the_epochs_and_each_samples_output() -> None:
    run = eb.run(
        _frame(2),
        lambda q, epoch: f"{q}-{epoch}",
        scorers=[lambda output: 1.0],
        epochs=3,
        store=None,
        progress=False,
    )
    seen: list[str] = []

    def ends_in_2(output: str) -> float:
        seen.append(output)
        return float(output.endswith("-2"))

    again = run.rescore(scorers=[ends_in_2], progress=False)
    assert sorted(seen) == sorted(f"q{i}-{e}" for i in range(2) for e in (1, 2, 3))
    assert again.scores.loc[again.scores["score"] == "ends_in_2", "epoch"].tolist() == [1, 2, 3] * 2
    assert again.summary().set_index("score").loc["ends_in_2", "mean"] == pytest.approx(1 / 3)


def test_compare_pairs_cases_by_their_reduced_values() -> None:
    def scorer(output: str) -> float:
        return float(output == "ok")

    a = eb.run(
        _frame(4),
        lambda epoch: "ok" if epoch == 1 else "no",
        scorers=[scorer],
        epochs=4,
        store=None,
        progress=False,
    )
    b = eb.run(
        _frame(4),
        lambda epoch: "ok" if epoch <= 3 else "no",
        scorers=[scorer],
        epochs=4,
        store=None,
        progress=False,
    )
    cmp = eb.compare(a, b)
    row = cmp.summary.iloc[0]
    assert (row["mean_a"], row["mean_b"], row["n_paired"]) == (0.25, 0.75, 4)
    assert cmp.cases["delta"].tolist() == [0.5] * 4  # one pair per case, not per epoch


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 6),
    k=st.integers(1, 4),
    cells=st.lists(
        st.one_of(st.sampled_from([0.0, 1.0, 0.25, "unscored", "raise", "error"])),
        min_size=24,
        max_size=24,
    ),
    reducer=st.sampled_from(["mean", "median", "min", "max", "mode"]),
)
def test_reduced_is_a_groupby_of_the_scores_and_summary_means_stay_in_0_1(
    n: int, k: int, cells: list[Any], reducer: str
) -> None:
    def task(case_id: str, epoch: int) -> str:
        if cells[int(case_id) * k + epoch - 1] == "error":
            raise RuntimeError("the task failed")
        return case_id

    def scorer(output: str, epoch: int) -> Any:
        cell = cells[int(output) * k + epoch - 1]
        if cell == "unscored":
            return eb.Unscored("not applicable")
        if cell == "raise":
            raise ValueError("scorer failed")
        return cell

    d = eb.define_score("s", reducer=reducer, errors="zero" if n % 2 else "exclude")
    run = eb.run(
        _frame(n), task, scorers=[eb.scorer(d)(scorer)], epochs=k, store=None, progress=False
    )
    scores = run.scores
    by = scores.groupby("case_id", observed=True, sort=False)["counted"]
    how = {"mean": "mean", "median": "median", "min": "min", "max": "max"}
    if reducer == "mode":
        expected = by.agg(lambda x: x.dropna().mode().min() if x.notna().any() else np.nan)
    else:
        expected = by.agg(how[reducer])
    got = run.reduced().set_index("case_id")["value"]
    np.testing.assert_allclose(got.to_numpy(), expected.to_numpy(), equal_nan=True)
    mean = run.summary()["mean"].iloc[0]
    values = expected.dropna().to_numpy()
    if values.size == 0:
        assert math.isnan(mean)
    else:
        assert 0.0 <= mean <= 1.0 and mean == pytest.approx(values.mean())


def test_scoring_an_output_column_with_epochs_scores_each_cases_output_every_epoch() -> None:
    frame = pd.DataFrame({"answer": ["a", "b", "c"]})
    run = eb.run(
        frame,
        output_column="answer",
        scorers=[lambda output, epoch: float(epoch == 1)],
        epochs=2,
        store=None,
        progress=False,
    )
    assert run.cases["output"].tolist() == ["a", "a", "b", "b", "c", "c"]
    assert run.scores["value"].tolist() == [1.0, 0.0] * 3


def test_a_judge_prompt_placeholder_named_epoch_binds_to_the_samples_epoch() -> None:
    seen: list[str] = []

    async def client(messages: Any, tool: Any) -> dict[str, Any]:
        seen.append(messages[0]["content"])
        return {"score": 100}

    judge = eb.judge("q", "epoch {epoch}: {output}", client=client)
    run = eb.run(pd.DataFrame({"x": ["a"]}), lambda x: x, scorers=[judge], epochs=2,
                 store=None, progress=False)  # fmt: skip
    assert sorted(seen) == ["epoch 1: a", "epoch 2: a"]
    assert run.scores["value"].tolist() == [1.0, 1.0]
