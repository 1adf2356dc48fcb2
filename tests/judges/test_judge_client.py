"""The client protocol: any `(messages, tool) -> reply` callable, sync or async
(docs/judges.md, "The client protocol")."""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Callable
from typing import Any

import evalbook as eb
from _judge_helpers import judged

JudgeClient = Callable[..., Any]  # (messages, tool) -> reply, or an awaitable of one


def _reply(who: str) -> dict[str, Any]:
    return {"score": 80, "justification": who}


def test_async_clients_run_on_the_loop_even_behind_a_partial() -> None:
    threads: list[str] = []

    async def client(
        messages: list[dict[str, Any]], tool: dict[str, Any], who: str
    ) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return _reply(who)

    wrapped: JudgeClient = functools.partial(client, who="partial")
    record = judged(eb.judge("q", "{output}", client=wrapped), output="x")
    assert record.rationale == "partial" and record.value == 0.8
    assert threads and not threads[0].startswith("evalbook-")  # awaited, not in a thread


def test_sync_clients_run_in_the_judges_threads() -> None:
    threads: list[str] = []

    def client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return _reply("sync")

    record = judged(eb.judge("q", "{output}", client=client), output="x")
    assert record.rationale == "sync"
    assert threads[0].startswith("evalbook-")  # evalbook's worker threads (daemon)


def test_the_openai_adapter_is_a_judge_client() -> None:
    calls: list[dict[str, Any]] = []

    class Completions:
        def create(self, **request: Any) -> Any:
            calls.append(request)
            call = type("Call", (), {"function": type("F", (), {"name": "submit_evaluation",
                        "arguments": '{"score": 60, "justification": "ok"}'})()})()  # fmt: skip
            message = type("M", (), {"tool_calls": [call], "content": None})()
            return type("C", (), {"choices": [type("Ch", (), {"message": message})()]})()

    sdk = type("Client", (), {"chat": type("Chat", (), {"completions": Completions()})()})()
    client: JudgeClient = eb.openai_client(sdk, model="m", temperature=0)
    assert client.model == "m"  # goes into the record's metadata and the cache keys
    # the protocol itself: messages and the tool in, the tool call's arguments out
    tool = {"type": "function", "function": {"name": "submit_evaluation", "parameters": {}}}
    reply = client([{"role": "user", "content": "x"}], tool)
    arguments = json.loads(reply) if isinstance(reply, str) else reply  # JSON text or a dict
    assert arguments == {"score": 60, "justification": "ok"}
    assert calls[0]["tools"] == [tool] and calls[0]["messages"][0]["content"] == "x"
    record = judged(eb.judge("q", "{output}", client=client), output="x")
    assert record.value == 0.6 and calls[1]["model"] == "m" and calls[1]["temperature"] == 0
    assert record.metadata is not None and record.metadata["model"] == "m"
