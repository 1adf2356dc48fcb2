"""A transcript kept compact from its steps (`KeptTranscript.of_steps`, issue 31) is the one kept
of the `Transcript` they make: the same counts, output, steps table rows and transcript made
again, or the same refusal; plain steps are kept without building their messages."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalbook._interop import _kept
from evalbook._interop._kept import KeptTranscript, pool_steps
from evalbook._model._transcript import Transcript

_ids = st.sampled_from(["c1", "c2", "é"])
_texts = st.none() | st.sampled_from(["", "hi", "über", "a\ud800b", "4"])
# amounts: plain ones, and what a message refuses or converts (a bool, a huge or negative one)
_amounts = (
    st.none()
    | st.integers(0, 10**6)
    | st.floats(0, 1e6)
    | st.sampled_from(
        [-1, -0.0, 2**53, 2**53 + 1, 10**400, math.nan, math.inf, True, "3", 1.5e308 * 10]
    )
)
_arguments = (
    st.none()
    | st.sampled_from(["{}", '{"q": 1}', "é", 3])
    | st.dictionaries(
        st.sampled_from(["q", "n", "ü"]), st.integers(-2, 2) | st.text(max_size=3), max_size=2
    )
)
_call = st.fixed_dictionaries(
    {"id": _ids, "function": st.fixed_dictionaries({"name": st.sampled_from(["look", "é"])},
                                                   optional={"arguments": _arguments})},
    optional={"type": st.just("function"), "extra": st.just(1)},
)  # fmt: skip
# steps of the plain kind (most of an Inspect agent's): ASCII text, amounts a message keeps as
# they are, tool results answering the calls "c1" and "c2" (made before them, or not)
_ascii = st.none() | st.sampled_from(["", "hi", "4", "look"])
_plain_amounts = st.none() | st.integers(0, 10**6) | st.floats(0, 1e6) | st.just(-0.0)
_plain_call = st.fixed_dictionaries(
    {"id": st.sampled_from(["c1", "c2"]),
     "function": st.fixed_dictionaries({"name": st.sampled_from(["look", "add"])},
                                       optional={"arguments": st.none() | st.just("{}") |
                                                 st.dictionaries(st.just("q"), st.integers())})}
)  # fmt: skip
_plain_step = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool", "system"])},
    optional={
        "content": _ascii,
        "tool_calls": st.none() | st.lists(_plain_call, max_size=2),
        "tool_call_id": st.sampled_from(["c1", "c2"]),
        "name": _ascii,
        "model": _ascii,
        "error": _ascii,
        "input_tokens": _plain_amounts,
        "output_tokens": _plain_amounts,
        "cost": _plain_amounts,
        "latency_s": _plain_amounts,
        "started_at": _plain_amounts,
    },
)

# a plain step with one field of any kind: what a message refuses, converts or keeps whole
_odd_fields: dict[str, Any] = {
    "role": st.just("robot"),
    "content": _texts | st.just(["part"]) | st.just(7),
    "tool_calls": st.lists(_call, max_size=2) | st.just("calls"),
    "tool_call_id": _texts | _ids,
    "name": _texts,
    "model": _texts,
    "error": _texts,
    "input_tokens": _amounts,
    "output_tokens": _amounts,
    "cost": _amounts,
    "latency_s": _amounts,
    "started_at": _amounts,
    "cached": st.booleans(),
    "other": st.just("x"),
}
_odd = st.one_of(*(st.fixed_dictionaries({k: v}) for k, v in _odd_fields.items()))
_step = st.builds(lambda step, odd: {**step, **odd}, _plain_step, _odd)


def _kept_of(steps: Any, output: Any) -> tuple[KeptTranscript | None, str | None]:
    """What the one way makes of the steps: the `Transcript`'s kept form, or its refusal."""
    try:
        return KeptTranscript(Transcript(steps, output=output)), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _of_steps(steps: Any, output: Any) -> tuple[KeptTranscript | None, str | None]:
    try:
        return KeptTranscript.of_steps(steps, output), None
    except Exception as exc:
        return None, f"{type(exc).__name__}: {exc}"


def _same_rows(a: list[tuple[Any, ...]], b: list[tuple[Any, ...]]) -> bool:
    def same(x: Any, y: Any) -> bool:
        nan = isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y)
        return nan or (type(x) is type(y) and x == y and repr(x) == repr(y))

    return len(a) == len(b) and all(
        len(r) == len(s) and all(map(same, r, s)) for r, s in zip(a, b, strict=True)
    )


def _assert_same(mine: KeptTranscript, theirs: KeptTranscript) -> None:
    assert mine.counts == theirs.counts
    assert repr(mine.output) == repr(theirs.output)
    assert mine.ascii == theirs.ascii
    a, b = mine.transcript(), theirs.transcript()
    assert a.model_dump() == b.model_dump() and repr(a) == repr(b)
    assert _same_rows(mine.steps(), theirs.steps())
    assert _same_rows(mine.steps(), theirs.steps())  # made again from the transcript after


@settings(max_examples=400, deadline=None)
@given(
    steps=st.lists(_plain_step, max_size=6) | st.lists(_plain_step | _step, max_size=6),
    output=st.none() | st.sampled_from(["", "out"]),
    pooled=st.booleans(),
)
def test_kept_of_steps_is_the_transcripts_kept_form(
    steps: list[dict[str, Any]], output: Any, pooled: bool
) -> None:
    theirs, refused = _kept_of(steps, output)
    mine, mine_refused = _of_steps(steps, output)
    assert mine_refused == refused
    if theirs is None or mine is None:
        assert theirs is None and mine is None
        return
    if pooled:  # the rows in a block with another sample's, as a worker hands them back
        other = KeptTranscript.of_steps([{"role": "user", "content": "x"}])
        pool_steps([other, mine])
        assert mine.rows == [] and (mine.block is not None) == (mine.ascii and mine.counts[0] > 0)
    _assert_same(mine, theirs)


def test_an_inspect_agents_steps_are_kept_without_building_their_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    steps = [
        {"role": "user", "content": "look k up"},
        {
            "role": "assistant", "content": "", "model": "m", "input_tokens": 40,
            "output_tokens": 12, "cost": None, "started_at": 1.7e9, "latency_s": 0.25,
            "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": {"k": 1}}}],
        },
        {"role": "tool", "content": "found", "tool_call_id": "c1", "name": "lookup",
         "error": "timeout", "latency_s": 0.5},
        {"role": "assistant", "content": "done", "model": "m"},
    ]  # fmt: skip
    theirs = KeptTranscript(Transcript(steps))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a Transcript was built")

    monkeypatch.setattr(_kept, "Transcript", refuse)
    mine = KeptTranscript.of_steps(steps)
    assert mine.counts == (4, 1, 1) and mine.output == "done"
    assert mine.steps()[1][2:5] == ("lookup", "c1", '{"k": 1}')
    monkeypatch.undo()
    _assert_same(KeptTranscript.of_steps(steps), theirs)


_CALLED = {"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "look"}}]}


@pytest.mark.parametrize(
    "odd",
    [
        {"latency_s": v}
        for v in (math.inf, math.nan, -1, -0.0, True, 2**53, 2**53 + 1, 10**400, "3", 0.5)
    ]
    + [{"content": t} for t in ("über", "a\ud800b", ["part"], 7, None)]
    + [{"tool_call_id": t} for t in ("über", None, "c2", "c1")]
    + [{"error": "über"}, {"name": "é"}, {"model": 3}, {"cached": True}, {"other": 1}]
    + [
        {"tool_calls": [{"id": i, "function": {"name": n, "arguments": a}}]}
        for i, n, a in [
            ("é", "look", None),
            ("c1", "é", None),
            ("c1", "look", {"q": "é"}),
            ("c1", "look", "é"),
            ("c1", "look", 3),
            ("c1", "look", {1: 2, "a": 3}),
        ]
    ]
    + [{"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "look"}}]}],
    ids=repr,
)
def test_a_step_of_another_kind_is_the_transcripts_too(odd: dict[str, Any]) -> None:
    for steps in ([{"role": "tool", "tool_call_id": "c1", **odd}], [{"role": "user", **odd}]):
        steps = [_CALLED, *steps]
        theirs, refused = _kept_of(steps, None)
        mine, mine_refused = _of_steps(steps, None)
        assert mine_refused == refused
        if theirs is not None and mine is not None:
            _assert_same(mine, theirs)
        else:
            assert theirs is None and mine is None
