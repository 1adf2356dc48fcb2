"""Property: hostile values through every channel user code has finish the run, one record each.

Channels: a sync scorer's and an async scorer's return value, a scorer bound to two scores
(its dict), `eb.Score` fields, `eb.Unscored` reasons, exceptions a scorer or task raises
(hostile `__str__`, `SkipScore` with a hostile reason, a custom `BaseException`), and
`ctx.record_score` / `ctx.record_unscored`. The figure (values tried / escaped exceptions) is
printed and attached to the test report (`record_property`). `EVALBOOK_FAULT_EXAMPLES` sets how
many runs hypothesis tries (default 60, bounded for CI).
"""

from __future__ import annotations

import asyncio
import gc
import json
import math
import os
import warnings
from collections import Counter
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest
from _hostile import (
    ARMED,
    BadText,
    Changing,
    ClassRaises,
    Custom,
    FloatNotFloat,
    FloatRaises,
    Liar,
    NotText,
    RaisingMapping,
    StrNotText,
    StrRaises,
    Sub,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb

EXAMPLES = int(os.environ.get("EVALBOOK_FAULT_EXAMPLES", "60"))
ERRORS = (ValueError, RuntimeError, TypeError, KeyError, RecursionError, MemoryError)


def _expected_warnings(caught: list[warnings.WarningMessage]) -> None:
    """The only warning a hostile run may give: a lone surrogate drawn in some text, replaced
    (once per run). Anything else is a finding, not noise."""
    for w in caught:
        assert w.category is UnicodeWarning, f"unexpected {w.category.__name__}: {w.message}"
        assert "held a lone surrogate, replaced by" in str(w.message)
    assert len(caught) <= 1, [str(w.message) for w in caught]


def _holds(r: eb.Run, scores: pd.DataFrame, n: int, names: set[str], store: bool) -> None:
    """The invariant of every channel: one record per (case, score), values in [0, 1]."""
    assert len(scores) == n * len(names)
    assert not scores.duplicated(["case_id", "score"]).any()
    assert set(scores["score"].astype(str)) == names
    counted = scores["counted"].dropna()
    assert ((counted >= 0) & (counted <= 1)).all()
    held = scores.loc[scores["status"] == "scored", "value"]
    assert held.map(lambda v: type(v) is float and 0 <= v <= 1).all()
    if store:
        assert len(eb.load_run(r.path).scores) == len(scores)


def _self_ref() -> dict[str, Any]:
    data: dict[str, Any] = {}
    data["me"] = [data]
    return data


def _made(*factories: Callable[[], Any]) -> st.SearchStrategy[Any]:
    """Fresh objects at each draw (some hold state)."""
    return st.sampled_from(factories).map(lambda f: f())


error_kinds = st.sampled_from(ERRORS)
texts = (
    st.none()
    | st.text(max_size=8)
    | st.sampled_from(["\ud800", "\x00\x1b[31m\u202e"])
    | error_kinds.map(BadText)
    | _made(NotText, lambda: Sub("s"), lambda: 10**5000, ClassRaises, lambda: "x" * 10_000)
)
leaves = (
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats()
    | st.text(max_size=4)
    | _made(lambda: 10**4300, lambda: {1, 2}, lambda: object(), lambda: math.nan)
)
metadatas = (
    st.none()
    | st.dictionaries(st.text(max_size=3) | st.integers(), leaves, max_size=3)
    | _made(lambda: [1], lambda: "abc", _self_ref, RaisingMapping, lambda: {"n": 10**4300})
    | st.builds(dict, v=texts)
)
reals = (
    st.floats()
    | st.integers(-2, 3)
    | st.decimals(allow_nan=True, allow_infinity=True)
    | st.fractions()
    | st.floats().map(np.float64)
    | st.booleans().map(np.bool_)
    | error_kinds.map(FloatRaises)
    | _made(Changing, Liar, FloatNotFloat, lambda: 10**5000, lambda: Decimal("sNaN"))
)
plain = reals | st.text(max_size=3) | st.none() | _made(ClassRaises, lambda: [0.5], object)
wrapped = st.builds(eb.Score, plain, rationale=texts, label=texts, metadata=metadatas) | st.builds(
    eb.Unscored, texts
)
values = plain | wrapped
# what a sync scorer returns: not a bare ClassRaises (its own test is at the end)
sync_values = (reals | st.text(max_size=3) | st.none() | _made(lambda: [0.5], object)) | wrapped


def _skip_with(reason: Any) -> eb.SkipScore:
    exc = eb.SkipScore("r")
    exc.reason = reason  # a reason set after construction skips SkipScore's own str()
    return exc


raised_exc = (
    error_kinds.map(lambda k: k("boom"))
    | _made(StrRaises, StrNotText, Custom, StopIteration, lambda: eb.SkipScore("no"))
    | texts.map(_skip_with)
)
# what one channel does for one case: return (or record) a value, or raise
actions = st.tuples(st.sampled_from(["give", "raise"]), values, raised_exc)
sync_actions = st.tuples(st.sampled_from(["give", "raise"]), sync_values, raised_exc)
two = sync_values | st.builds(lambda a, b: {"b1": a, "b2": b}, values, values)
two = two | _made(RaisingMapping)
graders = st.none() | _made(lambda: eb.Grader(kind="rule", id="r"), lambda: "x")
cases = st.fixed_dictionaries(
    {
        "a": sync_actions,
        "c": actions,
        "b": two,
        "t": st.tuples(values, texts, metadatas, graders),
        "u": texts,
        "task": st.none() | raised_exc,
    }
)
A, C, B1, B2, T, U = (eb.define_score(n) for n in ("a", "c", "b1", "b2", "t", "u"))
# the cases' plans, read by index: hostile objects reach user code only, not the input data
PLANS: list[dict[str, Any]] = []


def _act(action: tuple[str, Any, BaseException]) -> Any:
    how, value, exc = action
    if how == "raise":
        raise exc
    return value


@eb.scorer(A)
def sync_scorer(k: int) -> Any:
    return _act(PLANS[k]["a"])


@eb.scorer(C)
async def async_scorer(k: int) -> Any:
    return _act(PLANS[k]["c"])


@eb.scorer(B1, B2)
def two_scores(k: int) -> Any:
    return PLANS[k]["b"]


def task(k: int, ctx: Any) -> str:
    plan = PLANS[k]
    value, rationale, metadata, grader = plan["t"]
    ctx.record_score(T, value, rationale=rationale, metadata=metadata, grader=grader)
    ctx.record_unscored(U, plan["u"])
    if plan["task"] is not None:
        raise plan["task"]
    return "done"


def test_hostile_values_never_escape_a_run(record_property: Callable[[str, object], None]) -> None:
    tried, escaped = [0], [0]
    names = {d.name for d in (A, C, B1, B2, T, U)}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(plans=st.lists(cases, min_size=1, max_size=3), store=st.booleans())
    def one_run(plans: list[dict[str, Any]], store: bool) -> None:
        tried[0] += 9 * len(plans)  # values, texts and exceptions drawn per case
        PLANS[:] = plans
        df = pd.DataFrame({"k": range(len(plans))})
        ARMED[0] = True
        # what earlier tests of this worker left for the garbage collector (an unclosed
        # socket's ResourceWarning) is collected here, not inside this run's warnings
        gc.collect()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                r = eb.run(
                    df,
                    task=task,
                    scores=[T, U],
                    scorers=[sync_scorer, async_scorer, two_scores],
                    store="runs" if store else None,
                    progress=False,
                )
                scores = r.scores
        except BaseException:
            escaped[0] += 1
            raise
        finally:
            ARMED[0] = False
        _expected_warnings(caught)
        _holds(r, scores, len(plans), names, store)

    try:
        one_run()
    finally:
        figure = f"hostile values tried: {tried[0]}, escaped exceptions: {escaped[0]}"
        print(figure)
        record_property("hostile_values", figure)


# -- the judge channel: what a judge client replies, or raises ------------------------------

BIG = "x" * 10_000_000  # the largest reply text drawn: 10 MB (built once, shared)
BIG_JSON = json.dumps({"score": 50, "justification": BIG})


class StatusRaises(Exception):
    """An SDK-like error whose `status_code` cannot be read."""

    @property
    def status_code(self) -> int:
        raise RuntimeError("no status")


class ResponseRaises(Exception):
    """An SDK-like error whose `response` cannot be read."""

    @property
    def response(self) -> Any:
        raise RuntimeError("no response")


class TooMany(Exception):
    """A transient SDK-like error (429): retried once, then judge_raised."""

    status_code = 429


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
judge_scores = (
    st.sampled_from([989898, 100, 0, 50, 100.0000001, -1, 10**400, 1e308, -0.0])
    | st.integers(-200, 200)
    | json_values
)
reply_dicts = st.fixed_dictionaries(
    {}, optional={"score": judge_scores, "justification": json_values, "extra": json_values}
)
reply_texts = (
    reply_dicts.map(json.dumps)  # NaN and Infinity tokens included (allow_nan)
    | st.sampled_from(
        [
            '{"score": NaN}',
            '{"score": -Infinity, "justification": 3}',
            '{"score": 1e999}',
            '{"score": 989898}',
            '{"score": null}',
            '{"score": "50"}',
            '{"score": {"score": 50}}',
            '{"justification": "no score"}',
            '```json\n{"score": 50}\n```',
            'here you go: {"score": 50}',
            '{"score": 50',
            "not json",
            "",
            "[]",
            "null",
            "50",
            BIG_JSON,
        ]
    )
    | st.text(max_size=20)
)
judge_replies = (
    reply_dicts
    | reply_texts
    | reply_texts.map(str.encode)
    | st.builds(dict, score=reals, justification=texts)
    | _made(
        RaisingMapping,
        ClassRaises,
        BadText,
        object,
        lambda: Sub("{}"),
        lambda: b"\xff\xfe{",
        lambda: {"score": 50, "justification": BIG},
        lambda: {"score": 50, "justification": BadText()},
        lambda: {"score": 10**5000},
    )
)
judge_raises = raised_exc | _made(
    TimeoutError,
    ConnectionError,
    StatusRaises,
    ResponseRaises,
    lambda: TooMany("slow down"),
    asyncio.CancelledError,
    GeneratorExit,
)
judge_actions = st.tuples(st.sampled_from(["give", "raise"]), judge_replies, judge_raises)
J1, J2 = eb.define_score("j1"), eb.define_score("j2")
VOTES: list[tuple[Any, ...]] = []  # per case: the sync judge's action, the async judge's


def _asked(messages: list[dict[str, Any]]) -> int:
    return int(str(messages[-1]["content"]).rsplit(" ", 1)[-1])


def sync_client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
    return _act(VOTES[_asked(messages)][0])


async def async_client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
    return _act(VOTES[_asked(messages)][1])


JUDGES = [
    eb.judge(J1, "grade case {k}", client=sync_client, retries=1, backoff=0),
    eb.judge(J2, "grade case {k}", client=async_client, votes=2, reducer="mean", backoff=0),
]


def test_hostile_judge_replies_never_escape_a_run(
    record_property: Callable[[str, object], None],
) -> None:
    tried, escaped = [0], [0]
    outcomes: Counter[str] = Counter()  # what the records became, for the figure

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        votes=st.lists(st.tuples(judge_actions, judge_actions), min_size=1, max_size=3),
        store=st.booleans(),
    )
    def one_run(votes: list[tuple[Any, ...]], store: bool) -> None:
        tried[0] += 2 * len(votes)  # a reply and an exception per judge and case
        VOTES[:] = votes
        df = pd.DataFrame({"k": range(len(votes))})
        ARMED[0] = True
        # what earlier tests of this worker left for the garbage collector (an unclosed
        # socket's ResourceWarning) is collected here, not inside this run's warnings
        gc.collect()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                r = eb.run(
                    df,
                    task=lambda k: "done",
                    scorers=JUDGES,
                    store="runs" if store else None,
                    progress=False,
                )
                scores = r.scores
        except BaseException:
            escaped[0] += 1
            raise
        finally:
            ARMED[0] = False
        _expected_warnings(caught)
        _holds(r, scores, len(votes), {"j1", "j2"}, store)
        reasons = scores["reason"].astype(object)
        outcomes.update(reasons.where(reasons.notna(), scores["status"].astype(object)).map(str))

    try:
        one_run()
    finally:
        shown = ", ".join(f"{k} {v}" for k, v in outcomes.most_common())
        figure = (
            f"hostile judge replies and errors tried: {tried[0]}, escaped: {escaped[0]} "
            f"(records: {shown})"
        )
        print(figure)
        record_property("hostile_judge_replies", figure)


@pytest.mark.parametrize(
    "exc",
    [StrRaises(), StrNotText(), StatusRaises(), ResponseRaises()],
    ids=["str-raises", "str-not-text", "status-raises", "response-raises"],
)
def test_a_client_error_with_hostile_attributes_is_judge_raised(exc: Exception) -> None:
    """Found by the property above: these were `scorer_raised`, naming the judge's own
    secondary error (reading `str(exc)` or `exc.status_code`) instead of the client's."""
    VOTES[:] = [(("raise", None, exc), ("raise", None, exc))]
    r = eb.run(pd.DataFrame({"k": [0]}), task=lambda k: "d", scorers=JUDGES, progress=False)
    assert r.scores["reason"].tolist() == ["judge_raised", "judge_raised"]
    assert r.scores["message"].str.contains(type(exc).__name__, regex=False).all()


@pytest.mark.parametrize("value", [Changing(), Liar()], ids=["changing", "liar"])
def test_a_value_is_stored_as_the_float_that_was_checked(value: Any) -> None:
    PLANS[:] = [{"a": ("give", value, None)}]
    r = eb.run(
        pd.DataFrame({"k": [0]}),
        task=lambda k: "x",
        scorers=[sync_scorer],
        store=None,
        progress=False,
    )
    assert r.scores["value"].fillna(-1).tolist() == [0.5 if isinstance(value, Changing) else -1]


def test_a_sync_scorer_returning_an_uninspectable_object_is_invalid_score() -> None:
    PLANS[:] = [{"a": ("give", ClassRaises(), None)}]
    ARMED[0] = True
    try:
        r = eb.run(
            pd.DataFrame({"k": [0]}),
            task=lambda k: "x",
            scorers=[sync_scorer],
            store=None,
            progress=False,
        )
    finally:
        ARMED[0] = False
    assert r.scores["reason"].tolist() == ["invalid_score"]


def test_an_uninspectable_object_is_not_an_awaitable() -> None:
    """A sync scorer's coroutine is awaited and scored; an object that cannot even be
    inspected, returned by a sync scorer or awaited from an async one, is not taken for an
    awaitable (the check never raises): it is that record's invalid_score."""

    async def later() -> float:
        return 1.0

    def hands_back(k: int) -> Any:
        return later() if k == 0 else ClassRaises()

    async def gives(k: int) -> Any:
        return 0.5 if k == 0 else ClassRaises()

    ARMED[0] = True
    try:
        r = eb.run(
            pd.DataFrame({"k": [0, 1]}),
            task=lambda k: "x",
            scorers=[eb.scorer("sync")(hands_back), eb.scorer("async")(gives)],
            store=None,
            progress=False,
        )
    finally:
        ARMED[0] = False
    rows = r.scores[["score", "status", "value", "reason"]].astype(object)
    assert rows.where(rows.notna(), None).values.tolist() == [
        ["sync", "scored", 1.0, None],
        ["async", "scored", 0.5, None],
        ["sync", "error", None, "invalid_score"],
        ["async", "error", None, "invalid_score"],
    ]
