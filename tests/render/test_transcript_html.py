"""The transcript renderer's pieces (`_render/_transcript_html.py`): where two transcripts
first differ, and the bounds of one view, as properties."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._render._transcript_html import MAX_STEPS, first_difference, transcript_html

_STEP = st.sampled_from(
    [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "system", "content": "s"},
    ]
)


def _t(messages: list[dict[str, Any]]) -> eb.Transcript:
    return eb.Transcript(messages=messages)


@settings(deadline=None)  # the first example imports the views
@given(st.lists(_STEP, max_size=8), st.lists(_STEP, max_size=8))
def test_first_difference_is_the_length_of_the_common_prefix(
    xs: list[dict[str, Any]], ys: list[dict[str, Any]]
) -> None:
    d = first_difference(_t(xs), _t(ys))
    if xs == ys:
        assert d is None
        return
    assert d is not None
    assert xs[:d] == ys[:d]
    assert d == min(len(xs), len(ys)) or xs[d] != ys[d]
    assert first_difference(_t(ys), _t(xs)) == d  # symmetric


def test_call_ids_do_not_make_two_runs_steps_differ() -> None:
    def run(cid: str) -> eb.Transcript:
        call = {"id": cid, "function": {"name": "f", "arguments": "{}"}}
        return _t([{"role": "assistant", "tool_calls": [call]},
                   {"role": "tool", "tool_call_id": cid, "content": "r"}])  # fmt: skip

    assert first_difference(run("call_1"), run("call_XYZ")) is None


@settings(deadline=None)  # the first example imports the views
@given(st.integers(min_value=0, max_value=3 * MAX_STEPS))
def test_a_view_draws_at_most_max_steps_turns(n: int) -> None:
    html = transcript_html(_t([{"role": "user", "content": str(i)} for i in range(n)]))
    assert html.count('data-evalbook="step"') == min(n, MAX_STEPS)
    assert (f"… {n - MAX_STEPS:,} more steps" in html) == (n > MAX_STEPS)
