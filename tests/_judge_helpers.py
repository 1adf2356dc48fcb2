"""Fakes shared by the judge tests: a scripted judge client and small run helpers."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

import pandas as pd

import evalbook as eb


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


@dataclass(frozen=True)
class Record:
    """A judge's record of one case, as `run.scores` holds it (missing text: None)."""

    status: str  # "scored", "unscored" or "error"
    value: float  # NaN unless scored
    reason: str | None
    message: str | None
    rationale: str | None
    metadata: dict[str, Any] | None


def _text(x: Any) -> str | None:
    return None if x is None or pd.isna(x) else str(x)


def judged(j: Any, **values: Any) -> Record:
    """Score one case with a judge in a run of its own: `output=` is the case's output, the
    other values its columns; the case's first record."""
    data = pd.DataFrame({name: [value] for name, value in values.items()})
    run = eb.run(data, scorers=[j], output_column="output", store=None, progress=False)
    row = run.scores.iloc[0]
    metadata = _text(row["metadata"])
    return Record(
        status=str(row["status"]),
        value=float(row["value"]),
        reason=_text(row["reason"]),
        message=_text(row["message"]),
        rationale=_text(row["rationale"]),
        metadata=None if metadata is None else json.loads(metadata),
    )


def one(reply: Any, scale: tuple[float, float] = (0, 100), **options: Any) -> Record:
    client = reply if callable(reply) else Scripted(reply)
    options.setdefault("backoff", 0)
    return judged(eb.judge("q", "Rate {output}", client=client, scale=scale, **options), output="x")


def run(*args: Any, **kwargs: Any) -> eb.Run:
    kwargs.setdefault("store", None)
    kwargs.setdefault("progress", False)
    return eb.run(*args, **kwargs)


def meta(rec: Record) -> dict[str, Any]:
    assert rec.metadata is not None
    return rec.metadata
