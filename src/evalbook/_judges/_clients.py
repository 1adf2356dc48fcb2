"""Judge clients: the `JudgeClient` protocol, and `eb.openai_client` (an OpenAI-compatible SDK
client as a judge client).

A judge client is any callable `(messages, tool) -> reply` (docs/judges.md). The adapter calls
`client.chat.completions.create(model=..., messages=..., tools=[tool],
tool_choice=<that tool>, **params)` and returns the forced tool call's `arguments` (JSON text).
It never imports `openai`: any object with that method works (OpenAI, AsyncOpenAI, Azure, vLLM,
LiteLLM proxies, ...). SDK errors pass through unchanged so the judge can tell transient ones
(timeouts, 429, 5xx) from the rest. Each reply's `usage` is recorded into the current sample
under the judge's score name (docs/cost.md), except for a client made by `eb.wrap_openai`,
which records its own calls (once).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, TypeAlias

from .._errors import ConfigurationError
from .._runner._meter import current_meter
from .._util._callables import is_async
from ._wrap import WrappedOpenAI, wrap_openai

__all__ = ["JudgeClient", "JudgeReply", "OpenAIJudgeClient", "openai_client"]

JudgeReply: TypeAlias = Mapping[str, Any] | str | bytes
"""What a judge client answers: the tool call's arguments, as a mapping or as JSON text."""


class JudgeClient(Protocol):
    """What `eb.judge(..., client=...)` calls, once per vote: `client(messages, tool) -> reply`.

    `messages` is the chat (a list of `{"role", "content"}` dicts), `tool` the
    `submit_evaluation` function-tool dict built from the score definition and its scale, and
    the reply the tool call's arguments (`{"score": ..., "justification": ...}` as a mapping or
    JSON text). It may be `async def` (awaited on the run's loop) or sync (called in the
    judge's worker threads). It may also carry `model` (a str, kept in metadata and cache keys)
    and `params` (a mapping, part of the cache keys). Every call gets its own copies of
    `messages` and `tool`. Exceptions are the judge's to handle: transient ones are retried,
    the others become `judge_raised` records.

    Example:
        >>> def fake(messages: list[dict[str, Any]], tool: dict[str, Any]) -> JudgeReply:
        ...     return {"score": 4, "justification": "clear"}
        >>> client: JudgeClient = fake
    """

    def __call__(
        self, messages: list[dict[str, Any]], tool: dict[str, Any], /
    ) -> JudgeReply | Awaitable[JudgeReply]:
        """Ask the model once; return (or resolve to) the tool call's arguments."""
        ...


def _arguments(completion: Any, tool_name: str) -> Any:
    """The tool call's arguments; without a tool call, the text the model wrote instead."""
    choices = getattr(completion, "choices", None)
    if not choices:
        return f"<no choices in the completion: {completion!r}>"[:500]
    message = getattr(choices[0], "message", None)
    calls = list(getattr(message, "tool_calls", None) or ())
    if calls:
        chosen = next(
            (c for c in calls if getattr(getattr(c, "function", None), "name", None) == tool_name),
            calls[0],
        )
        return getattr(getattr(chosen, "function", None), "arguments", None)
    content = getattr(message, "content", None)
    refusal = getattr(message, "refusal", None)
    if content:
        return content  # some servers answer in text; the judge tries it as JSON
    if refusal:
        return f"<refusal: {refusal}>"
    return "<no tool call and no content>"


class OpenAIJudgeClient:
    """A `JudgeClient` over a sync OpenAI-compatible client (see `eb.openai_client`)."""

    def __init__(
        self,
        create: Callable[..., Any],
        model: str,
        params: dict[str, Any],
        *,
        meters: bool = True,
    ) -> None:
        self._create = create
        self.model = model
        self.params = params
        self.meters = meters  # False over a wrapped client: it records its calls itself

    def reply(self, completion: Any, tool: dict[str, Any]) -> Any:
        """The tool call's arguments; the completion's usage recorded when this client meters."""
        if self.meters:
            meter = current_meter()
            if meter is not None:
                model = getattr(completion, "model", None)
                meter.record(
                    getattr(completion, "usage", None),
                    model=self.model,
                    response_model=model if isinstance(model, str) else None,
                )
        return _arguments(completion, tool["function"]["name"])

    def request(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of one `chat.completions.create` call."""
        name = tool["function"]["name"]
        return {
            **self.params,
            "model": self.model,
            "messages": messages,
            "tools": [tool],
            "tool_choice": {"type": "function", "function": {"name": name}},
        }

    def __call__(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        completion = self._create(**self.request(messages, tool))
        return self.reply(completion, tool)

    def __repr__(self) -> str:
        return f"<openai_client model={self.model!r}>"


class AsyncOpenAIJudgeClient(OpenAIJudgeClient):
    """A `JudgeClient` over an async OpenAI-compatible client (`openai.AsyncOpenAI`)."""

    async def __call__(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        completion = await self._create(**self.request(messages, tool))
        return self.reply(completion, tool)


def _async_sdk(client: Any) -> bool:
    """Whether `client` is the `openai` package's own `AsyncOpenAI` (or a subclass)."""
    return any(
        c.__name__ == "AsyncOpenAI" and c.__module__.split(".")[0] == "openai"
        for c in type(client).__mro__
    )


def openai_client(client: Any, *, model: str, **params: Any) -> OpenAIJudgeClient:
    """Adapt an OpenAI-compatible SDK client for `eb.judge(..., client=...)`.

    Each judge call is one chat completion with the `submit_evaluation` tool forced
    (`tool_choice`); the reply is the tool call's JSON arguments. `params` (temperature, seed,
    max_tokens, ...) go into every request and into the judge's cache keys. The OpenAI SDK
    retries 429/5xx itself (`max_retries=2` by default); the judge's own retries come on top,
    so set one of them to 0 for a single layer. Each reply's usage is recorded under the
    judge's score name; a client made by `eb.wrap_openai` (rate limits, a response cache)
    records its own calls instead, once. An unwrapped `openai.AsyncOpenAI` is wrapped here
    (plainly: no cache, no limits), so that it works in run after run, each on its own event
    loop.

    Args:
        client: `openai.OpenAI(...)`, `openai.AsyncOpenAI(...)`, either wrapped by
            `eb.wrap_openai`, or anything with `chat.completions.create`.
        model: The model to ask.
        **params: Further `chat.completions.create` arguments.

    Example:
        >>> import evalbook as eb
        >>> class Completions:
        ...     def create(self, **request): ...
        >>> class Chat:
        ...     completions = Completions()
        >>> class Client:
        ...     chat = Chat()
        >>> eb.openai_client(Client(), model="gpt-4o-mini", temperature=0).params
        {'temperature': 0}
    """
    if not isinstance(client, WrappedOpenAI) and _async_sdk(client):
        # Each eb.run() has its own event loop, and the SDK's connections stay bound to the
        # first one ("Event loop is closed" on the next run): the wrapper gives each loop its
        # own. It takes over the client's retries (same count, Retry-After honoured).
        client = wrap_openai(client)
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    if not callable(create):
        raise ConfigurationError(
            f"eb.openai_client() needs an OpenAI-compatible client with "
            f"chat.completions.create, not {client!r}; e.g. openai.OpenAI(base_url=...)"
        )
    if not isinstance(model, str) or not model:
        raise ConfigurationError(f"eb.openai_client() needs model='name', got {model!r}")
    reserved = {"model", "messages", "tools", "tool_choice"} & set(params)
    if reserved:
        raise ConfigurationError(
            f"eb.openai_client(): {', '.join(sorted(reserved))} are set by the judge; "
            "remove them from the extra parameters"
        )
    # An SDK's async client may hide its coroutine behind a plain wrapper: its class name says.
    awaits = is_async(create) or type(client).__name__.startswith("Async")
    cls = AsyncOpenAIJudgeClient if awaits else OpenAIJudgeClient
    return cls(create, model, dict(params), meters=not isinstance(client, WrappedOpenAI))
