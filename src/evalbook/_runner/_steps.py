"""Where a task's steps go while it runs: the attempt's `StepLog`.

The engine gives every attempt of a sample a fresh `StepLog` and makes it the current one (a
context variable, carried into worker threads as the usage meter is) while the task runs.
`ctx.step(...)` appends one message; a client from `eb.wrap_openai` appends each call's new
request messages and its reply (`add_call`). A scorer's or judge's calls run under another
source and never become steps (the wrapper checks `current_source()`).

At the end of the attempt the log becomes the sample's `eb.Transcript` (None when nothing was
logged); a task that returns an `eb.Transcript` itself has that one instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any

from .._model._transcript import Message, Transcript, message_of
from ._meter import Setting

__all__ = ["StepLog", "current_steps", "logging_steps", "request_message"]

_STEPS: ContextVar[StepLog | None] = ContextVar("evalbook_steps", default=None)


def current_steps() -> StepLog | None:
    """The step log of the attempt running in this context; None outside a task."""
    return _STEPS.get()


def logging_steps(steps: StepLog) -> AbstractContextManager[StepLog]:
    """Make `steps` the current log inside (the engine, around one attempt's task)."""
    return Setting(_STEPS, steps)


def _key(m: Message) -> tuple[Any, ...]:
    """What makes a request message the same as a logged one (measurements aside)."""
    calls = tuple(c.id for c in m.tool_calls) if m.tool_calls else ()
    return (m.role, m.content or "", calls, m.tool_call_id)


def request_message(message: Any) -> Message:
    """A request message as a `Message`: a dict, or an SDK object with `model_dump()`."""
    if not isinstance(message, (Mapping, Message)):
        dump = getattr(message, "model_dump", None)
        message = dump(exclude_none=True) if callable(dump) else message
    return message_of(message)


class StepLog:
    """One attempt's steps, in order; safe to add to from any thread."""

    __slots__ = ("_lock", "closed", "messages")

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.closed = False  # the attempt ended: a call left behind at a deadline adds nothing
        self._lock = threading.Lock()

    def add(self, message: Message) -> None:
        """Append one step (`ctx.step`)."""
        with self._lock:
            if not self.closed:
                self.messages.append(message)

    def add_call(self, request: Iterable[Message], reply: Message) -> None:
        """Append a model call: the request's messages not logged yet, then the reply.

        An agent loop sends its whole conversation each turn, so the new messages are those
        after the last step logged (the previous reply, found from the request's end); a
        request that does not hold it starts a conversation of its own, and its messages
        after those it shares with the log's first ones are new.
        """
        asked = list(request)
        with self._lock:
            if self.closed:
                return
            start = 0
            if self.messages:
                last = _key(self.messages[-1])
                keys = [_key(m) for m in asked]
                at = next((i for i in range(len(keys) - 1, -1, -1) if keys[i] == last), None)
                if at is not None:
                    start = at + 1
                else:
                    for have, key in zip(self.messages, keys, strict=False):
                        if _key(have) != key:
                            break
                        start += 1
            self.messages.extend(asked[start:])
            self.messages.append(reply)

    def close(self) -> Transcript | None:
        """End the attempt: its transcript (None when nothing was logged)."""
        with self._lock:
            self.closed = True
            messages = list(self.messages)
        if not messages:
            return None
        return Transcript.model_construct(messages=messages, output=None)
