"""eb.openai_client with the real `openai` SDK against a scripted OpenAI-compatible server.

The server (tests/_openai_server.py) runs on 127.0.0.1 in a thread and answers
`POST /v1/chat/completions` from a script: tool calls with chosen arguments (including the
corrupted 989898 and 950), HTTP errors (429, 500), or a plain text message. Nothing leaves
the machine.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _judge_helpers import judged
from _openai_server import Server, http_error, scored, server, text_message, tool_call

openai = pytest.importorskip("openai")

__all__ = ["server"]  # the fixture, imported from the shared server module


def sync_client(server: Server, **params: Any) -> Any:
    sdk = openai.OpenAI(base_url=server.url, api_key="test-key", max_retries=0, timeout=10)
    return eb.openai_client(sdk, model="judge-1", **params)


def test_a_scripted_tool_call_is_scored_and_the_request_is_right(server: Server) -> None:
    server.answer(scored(95, "accurate"))
    j = eb.judge("quality", "Rate: {output}", client=sync_client(server, temperature=0))
    rec = judged(j, output="hello")
    assert (rec.status, rec.value, rec.rationale) == ("scored", 0.95, "accurate")
    assert rec.metadata is not None and rec.metadata["model"] == "judge-1"
    (request,) = server.requests
    body = request["body"]
    assert request["path"] == "/v1/chat/completions"
    assert body["model"] == "judge-1"
    assert body["temperature"] == 0
    assert body["messages"] == [{"role": "user", "content": "Rate: hello"}]
    assert [t["function"]["name"] for t in body["tools"]] == ["submit_evaluation"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "submit_evaluation"}}
    score_schema = body["tools"][0]["function"]["parameters"]["properties"]["score"]
    assert (score_schema["minimum"], score_schema["maximum"]) == (0, 100)


@pytest.mark.parametrize("raw", ["989898", "950"])
def test_corrupted_tool_arguments_are_errors(server: Server, raw: str) -> None:
    server.answer(tool_call(f'{{"justification": "great", "score": {raw}}}'))
    rec = judged(eb.judge("quality", "{output}", client=sync_client(server)), output="x")
    assert (rec.status, rec.reason) == ("error", "invalid_score")
    assert raw in (rec.message or "")


def test_malformed_arguments_and_text_replies(server: Server) -> None:
    j = eb.judge("quality", "{output}", client=sync_client(server))
    server.answer(tool_call('{"justification": "cut off", "sco'))
    assert judged(j, output="x").reason == "invalid_judge_output"
    server.answer(tool_call('{"justification": "no score"}'))
    assert judged(j, output="x").reason == "invalid_judge_output"
    server.answer(text_message("I would rate this an 8."))
    rec = judged(j, output="x")
    assert rec.reason == "invalid_judge_output"
    assert "I would rate this an 8." in (rec.message or "")
    server.answer(text_message('```json\n{"score": 40, "justification": "text"}\n```'))
    assert judged(j, output="x").value == 0.4


def test_429_then_success_is_retried(server: Server) -> None:
    server.answer(http_error(429), scored(70))
    j = eb.judge("quality", "{output}", client=sync_client(server), retries=2, backoff=0)
    rec = judged(j, output="x")
    assert (rec.status, rec.value) == ("scored", 0.7)
    assert len(server.requests) == 2
    assert rec.metadata is not None and rec.metadata["votes"][0]["tries"] == 2


def test_500_is_judge_raised_once_retries_are_spent(server: Server) -> None:
    server.answer(http_error(500))
    j = eb.judge("quality", "{output}", client=sync_client(server), retries=1, backoff=0)
    rec = judged(j, output="x")
    assert (rec.status, rec.reason) == ("error", "judge_raised")
    assert "InternalServerError" in (rec.message or "") and "after 2 tries" in (rec.message or "")
    assert len(server.requests) == 2


def test_400_is_not_retried(server: Server) -> None:
    server.answer(http_error(400), scored(70))
    j = eb.judge("quality", "{output}", client=sync_client(server), retries=3, backoff=0)
    assert judged(j, output="x").reason == "judge_raised"
    assert len(server.requests) == 1


def test_async_openai_client(server: Server) -> None:
    server.answer(scored(20), scored(40), scored(60))
    sdk = openai.AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0, timeout=10)
    client = eb.openai_client(sdk, model="judge-1")
    j = eb.judge("quality", "{output}", client=client, votes=3, reducer="mean")
    rec = judged(j, output="x")
    assert (rec.status, rec.value) == ("scored", pytest.approx(0.4))
    assert len(server.requests) == 3


def test_a_whole_run_through_the_server(server: Server) -> None:
    server.answer(scored(98), scored(989898), scored(950), scored(90))
    j = eb.judge("quality", "Q: {q}\nA: {output}", client=sync_client(server))
    df = pd.DataFrame({"q": ["a", "b", "c", "d"]})
    r = eb.run(df, task=lambda q: q * 2, scorers=[j], store=None, progress=False, concurrency=1)
    assert list(r.scores["status"]) == ["scored", "error", "error", "scored"]
    row = r.summary().iloc[0]
    assert (row["mean"], row["counted"], row["errors"]) == (pytest.approx(0.94), 2, 2)
    assert server.requests[1]["body"]["messages"][0]["content"] == "Q: b\nA: bb"


def test_openai_client_configuration_errors() -> None:
    with pytest.raises(eb.ConfigurationError, match=r"chat\.completions\.create"):
        eb.openai_client(object(), model="m")
    sdk = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(eb.ConfigurationError, match="model"):
        eb.openai_client(sdk, model="")
    with pytest.raises(eb.ConfigurationError, match="tool_choice"):
        eb.openai_client(sdk, model="m", tool_choice="auto")
    assert eb.openai_client(sdk, model="m").model == "m"


def test_an_async_sdk_client_judges_run_after_run(server: Server) -> None:
    """Each eb.run() has its own event loop; the SDK's connection pool is bound to the first
    one, so a second run used to fail every vote with 'Event loop is closed'."""
    server.answer(scored(80))
    sdk = openai.AsyncOpenAI(base_url=server.url, api_key="test-key", max_retries=0, timeout=10)
    j = eb.judge("quality", "{output}", client=eb.openai_client(sdk, model="judge-1"))
    df = pd.DataFrame({"q": ["a", "b"]})
    for _ in range(3):
        r = eb.run(df, task=lambda q: q, scorers=[j], store=None, progress=False)
        assert list(r.scores["status"]) == ["scored", "scored"], list(r.scores["message"])
        assert r.usage()["source"].tolist() == ["quality", "quality"]
    assert len(server.requests) == 6
