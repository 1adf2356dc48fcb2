"""Properties of the usage tables: sums of what was reported, NaN for what was not, same on load.

Hypothesis draws, for every sample of a run (cases x epochs), a list of calls per source: the
task records through `ctx.record_usage` (keywords or a usage dict), two scorers record through
the sample's meter under their score names. Each amount is absent, valid, or invalid (a call
with an invalid amount adds nothing but its count). Valid amounts are whole tokens and costs in
sixty-fourths of a dollar, so every sum is exact whatever order the tables add in. The tables
must equal a plain model of those calls, and be the same after `eb.load_run` from the Parquet
files and from the log alone (docs/cost.md, docs/file-formats.md).
"""

from __future__ import annotations

import math
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._runner._meter import current_meter

SOURCES = ("task", "judge_a", "judge_b")
AMOUNTS = ("input_tokens", "output_tokens", "cost")
FINAL_FILES = ("cases.parquet", "scores.parquet", "data.parquet", "summary.json")

Call = dict[str, Any]  # amount name -> value (absent when not reported), "dict" -> channel
Plan = dict[tuple[str, int], dict[str, list[Call]]]  # (case_id, epoch) -> source -> calls

invalid = st.sampled_from([-1, -0.5, math.nan, math.inf, -math.inf, True, "3", 2**60])
tokens = st.integers(0, 10**6) | invalid
costs = st.integers(0, 640).map(lambda k: k / 64) | invalid
call = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": tokens,
        "output_tokens": tokens,
        "cost": costs,
        "dict": st.booleans(),
    },
)
calls = st.lists(call, max_size=3)


@st.composite
def plans(draw: st.DrawFn) -> tuple[list[str], int, Plan]:
    """Case ids, epochs and every sample's calls by source."""
    n = draw(st.integers(1, 4))
    epochs = draw(st.integers(1, 2))
    ids = [f"c{i}" for i in range(n)]
    plan: Plan = {
        (cid, e): {s: draw(calls) for s in SOURCES} for cid in ids for e in range(1, epochs + 1)
    }
    return ids, epochs, plan


def _valid(value: Any) -> bool:
    """Whether `ctx.record_usage` takes the value as a number (bools and text are refused)."""
    if type(value) is int:
        return value <= 2**53
    return type(value) is float and math.isfinite(value)


def _add(total: float, value: float) -> float:
    return value if math.isnan(total) else total + value


def expected_usage(plan: Plan, ids: list[str], epochs: int) -> pd.DataFrame:
    """The model: a call with an invalid amount adds its count only; others add what they say."""
    rows = []
    for cid in ids:
        for e in range(1, epochs + 1):
            for source in SOURCES:
                made = plan[cid, e][source]
                if not made:
                    continue
                sums = dict.fromkeys(AMOUNTS, math.nan)
                refused = False
                for c in made:
                    amounts = {k: c[k] for k in AMOUNTS if k in c}
                    if all(_valid(v) and v >= 0 for v in amounts.values()):
                        for k, v in amounts.items():
                            sums[k] = _add(sums[k], float(v))
                    else:
                        refused = True
                rows.append({"case_id": cid, "epoch": e, "source": source, "calls": len(made)})
                rows[-1].update(sums, refused=refused)
    columns = ["case_id", "epoch", "source", "calls", *AMOUNTS, "refused"]
    return pd.DataFrame(rows, columns=columns)


def _record(call: Call, *, task_ctx: Any = None) -> None:
    amounts = {k: call[k] for k in AMOUNTS if k in call}
    if task_ctx is None:
        meter = current_meter()
        assert meter is not None, "a scorer runs with its sample's meter"
        meter.record(**amounts)
    elif call.get("dict") and "cost" not in amounts:
        usage = {"prompt_tokens": amounts.get("input_tokens")}
        usage["completion_tokens"] = amounts.get("output_tokens")
        task_ctx.record_usage(usage)
    else:
        task_ctx.record_usage(**amounts)


def _run(plan: Plan, ids: list[str], epochs: int, store: Path) -> eb.Run:
    def task(question: str, case_id: str, epoch: int, ctx: Any) -> str:
        for c in plan[case_id, epoch]["task"]:
            _record(c, task_ctx=ctx)
        return question

    @eb.scorer
    def judge_a(output: str, case_id: str, epoch: int) -> float:
        for c in plan[case_id, epoch]["judge_a"]:
            _record(c)
        return 1.0

    @eb.scorer
    async def judge_b(output: str, case_id: str, epoch: int) -> float:
        for c in plan[case_id, epoch]["judge_b"]:
            _record(c)
        return 0.0

    data = pd.DataFrame({"id": ids, "question": ids})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid usage warns once: expected here
        return eb.run(
            data,
            task=task,
            scorers=[judge_a, judge_b],
            epochs=epochs,
            store=store,
            name="usage",
            progress=False,
            concurrency=3,
        )


def _sum_or_nan(values: pd.Series) -> float:
    known = values.dropna()
    return float(known.sum()) if len(known) else math.nan


def _check_tables(run: eb.Run, expected: pd.DataFrame) -> None:
    usage = run.usage()
    got = usage.assign(refused=usage["invalid"].map(lambda v: isinstance(v, str)))
    order = ["case_id", "epoch", "source"]
    got = got[list(expected.columns)].sort_values(order).reset_index(drop=True)
    want = expected.sort_values(order).reset_index(drop=True)
    # `refused`: the invalid column names a reason exactly where a call was refused
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert usage["invalid"].map(lambda v: isinstance(v, str) or pd.isna(v)).all()
    # run.cases: each sample's amounts are the sums over its sources (NaN when none known)
    by_sample = usage.groupby(["case_id", "epoch"])
    cases = run.cases.set_index(["case_id", "epoch"])
    for name in AMOUNTS:
        sums = by_sample[name].apply(_sum_or_nan)
        for key, value in cases[name].items():
            want_v = sums.get(key, math.nan)
            assert value == want_v or (math.isnan(value) and math.isnan(want_v)), (key, name)
    # usage_summary: totals of run.usage(), mean cost over samples whose cost is known
    summary = run.usage_summary().iloc[0]
    assert summary["calls"] == usage["calls"].sum()
    for name in AMOUNTS:
        total = _sum_or_nan(usage[name])
        assert summary[name] == total or (math.isnan(summary[name]) and math.isnan(total))
    known = cases["cost"].dropna()
    assert summary["n_cost_known"] == len(known)
    mean = float(known.mean()) if len(known) else math.nan
    assert summary["cost_per_case"] == mean or (
        math.isnan(summary["cost_per_case"]) and math.isnan(mean)
    )


def _views(run: eb.Run) -> Mapping[str, pd.DataFrame]:
    amounts = ["case_id", "epoch", *AMOUNTS]
    return {
        "usage": run.usage(),
        "cases": run.cases[amounts],
        "summary": run.usage_summary().drop(columns=["latency_p50_s", "latency_p95_s"]),
        "latency": run.usage_summary()[["latency_p50_s", "latency_p95_s"]],
    }


def _same(a: eb.Run, b: eb.Run, where: str) -> None:
    for name, frame in _views(a).items():
        other = _views(b)[name]
        pd.testing.assert_frame_equal(frame, other, obj=f"{name} ({where})")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(plans())
def test_usage_tables_are_sums_of_valid_reports(drawn: tuple[list[str], int, Plan]) -> None:
    ids, epochs, plan = drawn
    with tempfile.TemporaryDirectory() as tmp:
        run = _run(plan, ids, epochs, Path(tmp))
        _check_tables(run, expected_usage(plan, ids, epochs))
        loaded = eb.load_run(run.path)
        _same(run, loaded, "loaded from Parquet")
        for name in FINAL_FILES:
            (Path(run.path) / name).unlink()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # loading from the log alone may say so
            from_log = eb.load_run(run.path)
        _same(run, from_log, "loaded from events.jsonl alone")


def test_an_amount_nobody_reported_is_nan_not_zero(tmp_path: Path) -> None:
    plan: Plan = {("c0", 1): {"task": [{"input_tokens": 4}], "judge_a": [{}], "judge_b": []}}
    run = _run(plan, ["c0"], 1, tmp_path)
    usage = run.usage().set_index("source")
    assert usage.loc["task", "input_tokens"] == 4
    assert np.isnan(usage.loc["task", ["output_tokens", "cost"]].astype(float)).all()
    assert np.isnan(usage.loc["judge_a", list(AMOUNTS)].astype(float)).all()
    assert usage.loc["judge_a", "calls"] == 1
    assert "judge_b" not in usage.index  # a source that made no call has no row
    summary = run.usage_summary().iloc[0]
    assert math.isnan(summary["cost"]) and summary["n_cost_known"] == 0
    assert math.isnan(run.cases["output_tokens"].iloc[0])
