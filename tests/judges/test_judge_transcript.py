"""A judge's `{transcript}`: the sample's transcript as bounded text, one line per message;
a sample without one is unscored (`no_transcript`) and the model is never asked."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _judge_helpers import Scripted, score

# the bounds the judge's docstring states
from evalbook._model._transcript_text import LINE_CHARS, TOTAL_CHARS, transcript_text


def agent(case_id: str, ctx: Any) -> str:
    if case_id == "bare":
        return "no steps"
    ctx.step(role="user", content="Book a table\nfor two")
    ctx.step(
        role="assistant",
        tool_calls=[{"id": "c1", "function": {"name": "book", "arguments": '{"n": 2}'}}],
    )
    ctx.step(role="tool", tool_call_id="c1", content="", error="no tables left")
    ctx.step(role="assistant", content="Sorry, none left.")
    return "Sorry, none left."


def judged_run(prompt: Any, client: Any, ids: tuple[str, ...] = ("c", "bare")) -> eb.Run:
    j = eb.judge("handled", prompt, client=client, scale=(1, 5), backoff=0)
    frame = pd.DataFrame({"id": list(ids)})
    return eb.run(frame, task=agent, scorers=[j], store=None, progress=False, concurrency=1)


def test_a_template_shows_the_transcript_one_line_per_message() -> None:
    client = Scripted(score(4))
    run = judged_run("Steps:\n{transcript}\nFinal: {output}", client)
    assert len(client.calls) == 1  # the sample without a transcript was never sent
    prompt = client.calls[0][0][0]["content"]
    assert prompt == (
        "Steps:\n"
        "user: Book a table\\nfor two\n"
        'assistant: book({"n": 2})\n'
        "tool book(c1): [error: no tables left]\n"
        "assistant: Sorry, none left.\n"
        "Final: Sorry, none left."
    )
    s = run.scores.set_index("case_id")
    assert (s.loc["c", "status"], s.loc["c", "value"]) == ("scored", 0.75)
    assert (s.loc["bare", "status"], s.loc["bare", "reason"]) == ("unscored", "no_transcript")


def test_a_templates_transcript_fields_read_through() -> None:
    client = Scripted(score(3))
    judged_run(
        "{transcript.messages[3].content} ({transcript.messages[0].role})", client, ids=("c",)
    )
    assert client.calls[0][0][0]["content"] == "Sorry, none left. (user)"


def test_a_prompt_function_gets_the_transcript_itself() -> None:
    seen: list[Any] = []

    def prompt(output: str, transcript: eb.Transcript | None) -> str:
        seen.append(transcript)
        return f"{output} after {0 if transcript is None else len(transcript.messages)} steps"

    client = Scripted(score(5))
    run = judged_run(prompt, client)
    assert isinstance(seen[0], eb.Transcript) and seen[1] is None
    assert [c[0][0]["content"] for c in client.calls] == [
        "Sorry, none left. after 4 steps",
        "no steps after 0 steps",
    ]
    assert run.scores["status"].tolist() == ["scored", "scored"]


def test_a_pairwise_template_with_a_transcript_and_none() -> None:
    client = Scripted({"preference": "tie", "justification": "same"})
    j = eb.pairwise_judge("better", "A {output} B {baseline} {transcript}", client=client,
                          baseline="ref", orders="one", backoff=0)  # fmt: skip
    frame = pd.DataFrame({"id": ["c", "bare"], "ref": ["r", "r"]})
    run = eb.run(frame, task=agent, scorers=[j], store=None, progress=False)
    assert run.scores["reason"].tolist()[1] == "no_transcript"
    assert len(client.calls) == 1
    assert "tool book(c1): [error: no tables left]" in client.calls[0][0][0]["content"]


def test_the_text_is_bounded_keeping_the_first_and_last_messages() -> None:
    messages = [{"role": "user", "content": f"turn {i} " + "x" * 3000} for i in range(200)]
    text = transcript_text(eb.Transcript(messages))
    lines = text.split("\n")
    assert len(text) <= TOTAL_CHARS
    assert all(len(line) <= LINE_CHARS for line in lines)
    assert lines[0].startswith("user: turn 0 ") and lines[-1].startswith("user: turn 199 ")
    gap = [line for line in lines if "not shown" in line]
    assert len(gap) == 1
    shown = len(lines) - 1
    assert gap[0] == f"… {200 - shown} messages not shown …"
    assert "(3007 chars)" in lines[0]  # a long content says how long it was


@pytest.mark.parametrize("n_calls", [1, 40])
def test_a_line_is_bounded_and_control_characters_are_escaped(n_calls: int) -> None:
    calls = [
        {
            "id": f"c{i}",
            "function": {"name": "f\x1b[31m", "arguments": '{"a": "' + "y" * 900 + '"}'},
        }
        for i in range(n_calls)
    ]
    text = transcript_text(eb.Transcript([{"role": "assistant", "tool_calls": calls}]))
    assert "\n" not in text and "\x1b" not in text and "\\x1b" in text
    assert len(text) <= LINE_CHARS
