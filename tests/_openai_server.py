"""A loopback OpenAI-compatible server for the tests that use the real `openai` SDK.

It runs on 127.0.0.1 in a thread and answers `POST /v1/chat/completions` and
`POST /v1/responses`. Replies come from a script (`answer`; the last entry repeats) or, with
no script, echo the last user message; `stream=True` requests get server-sent chunks. Every
200 reply carries `usage` (a stream only when asked, as OpenAI's); the server counts the
requests it received (with their arrival times) and the tokens it reported. It can answer
errors first (`fail(n, 429, retry_after=1)`) and be slowed (`delay` seconds per request).
Nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

Entry = tuple[int, dict[str, Any]] | tuple[int, dict[str, Any], dict[str, str]]


def tool_call(arguments: str, usage: tuple[int, int] = (10, 5)) -> Entry:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "submit_evaluation", "arguments": arguments},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return 200, completion(message, "tool_calls", usage)


def text_message(content: str, usage: tuple[int, int] = (10, 5)) -> Entry:
    return 200, completion({"role": "assistant", "content": content}, "stop", usage)


def completion(
    message: dict[str, Any], finish: str, usage: tuple[int, int] = (10, 5)
) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "judge-1",
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def http_error(status: int, retry_after: float | None = None) -> Entry:
    payload = {"error": {"message": f"scripted {status}", "type": "server", "code": None}}
    if retry_after is None:
        return status, payload
    return status, payload, {"Retry-After": f"{retry_after:g}"}


def scored(value: float, why: str = "ok", usage: tuple[int, int] = (10, 5)) -> Entry:
    return tool_call(json.dumps({"justification": why, "score": value}), usage)


def _words(value: Any) -> int:
    return len(json.dumps(value).split())


def echo(path: str, body: dict[str, Any]) -> Entry:
    """The reply with no script: the last user message back; tokens counted in words."""
    if path == "/v1/responses":
        text = str(body.get("input"))
        n_in, n_out = _words(body.get("input")), len(text.split())
        return 200, {
            "id": "resp-test",
            "object": "response",
            "created_at": 0,
            "model": body.get("model", "m"),
            "output": [
                {
                    "id": "msg-1",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": n_in,
                "output_tokens": n_out,
                "total_tokens": n_in + n_out,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }
    messages = body.get("messages") or [{"content": ""}]
    text = str(messages[-1].get("content"))
    reply = completion(
        {"role": "assistant", "content": text},
        "stop",
        (_words(messages), len(text.split())),
    )
    reply["model"] = body.get("model", "m")
    return 200, reply


def sse(payload: dict[str, Any], body: dict[str, Any]) -> bytes:
    """A chat completion as server-sent chunks: the text in one chunk, then (when the request
    asks `stream_options={"include_usage": True}`) a last chunk with the usage only."""
    base = {k: payload[k] for k in ("id", "created", "model")}
    message = payload["choices"][0]["message"]
    delta = {"role": "assistant", "content": message.get("content")}
    chunks = [
        {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": "stop"}],
        }
    ]
    if (body.get("stream_options") or {}).get("include_usage"):
        chunks.append(
            {**base, "object": "chat.completion.chunk", "choices": [], "usage": payload["usage"]}
        )
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(lines).encode()


class _Quiet(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client closing its kept-alive connection is not an error of the test


class Server:
    """A loopback OpenAI-compatible server (see the module's docstring)."""

    def __init__(self) -> None:
        self.script: list[Entry] = []
        self.first: list[Entry] = []  # served before the script: fail()'s errors
        self.requests: list[dict[str, Any]] = []
        self.delay = 0.0  # seconds each request is held before its reply
        self.input_tokens = 0  # as reported in the 200 replies' usage
        self.output_tokens = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as real servers

            def do_POST(self) -> None:
                arrived = time.monotonic()
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                entry = server._entry(self.path, body, arrived)
                if server.delay:
                    time.sleep(server.delay)
                status, payload = entry[0], entry[1]
                headers = entry[2] if len(entry) == 3 else {}  # type: ignore[misc]
                if status == 200 and body.get("stream") is True:
                    data, kind = sse(payload, body), "text/event-stream"
                else:
                    data, kind = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.httpd = _Quiet(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def _entry(self, path: str, body: dict[str, Any], arrived: float) -> Entry:
        with self.lock:
            self.requests.append({"path": path, "body": body, "t": arrived})
            if path not in ("/v1/chat/completions", "/v1/responses"):
                return 404, {}
            if self.first:
                entry = self.first.pop(0)
            elif self.script:
                entry = self.script.pop(0) if len(self.script) > 1 else self.script[0]
            else:
                entry = echo(path, body)
            streamed = body.get("stream") is True
            reported = not streamed or (body.get("stream_options") or {}).get("include_usage")
            if entry[0] == 200 and reported:
                usage = entry[1].get("usage") or {}
                self.input_tokens += usage.get("prompt_tokens", usage.get("input_tokens", 0))
                self.output_tokens += usage.get("completion_tokens", usage.get("output_tokens", 0))
            return entry

    def answer(self, *entries: Entry) -> None:
        """Answer from these entries in turn (the last one repeats); none: echo."""
        with self.lock:
            self.script[:] = entries

    def fail(self, n: int, status: int = 429, retry_after: float | None = None) -> None:
        """Answer the next `n` requests with `status` (and `Retry-After`), then as before."""
        with self.lock:
            self.first[:] = [http_error(status, retry_after)] * n

    def arrivals(self) -> list[float]:
        """The monotonic times the requests arrived, in order."""
        with self.lock:
            return sorted(r["t"] for r in self.requests)

    def count(self) -> int:
        with self.lock:
            return len(self.requests)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """A running loopback server; proxies are bypassed for 127.0.0.1."""
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    s = Server()
    s.thread.start()
    yield s
    s.httpd.shutdown()
    s.httpd.server_close()
