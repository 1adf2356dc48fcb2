"""Fakes shared by the judge tests: a scripted judge client and small run helpers."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import evalbook as eb
from evalbook._model._contract import Rec, record_of
from evalbook._model._scorers import Scorer


class Scripted:
    """A fake judge client: answers the scripted replies in call order (the last one repeats).

    An exception instance in the script is raised instead of returned.
    """

    def __init__(self, *replies: Any, model: str | None = None) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[list[dict[str, Any]], dict[str, Any]]] = []
        self.lock = threading.Lock()
        if model is not None:
            self.model = model

    def __call__(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        with self.lock:
            self.calls.append((messages, tool))
            reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, BaseException):
            raise reply
        return reply


def score(value: Any, justification: str = "because") -> dict[str, Any]:
    return {"score": value, "justification": justification}


def judged(j: Scorer, **values: Any) -> Rec:
    """Score one case with a judge, outside a run, and interpret it like the engine does."""
    return record_of(asyncio.run(j.fn(**values)))


def one(reply: Any, scale: tuple[float, float] = (0, 100), **options: Any) -> Rec:
    client = reply if callable(reply) else Scripted(reply)
    options.setdefault("backoff", 0)
    return judged(eb.judge("q", "Rate {output}", client=client, scale=scale, **options), output="x")


def run(*args: Any, **kwargs: Any) -> eb.Run:
    kwargs.setdefault("store", None)
    kwargs.setdefault("progress", False)
    return eb.run(*args, **kwargs)


def meta(rec: Rec) -> dict[str, Any]:
    assert rec.metadata is not None
    return rec.metadata
