"""Bad usage input: hostile amounts never crash a run nor count as numbers; bad options refused.

Every hostile value goes in through each channel a task has: `ctx.record_usage`'s keywords,
a usage dict and a usage object (`prompt_tokens` / `completion_tokens`). Each case records a
valid call first, so the test also sees that the hostile call added nothing. The figure
(values tried, crashes, values counted as numbers) is printed and attached to the report.
Bad `prices=` and `max_cost=` are `ConfigurationError`s before the task is ever called
(docs/cost.md).
"""

from __future__ import annotations

import logging
import math
import types
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _hostile import (
    ClassRaises,
    FloatNotFloat,
    FloatRaises,
    Hostile,
    RaisingMapping,
    armed,
)

import evalbook as eb
from _public import raw_controls


class ReprScript:
    """A number-like object whose repr is markup, an escape sequence and a lone surrogate."""

    def __repr__(self) -> str:
        return "<script>alert(1)</script>\x1b[2J\ud800"


class HugeFloat(float):
    """A float whose `__float__` raises (a user's float subclass)."""

    def __float__(self) -> float:
        raise RuntimeError("no float")


class AttrRaises:
    """A usage object whose token attributes raise on reading."""

    @property
    def prompt_tokens(self) -> int:
        raise RuntimeError("no tokens")

    @property
    def completion_tokens(self) -> int:
        raise RuntimeError("no tokens")


# (label, factory): fresh objects for each case; every one must leave the call unknown
HOSTILE: list[tuple[str, Callable[[], Any]]] = [
    ("-1", lambda: -1),
    ("-0.5", lambda: -0.5),
    ("nan", lambda: math.nan),
    ("inf", lambda: math.inf),
    ("-inf", lambda: -math.inf),
    ("True", lambda: True),
    ("False", lambda: False),
    ("np.bool_", lambda: np.bool_(True)),
    ("np.nan", lambda: np.float64("nan")),
    ("np.int64(-3)", lambda: np.int64(-3)),
    ("text", lambda: "12"),
    ("bytes", lambda: b"12"),
    ("10**400", lambda: 10**400),
    ("2**64", lambda: 2**64),
    ("Fraction(10**400)", lambda: Fraction(10**400)),
    ("Decimal('NaN')", lambda: Decimal("NaN")),
    ("list", lambda: [1]),
    ("dict", lambda: {"n": 1}),
    ("FloatRaises", lambda: FloatRaises(RuntimeError)),
    ("FloatRaises(KeyError)", lambda: FloatRaises(KeyError)),
    ("FloatNotFloat", FloatNotFloat),
    ("float subclass raising", lambda: HugeFloat(1.0)),
    ("ClassRaises", ClassRaises),
    ("Hostile", Hostile),
    ("repr <script>", ReprScript),
]
CHANNELS = ["input_tokens", "output_tokens", "cost", "dict", "object"]


def _record(ctx: Any, channel: str, value: Any) -> None:
    if channel == "dict":
        ctx.record_usage({"prompt_tokens": value, "completion_tokens": 1})
    elif channel == "object":
        ctx.record_usage(types.SimpleNamespace(prompt_tokens=1, completion_tokens=value))
    else:
        ctx.record_usage(**{channel: value})


def _hostile_run(tmp_path: Path, channel: str) -> tuple[eb.Run, list[str]]:
    labels = [label for label, _ in HOSTILE]
    factories = dict(HOSTILE)

    def task(label: str, ctx: Any) -> str:
        ctx.record_usage(input_tokens=5, output_tokens=7, cost=0.25)  # the valid call
        value = factories[label]()
        with armed():
            _record(ctx, channel, value)
        return "ok"

    @eb.scorer
    def done(output: str) -> float:
        return 1.0

    data = pd.DataFrame({"id": labels, "label": labels})
    run = eb.run(data, task=task, scorers=[done], store=tmp_path, name=channel, progress=False)
    return run, labels


@pytest.mark.parametrize("channel", CHANNELS)
def test_hostile_amounts_leave_the_call_unknown(
    tmp_path: Path,
    channel: str,
    caplog: pytest.LogCaptureFixture,
    record_property: Callable[[str, object], None],
) -> None:
    with caplog.at_level(logging.WARNING, logger="evalbook"):
        run, labels = _hostile_run(tmp_path, channel)
    crashes = int((run.cases["outcome"] != "passed").sum())
    usage = run.usage().set_index("case_id").loc[labels]
    # only the valid first call counts: any other amount would be a hostile value read as one
    counted = (
        (usage["input_tokens"] != 5)
        | (usage["output_tokens"] != 7)
        | (usage["cost"] != 0.25)
        | (usage["calls"] != 2)
    )
    figure = (
        f"usage channel {channel}: {len(labels)} hostile values tried, {crashes} crashes, "
        f"{int(counted.sum())} counted as numbers"
    )
    print(figure)
    record_property(f"usage_bad_input_{channel}", figure)
    assert crashes == 0, run.cases[["case_id", "error_message"]]
    assert not counted.any(), usage[counted]
    for label, message in usage["invalid"].items():
        assert isinstance(message, str), label
        name = {"dict": "input_tokens", "object": "output_tokens"}.get(channel, channel)
        assert f"{name} must be a finite number >= 0" in message, (label, message)
        assert raw_controls(message) == [], (label, message)  # no control shown raw
        message.encode("utf-8")  # no lone surrogate: it is written to the log
    warned = [r for r in caplog.records if "invalid usage" in r.getMessage()]
    assert len(warned) == 1, [r.getMessage() for r in warned]
    loaded = eb.load_run(run.path)
    pd.testing.assert_frame_equal(loaded.usage(), run.usage())


def test_none_is_not_reported_not_invalid(tmp_path: Path) -> None:
    def task(x: int, ctx: Any) -> str:
        ctx.record_usage(input_tokens=None, output_tokens=None, cost=None)
        ctx.record_usage({"prompt_tokens": None})
        return "ok"

    run = eb.run(pd.DataFrame({"x": [1]}), task=task, scorers=[], store=None, progress=False)
    row = run.usage().iloc[0]
    assert row["calls"] == 2
    assert math.isnan(row["input_tokens"]) and math.isnan(row["cost"])
    assert row["invalid"] is None or pd.isna(row["invalid"])
    assert math.isnan(run.cases["cost"].iloc[0])


@pytest.mark.parametrize(
    "usage",
    [RaisingMapping(), AttrRaises(), ClassRaises(), Hostile(), "prompt_tokens", 12, [1, 2]],
    ids=["RaisingMapping", "AttrRaises", "ClassRaises", "Hostile", "text", "int", "list"],
)
def test_hostile_usage_objects_never_raise(tmp_path: Path, usage: Any) -> None:
    def task(x: int, ctx: Any) -> str:
        with armed():
            ctx.record_usage(usage)
        return "ok"

    run = eb.run(pd.DataFrame({"x": [1]}), task=task, scorers=[], store=tmp_path, progress=False)
    assert run.cases["outcome"].tolist() == ["passed"], run.cases["error_message"].tolist()
    row = run.usage().iloc[0]
    assert row["calls"] == 1
    assert math.isnan(row["input_tokens"]) and math.isnan(row["output_tokens"])


def _refused(tmp_path: Path, **options: Any) -> str:
    called: list[int] = []

    def task(x: int) -> str:
        called.append(x)
        return "ok"

    with pytest.raises(eb.ConfigurationError) as info:
        eb.run(
            pd.DataFrame({"x": [1, 2]}),
            task=task,
            scorers=[],
            store=tmp_path,
            progress=False,
            **options,
        )
    assert called == [], "the task ran before the options were checked"
    return str(info.value)


@pytest.mark.parametrize(
    "prices",
    [
        [("m", (1, 2))],
        "m=1,2",
        3,
        {1: (1.0, 2.0)},
        {("m",): (1.0, 2.0)},
        {"": (1.0, 2.0)},
        {"m": 1.0},
        {"m": (1.0,)},
        {"m": (1.0, 2.0, 3.0)},
        {"m": "12"},
        {"m": {1.0, 2.0}},
        {"m": (-1.0, 2.0)},
        {"m": (1.0, math.nan)},
        {"m": (math.inf, 1.0)},
        {"m": (True, 1.0)},
        {"m": (None, 1.0)},
        {"m": ("1", 1.0)},
        {"m": (10**400, 1.0)},
    ],
)
def test_bad_prices_are_refused_before_any_case(tmp_path: Path, prices: Any) -> None:
    message = _refused(tmp_path, prices=prices)
    assert "prices=" in message and "usd_per_1M" in message, message


@pytest.mark.parametrize("max_cost", [-1, -0.01, math.nan, math.inf, "5", True, [1.0]])
def test_bad_max_cost_is_refused_before_any_case(tmp_path: Path, max_cost: Any) -> None:
    message = _refused(tmp_path, max_cost=max_cost)
    assert "max_cost" in message, message


class HostileName(str):
    """A model name whose hash and equality raise (looked up in `prices=`)."""

    def __hash__(self) -> int:
        raise RuntimeError("no hash")

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no eq")


@pytest.mark.parametrize(
    ("model", "cost"),
    [(HostileName("m"), 0.001), (ClassRaises(), None), (Hostile(), None), (5, None), ("m", 0.001)],
    ids=["str-subclass", "ClassRaises", "Hostile", "int", "plain"],
)
def test_a_hostile_model_name_never_raises(model: Any, cost: float | None) -> None:
    def task(x: int, ctx: Any) -> str:
        with armed():
            ctx.record_usage(input_tokens=1000, output_tokens=0, model=model)
        return "ok"

    run = eb.run(
        pd.DataFrame({"x": [1]}),
        task=task,
        scorers=[],
        store=None,
        progress=False,
        prices={"m": (1.0, 2.0)},
    )
    assert run.cases["outcome"].tolist() == ["passed"], run.cases["error_message"].tolist()
    assert run.cases["input_tokens"].tolist() == [1000]
    got = run.cases["cost"].iloc[0]
    assert got == cost if cost is not None else math.isnan(got)  # priced by its text only
