"""What `eb.wrap_openai` knows of the OpenAI SDK: requests as JSON, token estimates, reply
types, streamed replies, and how a client is made again in another process.

Kept apart from `_wrap.py` (the wrapper's steps); `openai` is imported only inside functions
(it is optional).
"""

from __future__ import annotations

import importlib
import json
import math
import numbers
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any, Protocol

from .._model._origin import mark_provider
from .._model._tally import InvalidUsage, amount, token_counts
from ._replies import is_transient

__all__ = [
    "ENDPOINTS",
    "AsyncStream",
    "Metered",
    "Stream",
    "default_async_http",
    "dump",
    "estimate_tokens",
    "plain",
    "real_tokens",
    "recipe",
    "reply_type",
]

# endpoint -> (attribute path on the client, the SDK's reply type as module:name)
ENDPOINTS = {
    "chat.completions": (("chat", "completions"), "openai.types.chat:ChatCompletion"),
    "responses": (("responses",), "openai.types.responses:Response"),
}


class Metered(Protocol):
    """What a streamed reply reports to once it ends (the wrapper's call)."""

    def settle(self, usage: Any) -> None:
        """Correct the limiter's token booking by the reply's usage."""
        ...

    def record(self, usage: Any, response_model: Any, *, cached: bool, retries: int) -> None:
        """Record the call into the sample's meter."""
        ...


_TEXT_FIELDS = ("messages", "input", "instructions", "prompt")
_MAX_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


def plain(value: Any) -> Any:
    """A request value as JSON data: SDK models (a reply's message sent back) dumped."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items() if not _omitted(v)}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        return plain(dump(mode="json", exclude_unset=True))
    return value


def _omitted(value: Any) -> bool:
    return type(value).__name__ in ("NotGiven", "Omit")  # the SDK's "not given" markers


def estimate_tokens(request: Mapping[str, Any]) -> float:
    """The tokens a request may use, before it is sent: characters / 4 of its text fields'
    JSON plus its output limit.

    Example:
        >>> estimate_tokens({"input": "x" * 78, "max_output_tokens": 10})  # 80 characters
        30.0
    """
    chars = 0
    for name in _TEXT_FIELDS:
        if name in request:
            chars += len(json.dumps(plain(request[name]), default=str, ensure_ascii=False))
    limit = 0.0
    for name in _MAX_FIELDS:
        v = request.get(name)
        if isinstance(v, numbers.Real) and not isinstance(v, bool):
            number = float(v)
            if math.isfinite(number) and number > 0:
                limit = number
                break
    return chars / 4 + limit


def dump(response: Any) -> Any:
    dump = getattr(response, "model_dump", None)
    return dump(mode="json", exclude_unset=True) if callable(dump) else response


def reply_type(endpoint: str) -> Any:
    # openai is optional: the SDK's reply type is imported when a cache hit is rebuilt
    module, name = ENDPOINTS[endpoint][1].split(":")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):  # a client that is not the openai SDK's
        return None


def real_tokens(usage: Any) -> float | None:
    try:
        tin, tout = (amount("tokens", v) for v in token_counts(usage))
    except InvalidUsage:
        return None
    return None if tin is None or tout is None else tin + tout


def _stream_usage(chunk: Any) -> Any:
    """A streamed chunk's usage: chat chunks carry `usage` (with `stream_options=
    {"include_usage": True}`), Responses events `response.usage` on completion."""
    usage = getattr(chunk, "usage", None)
    if usage is None:
        usage = getattr(getattr(chunk, "response", None), "usage", None)
    return usage


def mark_if_transient(exc: BaseException) -> None:
    """Mark a transient error (429, 5xx, timeout, connection) as the provider's (`_origin`)."""
    if is_transient(exc):
        mark_provider(exc)


class Stream:
    """A streamed reply, passed through; its usage is recorded once it has been read to the
    end or closed (unknown when the server sent none)."""

    def __init__(self, stream: Any, call: Metered, retries: int) -> None:
        self._evalbook_stream = stream
        self._evalbook_call = call
        self._evalbook_retries = retries
        self._evalbook_usage: Any = None
        self._evalbook_done = False

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_evalbook"):
            raise AttributeError(name)
        return getattr(self._evalbook_stream, name)

    def _evalbook_seen(self, chunk: Any) -> Any:
        usage = _stream_usage(chunk)
        if usage is not None:
            self._evalbook_usage = usage
        return chunk

    def _evalbook_end(self) -> None:
        if not self._evalbook_done:
            self._evalbook_done = True
            call = self._evalbook_call
            call.settle(self._evalbook_usage)
            call.record(self._evalbook_usage, None, cached=False, retries=self._evalbook_retries)

    def __iter__(self) -> Iterator[Any]:
        try:
            for chunk in self._evalbook_stream:
                yield self._evalbook_seen(chunk)
        except Exception as exc:  # the connection dropped mid-stream: the provider's
            mark_if_transient(exc)
            raise
        finally:
            self._evalbook_end()

    def close(self) -> None:
        try:
            self._evalbook_stream.close()
        finally:
            self._evalbook_end()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncStream(Stream):
    async def __aiter__(self) -> AsyncIterator[Any]:
        try:
            async for chunk in self._evalbook_stream:
                yield self._evalbook_seen(chunk)
        except Exception as exc:  # the connection dropped mid-stream: the provider's
            mark_if_transient(exc)
            raise
        finally:
            self._evalbook_end()

    async def close(self) -> None:  # type: ignore[override]
        try:
            await self._evalbook_stream.close()
        finally:
            self._evalbook_end()

    async def __aenter__(self) -> AsyncStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


_UNSENDABLE = ("_api_key_provider", "admin_api_key", "workload_identity", "_provider")


def recipe(client: Any) -> tuple[type, dict[str, Any]] | None:
    """The class and options that make `client` again in another process, when the client
    is a plain `openai.OpenAI` / `AsyncOpenAI` with its own HTTP client and a key as text."""
    try:
        import openai  # optional: without it, a client of another kind is pickled as itself
    except ImportError:
        return None
    if type(client) not in (openai.OpenAI, openai.AsyncOpenAI):
        return None
    http = type(getattr(client, "_client", None)).__name__
    if http not in ("SyncHttpxClientWrapper", "AsyncHttpxClientWrapper"):
        return None  # a user's own http_client= (proxies, transports) cannot be sent
    if not isinstance(client.api_key, str) or any(
        getattr(client, name, None) is not None for name in _UNSENDABLE
    ):
        return None
    options = {
        "api_key": client.api_key,
        "organization": client.organization,
        "project": client.project,
        "base_url": str(client.base_url),
        "timeout": client.timeout,
        "max_retries": client.max_retries,
        "default_headers": dict(getattr(client, "_custom_headers", None) or {}),
        "default_query": dict(getattr(client, "_custom_query", None) or {}),
        "webhook_secret": getattr(client, "webhook_secret", None),
        "websocket_base_url": getattr(client, "websocket_base_url", None),
    }
    return type(client), options


def default_async_http() -> Any:
    # openai is optional: only an SDK client that made its own HTTP client gets here
    import openai

    return openai.DefaultAsyncHttpxClient()
