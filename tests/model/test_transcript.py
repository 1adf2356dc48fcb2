"""eb.Transcript: checked when built; the counts and tables it gives (properties)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import TOOL_CALL_COLUMNS


@pytest.mark.parametrize(
    ("messages", "said"),
    [
        ([{"role": "robot", "content": "x"}], r"message 0 \(role\).*'robot' is not one of"),
        ([{"role": "tool", "tool_call_id": "z", "content": "x"}], "which no earlier assistant"),
        ([{"role": "tool", "content": "x"}], "has no tool_call_id"),
        ([{"role": "user", "cost": -1.0}], r"message 0 \(cost\).*finite number >= 0"),
        ([{"role": "user", "latency_s": float("nan")}], "finite number"),
        ([{"content": "no role"}], r"message 0 \(role\)"),
    ],
)
def test_a_bad_transcript_is_a_configuration_error_naming_the_message(
    messages: list[dict[str, Any]], said: str
) -> None:
    with pytest.raises(eb.ConfigurationError, match=said):
        eb.Transcript(messages)


def test_the_output_is_the_last_assistant_text_unless_given() -> None:
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "first"},
        {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "r"},
    ]
    assert eb.Transcript(messages).output == "first"
    assert eb.Transcript(messages, output={"x": 1}).output == {"x": 1}
    assert eb.Transcript([{"role": "user", "content": "q"}]).output is None


def test_openai_content_parts_and_dict_arguments_become_text() -> None:
    t = eb.Transcript(
        [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url"}]},
            {"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
                                                                        "arguments": {"b": 1}}}]},
        ]
    )  # fmt: skip
    assert t.messages[0].content == "a\n[image_url]"
    assert t.messages[1].tool_calls is not None
    assert t.messages[1].tool_calls[0].function.arguments == '{"b": 1}'


NAMES = st.sampled_from(["search", "calc", "<script>x</script>"])


@st.composite
def transcripts(draw: Any) -> list[dict[str, Any]]:
    """Agent-like transcripts: turns of calls, each answered or not, with errors or not."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": draw(st.text(max_size=5))}]
    n = 0
    for _ in range(draw(st.integers(0, 4))):
        calls = []
        for _ in range(draw(st.integers(0, 3))):
            calls.append({"id": f"c{n}", "function": {"name": draw(NAMES), "arguments": "{}"}})
            n += 1
        messages.append({"role": "assistant", "content": draw(st.none() | st.text(max_size=3)),
                         "tool_calls": calls or None})  # fmt: skip
        for c in calls:
            if draw(st.booleans()):
                error = draw(st.none() | st.just("boom"))
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "r",
                                 "error": error})  # fmt: skip
    return messages


@settings(max_examples=60, deadline=None)
@given(st.lists(transcripts(), min_size=1, max_size=4))
def test_the_tables_agree_with_the_transcripts(batch: list[list[dict[str, Any]]]) -> None:
    data = pd.DataFrame({"id": [f"k{i}" for i in range(len(batch))], "i": range(len(batch))})
    score = eb.define_score("s", primary=True)
    run = eb.run(data, task=lambda i: eb.Transcript(batch[i]), scores=[score], scorers=[],
                 progress=False)  # fmt: skip
    steps, calls, cases = run.steps(), run.tool_calls(), run.cases
    assert list(calls.columns) == TOOL_CALL_COLUMNS
    # one step row per message, numbered from 0 in each sample
    assert len(steps) == sum(map(len, batch))
    for k, messages in enumerate(batch):
        mine = steps[steps["case_id"] == f"k{k}"]
        assert list(mine["step"]) == list(range(len(messages)))
        assert list(mine["role"]) == [m["role"] for m in messages]
    # one call row per call; ok exactly when a result came without an error
    made = [c for ms in batch for m in ms for c in m.get("tool_calls") or ()]
    assert len(calls) == len(made) == int(cases["n_tool_calls"].sum())
    answered = {
        (f"k{k}", m["tool_call_id"]): m.get("error")
        for k, ms in enumerate(batch)
        for m in ms
        if m["role"] == "tool"
    }
    for row in calls.itertuples():
        key = (str(row.case_id), row.call_id)
        assert row.ok == (key in answered and answered[key] is None)
        assert pd.isna(row.result_step) == (key not in answered)
        if key in answered:
            assert row.result_step > row.step
    assert int(cases["n_tool_errors"].sum()) == sum(e is not None for e in answered.values())
    assert list(cases["n_steps"]) == [len(m) for m in batch]


def test_the_repr_is_short_and_shows_control_characters_escaped() -> None:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q\x1b[31m"}]
    for k in range(40):
        messages.append({"role": "assistant", "tool_calls": [
            {"id": f"c{k}", "function": {"name": "<script>\x07"}}]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"c{k}", "content": "x" * 10_000})
    messages.append({"role": "assistant", "content": "done\x00" * 1000})
    text = repr(eb.Transcript(messages))
    assert len(text) < 400
    assert "\x07" not in text and "\x00" not in text and "\\x07" in text
    assert text.startswith("Transcript(82 steps: user → assistant(<script>\\x07)")
    assert "and 74 more" in text
