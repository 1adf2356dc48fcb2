"""`eb.wrap_openai`: an OpenAI SDK client that meters, caches, rate-limits and retries its calls.

The wrapper has the client's interface; `chat.completions.create` and `responses.create`
go through four steps (docs/cost.md), everything else is the SDK's own:

1. **Cache** (`cache=` a folder, `_cache.ResponseCache`): the key is the canonical request
   (every keyword argument but the transport options `extra_headers` and `timeout`, plus
   the endpoint and the client's base URL), the sample's epoch and the occurrence (the n-th
   identical request of the sample), so repeats stay independent and a changed parameter
   misses. A hit is rebuilt as the SDK's type and makes no request. Only replies are kept,
   never errors; `stream=True` calls are never cached.
2. **Rate limit** (`_runner/_limits.py`): one limiter per wrapped client, shared by its
   copies, every case and judge, threads and event loops. Tokens are estimated before the
   call (a quarter of the characters of the request's JSON `messages` / `input` /
   `instructions`, plus `max_tokens` / `max_completion_tokens` / `max_output_tokens`) and
   settled with the reply's real usage.
3. **Retries**: 429, 5xx, timeouts and connection errors are retried with exponential
   backoff and jitter that honours `Retry-After` (`_replies.backoff_delay`); each retry
   passes the limiter again. The SDK is called with `max_retries=0` (one layer of retries);
   after the last retry the SDK's error is raised unchanged.
4. **Usage and steps**: each call is recorded into the current sample (`current_meter()`) under the
   current source (the task, or the judge's score name): the reply's `usage`, the request's
   and the reply's model, `cached=`, `retries=`; with `transcript=True` (the default) a
   task's call is also a step of the sample's transcript (`_capture.py`). Outside a run
   nothing is recorded.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import os
import random
import threading
import time
import uuid
import weakref
from collections.abc import Mapping
from typing import Any

from .._errors import ConfigurationError
from .._model._contract import safe_repr
from .._model._origin import mark_provider
from .._runner._limits import Limiter, limiter_for
from .._runner._meter import Meter, current_meter, current_source
from .._util._callables import is_async
from ._cache import ResponseCache
from ._capture import Capture
from ._replies import backoff_delay, is_transient
from ._sdk import (
    ENDPOINTS,
    AsyncStream,
    Stream,
    default_async_http,
    dump,
    estimate_tokens,
    plain,
    real_tokens,
    recipe,
    reply_type,
)

__all__ = ["WrappedOpenAI", "wrap_openai"]

TRANSPORT = frozenset({"extra_headers", "timeout"})  # how to send, not what is asked: unkeyed
BACKOFF_BASE = 0.5  # seconds before the first retry (the SDK's own first delay)
BACKOFF_CAP = 60.0  # the longest wait, Retry-After included


def _field(reply: Any, name: str) -> Any:
    """A reply's field: an SDK object's attribute, or a compatible client's dict key."""
    if isinstance(reply, Mapping):
        return reply.get(name)
    return getattr(reply, name, None)


class _Call:
    """One `create` call's state: its meter, source, cache key and token estimate."""

    __slots__ = (
        "capture",
        "endpoint",
        "estimate",
        "key",
        "limiter",
        "meter",
        "model",
        "owner",
        "source",
    )

    def __init__(self, owner: WrappedOpenAI, endpoint: str, request: dict[str, Any]) -> None:
        self.owner = owner
        self.endpoint = endpoint
        self.meter: Meter | None = current_meter()
        self.source = current_source()  # captured now: a stream may be read elsewhere
        self.capture = (
            Capture(endpoint, request, self.source, self.meter)
            if owner._evalbook_transcript
            else None
        )
        model = request.get("model")
        self.model = model if isinstance(model, str) else None
        self.key: str | None = None
        cache = owner._evalbook_cache
        if cache is not None and request.get("stream") is not True:
            asked = {k: v for k, v in request.items() if k not in TRANSPORT}
            ident = {"endpoint": endpoint, "base_url": owner._evalbook_base_url, **asked}
            ident = plain(ident)
            epoch = None if self.meter is None else self.meter.epoch
            key = cache.key(ident, epoch=epoch, occurrence=0)
            if key is not None and self.meter is not None:
                n = self.meter.occurrence(key)
                key = key if n == 0 else cache.key(ident, epoch=epoch, occurrence=n)
            self.key = key
        self.limiter: Limiter | None = owner._evalbook_limiter()
        self.estimate = 0.0
        if self.limiter is not None and owner._evalbook_tpm is not None:
            self.estimate = estimate_tokens(request)

    def hit(self) -> tuple[bool, Any]:
        """The cached reply, rebuilt as the SDK's type, when there is one."""
        cache = self.owner._evalbook_cache
        if cache is None or self.key is None:
            return False, None
        found, value = cache.get(self.key)
        if not found:
            return False, None
        cls = reply_type(self.endpoint) if self.owner._evalbook_sdk_replies else None
        if cls is not None and isinstance(value, dict):
            try:
                value = cls.model_validate(value)
            except ValueError:
                # A reply the SDK took as sent (it does not validate: a server's own
                # finish_reason, a missing field) is rebuilt as leniently as it was read.
                value = cls.construct(**value)
        self.record(None, _field(value, "model"), cached=True, retries=0)
        if self.capture is not None:
            self.capture.reply(value, cached=True)
        return True, value

    def wait(self) -> float:
        """Book one request (and its estimated tokens): the seconds to wait first."""
        return 0.0 if self.limiter is None else self.limiter.acquire(self.estimate)

    def failed(self, retries: int, last: bool, exc: BaseException) -> None:
        """An attempt raised: its estimated tokens are given back (the error reply used
        none); the last one counts as a call of unknown usage (and a step with its error)."""
        if self.limiter is not None and self.estimate:
            self.limiter.settle(-self.estimate)
        if last:
            self.record(None, None, cached=False, retries=retries)
            if self.capture is not None:
                self.capture.failed(exc)

    def done(self, response: Any, retries: int) -> Any:
        """Settle the limiter, record the usage, keep the reply; the reply."""
        usage, model = _field(response, "usage"), _field(response, "model")
        self.settle(usage)
        self.record(usage, model, cached=False, retries=retries)
        if self.capture is not None:
            self.capture.reply(response, cached=False)
        cache = self.owner._evalbook_cache
        if cache is not None and self.key is not None:
            cache.put(self.key, dump(response), model=self.model)
        return response

    def settle(self, usage: Any) -> None:
        real = real_tokens(usage)
        if self.limiter is not None and self.owner._evalbook_tpm is not None and real is not None:
            self.limiter.settle(real - self.estimate)

    def record(self, usage: Any, response_model: Any, *, cached: bool, retries: int) -> None:
        if self.meter is not None:
            self.meter.record(
                usage,
                model=self.model,
                response_model=response_model if isinstance(response_model, str) else None,
                cached=cached,
                retries=retries,
                source=self.source,
            )


class _Endpoint:
    """`chat.completions` or `responses` of a wrapped client: `create` wrapped, the rest
    (`parse`, `retrieve`, ...) the SDK's own."""

    def __init__(self, owner: WrappedOpenAI, endpoint: str) -> None:
        self._evalbook_owner = owner
        self._evalbook_endpoint = endpoint

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_evalbook"):
            raise AttributeError(name)
        return getattr(self._evalbook_sdk(self._evalbook_owner._evalbook_client), name)

    def _evalbook_sdk(self, client: Any) -> Any:
        obj = client
        for part in ENDPOINTS[self._evalbook_endpoint][0]:
            obj = getattr(obj, part)
        return obj

    def create(self, **request: Any) -> Any:
        """The SDK's `create`, cached, rate-limited, retried and metered (see `wrap_openai`)."""
        owner = self._evalbook_owner
        call = _Call(owner, self._evalbook_endpoint, request)
        found, value = call.hit()
        if found:
            return value
        create = self._evalbook_sdk(owner._evalbook_sdk_client()).create
        retries = 0
        while True:
            delay = call.wait()
            if delay > 0:
                time.sleep(delay)
            try:
                response = create(**request)
            except Exception as exc:
                transient = is_transient(exc)
                last = retries >= owner._evalbook_max_retries or not transient
                call.failed(retries, last, exc)
                if last:
                    if transient:  # a 429, 5xx, timeout or lost connection: the provider's
                        mark_provider(exc)
                    raise
                time.sleep(owner._evalbook_backoff(retries, exc))
                retries += 1
                continue
            if request.get("stream") is True:
                return Stream(response, call, retries)
            return call.done(response, retries)


class _AsyncEndpoint(_Endpoint):
    async def create(self, **request: Any) -> Any:
        """The SDK's `create`, cached, rate-limited, retried and metered (see `wrap_openai`)."""
        owner = self._evalbook_owner
        call = _Call(owner, self._evalbook_endpoint, request)
        found, value = call.hit()
        if found:
            return value
        create = self._evalbook_sdk(owner._evalbook_sdk_client()).create
        retries = 0
        while True:
            delay = call.wait()
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                response = await create(**request)
            except Exception as exc:
                transient = is_transient(exc)
                last = retries >= owner._evalbook_max_retries or not transient
                call.failed(retries, last, exc)
                if last:
                    if transient:  # a 429, 5xx, timeout or lost connection: the provider's
                        mark_provider(exc)
                    raise
                await asyncio.sleep(owner._evalbook_backoff(retries, exc))
                retries += 1
                continue
            if request.get("stream") is True:
                return AsyncStream(response, call, retries)
            return call.done(response, retries)


class _Chat:
    """`client.chat` of a wrapped client: `completions` wrapped, the rest the SDK's."""

    def __init__(self, owner: WrappedOpenAI, completions: _Endpoint) -> None:
        self._evalbook_owner = owner
        self.completions = completions

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_evalbook"):
            raise AttributeError(name)
        return getattr(self._evalbook_owner._evalbook_client.chat, name)


class WrappedOpenAI:
    """An OpenAI SDK client whose calls are metered, cached, rate-limited and retried.

    Made by `eb.wrap_openai`; every attribute but `chat.completions.create`,
    `responses.create`, `with_options` and `copy` is the wrapped client's.
    """

    def __init__(
        self,
        client: Any,
        *,
        cache: ResponseCache | None,
        rpm: float | None,
        tpm: float | None,
        max_retries: int,
        client_id: str | None = None,
        transcript: bool = True,
    ) -> None:
        self._evalbook_client = client
        self._evalbook_transcript = transcript
        self._evalbook_cache = cache
        self._evalbook_rpm = rpm
        self._evalbook_tpm = tpm
        self._evalbook_max_retries = max_retries
        # Copies of this client (pickled to a worker, or with_options) keep the id, so
        # they share one limiter.
        self._evalbook_id = client_id or uuid.uuid4().hex
        self._unshared()

    def _unshared(self) -> None:
        client = self._evalbook_client
        self._evalbook_raw = client.with_options(max_retries=0)  # the wrapper retries
        self._evalbook_base_url = str(getattr(client, "base_url", "") or "")
        self._evalbook_async = _is_async_client(client)
        # The openai SDK's clients answer with its types, and so do their cache hits, also
        # for a subclass of one defined elsewhere; another client's hits are the JSON its
        # replies were kept as (a hit answers with the type a miss does)
        self._evalbook_sdk_replies = any(
            c.__module__.split(".")[0] == "openai" for c in type(client).__mro__
        )
        endpoint = _AsyncEndpoint if self._evalbook_async else _Endpoint
        self.chat = _Chat(self, endpoint(self, "chat.completions"))
        if getattr(client, "responses", None) is not None:
            self.responses = endpoint(self, "responses")
        self._evalbook_rng = random.Random()
        # An async client's connections belong to the event loop that opened them, and each
        # eb.run() has its own loop: a connection kept alive from an earlier run fails with
        # "Event loop is closed". So a client whose HTTP client the SDK made itself gets one
        # of its own per loop (a user's own http_client= is used as given).
        self._evalbook_per_loop = self._evalbook_async and (
            type(getattr(client, "_client", None)).__name__ == "AsyncHttpxClientWrapper"
        )
        self._evalbook_loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any]
        self._evalbook_loops = weakref.WeakKeyDictionary()
        self._evalbook_lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        # The SDK's clients hold locks and connections and cannot be pickled; one made from
        # plain options is sent as those options (the API key included: a worker needs it)
        # and made again on arrival. Any other client travels as itself.
        how = recipe(self._evalbook_client)
        return {
            "client": self._evalbook_client if how is None else None,
            "recipe": how,
            "cache": self._evalbook_cache,
            "rpm": self._evalbook_rpm,
            "tpm": self._evalbook_tpm,
            "max_retries": self._evalbook_max_retries,
            "client_id": self._evalbook_id,
            "transcript": self._evalbook_transcript,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        how = state.get("recipe")
        client = state["client"] if how is None else how[0](**how[1])
        self.__init__(  # type: ignore[misc]
            client,
            cache=state["cache"],
            rpm=state["rpm"],
            tpm=state["tpm"],
            max_retries=state["max_retries"],
            client_id=state["client_id"],
            transcript=state.get("transcript", True),
        )

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_evalbook"):  # not set yet (unpickling): never the client's
            raise AttributeError(name)
        return getattr(self._evalbook_client, name)

    def __repr__(self) -> str:
        return f"<wrap_openai {self._evalbook_client!r}>"

    def with_options(self, **options: Any) -> WrappedOpenAI:
        """The SDK's `with_options`, wrapped the same way (same cache and limiter)."""
        retries = options.get("max_retries", self._evalbook_max_retries)
        return WrappedOpenAI(
            self._evalbook_client.with_options(**options),
            cache=self._evalbook_cache,
            rpm=self._evalbook_rpm,
            tpm=self._evalbook_tpm,
            max_retries=_check_retries(retries),
            client_id=self._evalbook_id,
            transcript=self._evalbook_transcript,
        )

    copy = with_options

    def _evalbook_sdk_client(self) -> Any:
        """The SDK client the wrapper calls (it retries itself: the SDK's are off)."""
        if not self._evalbook_per_loop:
            return self._evalbook_raw
        loop = asyncio.get_running_loop()
        with self._evalbook_lock:
            raw = self._evalbook_loops.get(loop)
            if raw is None:
                raw = self._evalbook_client.with_options(
                    max_retries=0, http_client=default_async_http()
                )
                self._evalbook_loops[loop] = raw
            return raw

    def _evalbook_limiter(self) -> Limiter | None:
        if self._evalbook_rpm is None and self._evalbook_tpm is None:
            return None
        return limiter_for(self._evalbook_id, self._evalbook_rpm, self._evalbook_tpm)

    def _evalbook_backoff(self, retry: int, exc: BaseException) -> float:
        return backoff_delay(retry, BACKOFF_BASE, BACKOFF_CAP, self._evalbook_rng, exc)


def _is_async_client(client: Any) -> bool:
    create = client.chat.completions.create
    # An SDK's async client may hide its coroutine behind a plain wrapper: its class says.
    return is_async(create) or type(client).__name__.startswith("Async")


def _check_rate(name: str, value: object) -> float | None:
    if value is None:
        return None
    number = float(value) if isinstance(value, numbers.Real) else math.nan
    if isinstance(value, bool) or not math.isfinite(number) or not number > 0:
        raise ConfigurationError(
            f"eb.wrap_openai(): {name} must be a finite number > 0 or None, got "
            f"{safe_repr(value)}; e.g. {name}=500"
        )
    return number


def _check_retries(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ConfigurationError(
            f"eb.wrap_openai(): max_retries must be an integer >= 0, got {safe_repr(value)}"
        )
    return value


def wrap_openai(
    client: Any,
    *,
    cache: str | os.PathLike[str] | None = None,
    requests_per_minute: float | None = None,
    tokens_per_minute: float | None = None,
    max_retries: int | None = None,
    transcript: bool = True,
) -> WrappedOpenAI:
    """An OpenAI SDK client (`OpenAI` or `AsyncOpenAI`) that records its usage in the run.

    `chat.completions.create` and `responses.create` record each call's tokens into the
    sample that makes it (under "task", or the judge's score name), answer a request asked
    before from `cache=`, keep within the rate limits and retry 429/5xx; see docs/cost.md.

    Args:
        client: `openai.OpenAI(...)` or `openai.AsyncOpenAI(...)` (or a compatible client
            with `chat.completions.create` and `with_options`).
        cache: A folder for replies (safe to delete); a request asked before in the same
            epoch (same model, messages and every parameter) is answered from it with no
            request, recorded as cached (0 tokens, cost 0). Streamed calls are not cached.
        requests_per_minute: The most requests a minute, across every copy of this client
            (bursts of at most one second's worth).
        tokens_per_minute: The most tokens a minute (estimated before the call, corrected
            by the reply's usage).
        max_retries: Retries of a 429, 5xx, timeout or connection error (default: the
            client's own `max_retries`); the SDK itself is then asked not to retry.
        transcript: Add each of the task's calls to the sample's transcript: the request's
            new messages, then the reply with its tokens, cost and latency (a judge's calls
            never are; see docs/transcripts.md). Streamed calls are not added.

    Example:
        >>> import evalbook as eb
        >>> class Completions:
        ...     def create(self, **request):
        ...         return {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}
        >>> class Chat:
        ...     completions = Completions()
        >>> class Client:  # stands in for openai.OpenAI(...)
        ...     chat = Chat()
        ...     max_retries = 2
        ...     def with_options(self, **options):
        ...         return self
        >>> client = eb.wrap_openai(Client(), requests_per_minute=600)
        >>> client.chat.completions.create(model="m", messages=[])["usage"]
        {'prompt_tokens': 3, 'completion_tokens': 1}
    """
    if isinstance(client, WrappedOpenAI):
        raise ConfigurationError(
            "eb.wrap_openai(): this client is wrapped already; wrap the SDK client once "
            "(its calls would be counted twice)"
        )
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    if not callable(create) or not callable(getattr(client, "with_options", None)):
        raise ConfigurationError(
            "eb.wrap_openai() needs an OpenAI SDK client (openai.OpenAI or openai.AsyncOpenAI: "
            "chat.completions.create and with_options), not "
            f"{safe_repr(client)}; e.g. eb.wrap_openai(openai.OpenAI())"
        )
    rpm = _check_rate("requests_per_minute", requests_per_minute)
    tpm = _check_rate("tokens_per_minute", tokens_per_minute)
    if max_retries is None:
        found = getattr(client, "max_retries", 2)
        max_retries = found if isinstance(found, int) and not isinstance(found, bool) else 2
    retries = _check_retries(max_retries)
    if cache is not None and not isinstance(cache, str | os.PathLike):
        raise ConfigurationError(
            f"eb.wrap_openai(): cache must be a folder path or None, got {safe_repr(cache)}"
        )
    folder = None if cache is None else ResponseCache(cache, kind="openai_response")
    if not isinstance(transcript, bool):
        raise ConfigurationError(
            f"eb.wrap_openai(): transcript must be True or False, got {safe_repr(transcript)}"
        )
    return WrappedOpenAI(
        client, cache=folder, rpm=rpm, tpm=tpm, max_retries=retries, transcript=transcript
    )
