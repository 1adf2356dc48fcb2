"""wrap_openai(transcript=True): an agent loop's calls become the sample's steps.

The real `openai` SDK against the loopback server (tests/_openai_server.py): the steps must
equal the messages the server saw, then its replies.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pandas as pd
import pytest

import evalbook as eb
from _openai_server import Server, completion, server, text_message

__all__ = ["server"]

CORRECT = eb.define_score("correct", primary=True)


@eb.scorer(CORRECT)
def correct(output: Any, expected: str) -> float:
    return float(output == expected)


def calls(*names: str) -> tuple[int, dict[str, Any]]:
    """A reply that calls these tools, one call each."""
    tool_calls = [
        {"id": f"call_{k}", "type": "function", "function": {"name": n, "arguments": '{"x": 1}'}}
        for k, n in enumerate(names)
    ]
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    return 200, completion(message, "tool_calls", (20, 7))


def run_tool(name: str, case: str) -> tuple[str, str | None]:
    if name == "flaky" and case == "b":
        return "", "the tool server answered 503"
    return f"{name} says ok", None


def agent(client: Any) -> Any:
    def task(question: str, case_id: str) -> str:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": "use the tools"},
            {"role": "user", "content": question},
        ]
        for _ in range(4):
            reply = client.chat.completions.create(model="m-1", messages=messages)
            message = reply.choices[0].message
            messages.append(message.model_dump(exclude_none=True))
            if not message.tool_calls:
                return str(message.content)
            for call in message.tool_calls:
                content, error = run_tool(call.function.name, case_id)
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": error or content}
                )
        return "gave up"

    return task


def data() -> pd.DataFrame:
    return pd.DataFrame({"id": ["a", "b"], "question": ["q <script>", "r"], "expected": "done"})


def test_the_steps_are_the_messages_the_server_saw_then_its_reply(server: Server) -> None:
    server.answer(calls("lookup", "flaky"), text_message("done", (30, 2)))
    client = eb.wrap_openai(openai.OpenAI(base_url=server.url, api_key="k", max_retries=0))
    run = eb.run(
        data().iloc[:1], task=agent(client), scores=[CORRECT], scorers=[correct], progress=False
    )
    steps = run.steps()
    last = server.requests[-1]["body"]["messages"]  # the whole conversation before the reply
    assert list(steps["role"]) == [m["role"] for m in last] + ["assistant"]
    assert list(steps["content"][: len(last)]) == [m.get("content") for m in last]
    assert steps["content"].iloc[-1] == "done"
    calls_table = run.tool_calls()
    sent = [c for m in last for c in m.get("tool_calls") or ()]
    assert list(calls_table["call_id"]) == [c["id"] for c in sent]
    assert list(calls_table["tool_name"]) == ["lookup", "flaky"]
    assert list(calls_table["result_step"]) == [3.0, 4.0]
    # each model step carries its call's usage (the server's figures) and latency
    model_steps = steps[steps["model"].notna()]
    assert list(model_steps["input_tokens"]) == [20.0, 30.0]
    assert list(model_steps["output_tokens"]) == [7.0, 2.0]
    assert (model_steps["latency_s"] > 0).all()
    assert run.cases["n_steps"].tolist() == [len(last) + 1]
    assert run.cases["n_tool_calls"].tolist() == [2]


@pytest.mark.parametrize("asynchronous", [False, True])
def test_concurrent_samples_keep_their_own_steps(server: Server, asynchronous: bool) -> None:
    server.answer(calls("lookup"), text_message("done"))
    server.delay = 0.02
    if asynchronous:
        sdk: Any = openai.AsyncOpenAI(base_url=server.url, api_key="k", max_retries=0)
        client = eb.wrap_openai(sdk)

        async def task(question: str) -> str:
            messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
            reply = await client.chat.completions.create(model="m-1", messages=messages)
            return str(reply.choices[0].message.content)

    else:
        client = eb.wrap_openai(openai.OpenAI(base_url=server.url, api_key="k", max_retries=0))

        def task(question: str) -> str:  # type: ignore[misc]
            messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
            reply = client.chat.completions.create(model="m-1", messages=messages)
            return str(reply.choices[0].message.content)

    frame = pd.DataFrame(
        {"id": [f"c{i}" for i in range(20)], "question": [f"q{i}" for i in range(20)]}
    )
    run = eb.run(frame, task=task, scores=[CORRECT], scorers=[], concurrency=10, progress=False)
    steps = run.steps()
    users = steps[steps["role"] == "user"]
    # every sample's user step is its own question: none landed in another sample
    assert dict(zip(users["case_id"].astype(str), users["content"], strict=True)) == {
        f"c{i}": f"q{i}" for i in range(20)
    }
    assert run.cases["n_steps"].tolist() == [2] * 20


def test_a_cached_reply_is_a_step_marked_cached(server: Server, tmp_path: Path) -> None:
    server.answer(text_message("done", (11, 3)))
    client = eb.wrap_openai(
        openai.OpenAI(base_url=server.url, api_key="k", max_retries=0), cache=tmp_path / "c"
    )

    def task(question: str) -> str:
        reply = client.chat.completions.create(
            model="m-1", messages=[{"role": "user", "content": question}]
        )
        return str(reply.choices[0].message.content)

    frame = data()[["id", "question"]]
    first = eb.run(frame, task=task, scores=[CORRECT], scorers=[], progress=False)
    again = eb.run(frame, task=task, scores=[CORRECT], scorers=[], progress=False)
    assert server.count() == 2  # the second run asked nothing
    assert not first.results.transcript_of(0).messages[-1].cached  # type: ignore[union-attr]
    replies = [again.results.transcript_of(i).messages[-1] for i in range(2)]  # type: ignore[union-attr]
    assert [m.cached for m in replies] == [True, True]
    assert [m.input_tokens for m in replies] == [0.0, 0.0]
    assert list(again.steps()["content"]) == list(first.steps()["content"])


def test_a_judges_calls_are_never_steps_and_transcript_false_adds_none(server: Server) -> None:
    server.answer(text_message("done"))
    sdk = openai.OpenAI(base_url=server.url, api_key="k", max_retries=0)
    quiet = eb.wrap_openai(sdk, transcript=False)
    loud = eb.wrap_openai(sdk)
    score = eb.define_score("asked", primary=True)

    @eb.scorer(score)
    def asks_a_model(output: Any) -> float:  # a scorer's call runs under its own source
        loud.chat.completions.create(model="j", messages=[{"role": "user", "content": "?"}])
        return 1.0

    def task(question: str) -> str:
        quiet.chat.completions.create(model="m", messages=[{"role": "user", "content": question}])
        return "done"

    run = eb.run(data()[["id", "question"]], task=task, scores=[score], scorers=[asks_a_model],
                 progress=False)  # fmt: skip
    assert server.count() == 4
    assert len(run.steps()) == 0
    assert "n_steps" not in run.cases.columns


def test_a_call_that_failed_for_good_is_a_step_with_its_error(server: Server) -> None:
    server.fail(1, 500)
    client = eb.wrap_openai(openai.OpenAI(base_url=server.url, api_key="k", max_retries=0))

    def task(question: str) -> str:
        try:
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": question}]
            )
        except openai.APIStatusError:
            return "no answer"
        return "answered"

    run = eb.run(data().iloc[:1][["id", "question"]], task=task, scores=[CORRECT], scorers=[],
                 progress=False)  # fmt: skip
    steps = run.steps()
    assert list(steps["role"]) == ["user", "assistant"]
    assert "InternalServerError" in steps["error"].iloc[-1]
    assert json.loads(json.dumps(steps["error"].iloc[-1]))  # plain text, stored as given
