"""A wrapped client's calls as steps of the sample's transcript (`wrap_openai(transcript=True)`).

Each call of the task (never a judge's or scorer's: they run under another source) appends to
the attempt's `StepLog` the request's messages that are new and the reply, as an assistant
message with the call's model, tokens, cost, latency and start; a cached reply is a step
marked `cached` (0 tokens, cost 0, as the meter counts it); a call that failed for good is an
assistant step with its `error`. Streamed calls are not steps (their reply is never whole in
one place). Capture never breaks a call: a request this cannot read as chat messages adds
nothing, with one warning per process.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping
from typing import Any

from .._model._tally import TASK, amount, cost_of, token_counts
from .._model._transcript import Message
from .._runner._meter import Meter
from .._runner._steps import StepLog, current_steps, request_message
from .._util._text import safe_str

__all__ = ["Capture"]

log = logging.getLogger("evalbook")
_WARNED: list[bool] = []
# OpenAI's roles that are another name for one of a transcript's
_ROLE_NAMES = {"developer": "system", "function": "tool"}


def _field(obj: Any, name: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _asked(endpoint: str, request: Mapping[str, Any]) -> list[Message]:
    """The request's messages (chat `messages`, or the Responses API's `input`)."""
    if endpoint == "responses":
        found: Any = request.get("input")
        if isinstance(found, str):
            return [Message(role="user", content=found)]
        steps = []
        instructions = request.get("instructions")
        if isinstance(instructions, str):
            steps.append(Message(role="system", content=instructions))
        for m in found or ():
            role = _field(m, "role")
            if role is None:  # a tool output or a reasoning item: not a chat message
                continue
            steps.append(_message(m))
        return steps
    return [_message(m) for m in request.get("messages") or ()]


def _message(m: Any) -> Message:
    role = _field(m, "role")
    if role in _ROLE_NAMES:
        dumped = m if isinstance(m, Mapping) else m.model_dump(exclude_none=True)
        m = {**dumped, "role": _ROLE_NAMES[role]}
    return request_message(m)


def _reply(endpoint: str, response: Any) -> Message:
    """The reply as an assistant message (its measurements are added by `Capture`)."""
    if endpoint == "responses":
        text = _field(response, "output_text")
        calls = []
        for item in _field(response, "output") or ():
            if _field(item, "type") == "function_call":
                calls.append(
                    {
                        "id": _field(item, "call_id") or _field(item, "id"),
                        "function": {
                            "name": _field(item, "name"),
                            "arguments": _field(item, "arguments") or "{}",
                        },
                    }
                )
        return Message(role="assistant", content=text, tool_calls=calls or None)
    choices = _field(response, "choices") or ()
    if not choices:
        return Message(role="assistant")
    message = _field(choices[0], "message")
    if message is None:
        return Message(role="assistant")
    return request_message(message)


class Capture:
    """One call's capture: made when the call starts, `reply`/`failed` when it ends."""

    __slots__ = ("_asked", "_endpoint", "_meter", "_model", "_start", "_started_at", "_steps")

    def __init__(
        self, endpoint: str, request: Mapping[str, Any], source: str, meter: Meter | None
    ) -> None:
        steps = current_steps() if source == TASK else None
        self._steps: StepLog | None = steps
        self._asked: list[Message] | None = None
        if steps is None or request.get("stream") is True:
            self._steps = None
            return
        try:
            self._asked = _asked(endpoint, request)
        except Exception as exc:  # capture never breaks a call
            self._steps = None
            _warn_once(exc)
            return
        self._endpoint = endpoint
        self._meter = meter
        model = request.get("model")
        self._model = model if isinstance(model, str) else None
        self._started_at = time.time()
        self._start = time.perf_counter()

    def reply(self, response: Any, *, cached: bool) -> None:
        """The call answered (from the cache, with `cached`): its reply is the next step."""
        if self._steps is None or self._asked is None:
            return
        took = time.perf_counter() - self._start
        try:
            message = _reply(self._endpoint, response)
            model = _field(response, "model")
            model = model if isinstance(model, str) else self._model
            if cached:
                t_in = t_out = cost = 0.0
            else:
                t_in, t_out = _tokens(_field(response, "usage"))
                prices = None if self._meter is None else self._meter.ledger.prices
                cost = cost_of(prices, (self._model, model), t_in, t_out)
            step = message.model_copy(
                update={
                    "model": model,
                    "input_tokens": None if math.isnan(t_in) else t_in,
                    "output_tokens": None if math.isnan(t_out) else t_out,
                    "cost": None if math.isnan(cost) else cost,
                    "latency_s": took,
                    "started_at": self._started_at,
                    "cached": cached,
                }
            )
        except Exception as exc:  # capture never breaks a call
            _warn_once(exc)
            return
        self._steps.add_call(self._asked, step)

    def failed(self, exc: BaseException) -> None:
        """The call raised for good: an assistant step holding the error."""
        if self._steps is None or self._asked is None:
            return
        step = Message(
            role="assistant",
            model=self._model,
            error=f"{type(exc).__name__}: {safe_str(exc)}",
            latency_s=time.perf_counter() - self._start,
            started_at=self._started_at,
        )
        self._steps.add_call(self._asked, step)


def _tokens(usage: Any) -> tuple[float, float]:
    found_in, found_out = token_counts(usage)
    out = []
    for name, value in (("input_tokens", found_in), ("output_tokens", found_out)):
        try:
            checked = amount(name, value)
        except ValueError:
            checked = None
        out.append(math.nan if checked is None else float(checked))
    return out[0], out[1]


def _warn_once(exc: BaseException) -> None:
    if not _WARNED:
        _WARNED.append(True)
        log.warning(
            "eb.wrap_openai: a call could not be added to the sample's transcript (%s: %s); "
            "the call itself went ahead (logged once per process)",
            type(exc).__name__,
            safe_str(exc),
        )
