"""What a judge does with one model call: validate the reply, retry transient errors.

A vote is one call to the judge's client. Its reply is validated in a fixed order
(docs/judges.md):
not parseable / not a mapping / no `score` → `invalid_judge_output`; a score that is not a real
number, not finite or outside the declared scale → `invalid_score` (never clamped). A client
exception becomes `judge_raised` once the retries for transient errors are spent.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._model._contract import InvalidScore, safe_repr, validate_on_scale

__all__ = [
    "Vote",
    "backoff_delay",
    "bad_output",
    "is_transient",
    "judge_request",
    "parse_reply",
    "reply_field",
    "reply_object",
    "storable",
]

# A reply wrapped in a Markdown code fence: ```json\n{...}\n``` (the language tag is optional).
_FENCE = re.compile(r"\A```[A-Za-z0-9_+-]*[ \t]*\n?(.*?)\n?[ \t]*```\Z", re.S)

# Exception class names (anywhere in the MRO) that mean "try again": the OpenAI SDK's and httpx's
# timeouts and connection failures. Matched by name so that no SDK has to be imported.
_TRANSIENT_NAMES = frozenset(
    {
        "APITimeoutError",
        "APIConnectionError",
        "TimeoutException",
        "TransportError",
        "ServiceUnavailableError",
    }
)


@dataclass(frozen=True, slots=True)
class Vote:
    """One validated judge call: a raw score on the scale, or an error code and message."""

    raw: float | None = None  # the validated raw score; None when the vote is invalid
    shown: int | float | None = None  # the raw score as the judge wrote it (int stays int)
    justification: str | None = None
    code: str | None = None  # judge_raised | invalid_judge_output | invalid_score, if invalid
    message: str | None = None
    cached: bool = False
    tries: int = 1
    origin: str | None = None  # of a `judge_raised` vote: provider for a 429 or 5xx

    @property
    def valid(self) -> bool:
        """True when the vote holds a valid raw score."""
        return self.code is None

    def to_json(self) -> dict[str, Any]:
        """The vote as it is kept in the record's metadata."""
        out: dict[str, Any]
        if self.code is None:
            out = {"raw": self.shown, "justification": self.justification}
        else:
            out = {"error": self.code, "message": self.message}
        if self.cached:
            out["cached"] = True
        if self.tries > 1:
            out["tries"] = self.tries
        return out


def bad_output(message: str) -> Vote:
    """The vote of a reply that is not what the tool asked for: `invalid_judge_output`."""
    return Vote(code="invalid_judge_output", message=message)


def _decode(reply: str) -> tuple[bool, Any]:
    text = reply.strip()
    fenced = _FENCE.match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    try:
        return True, json.loads(text)
    except ValueError:
        return False, None


def reply_object(reply: object, field: str) -> Mapping[str, Any] | Vote:
    """The reply as a mapping (decoded from bytes or JSON text, a code fence allowed), or an
    `invalid_judge_output` vote saying why it is not one; `field` is the tool's key field."""
    data: object = reply
    if isinstance(reply, bytes | bytearray):
        try:
            data = reply.decode("utf-8")
        except UnicodeDecodeError:
            return bad_output(f"the judge's reply is not UTF-8 text: {safe_repr(reply)}")
    if isinstance(data, str):
        ok, data = _decode(data)
        if not ok:
            return bad_output(f"the judge's reply is not JSON: {safe_repr(reply)}")
    if not isinstance(data, Mapping):
        return bad_output(
            f"the judge's reply is not an object with a '{field}' field: {safe_repr(data)}"
        )
    return data


def reply_field(reply: object, field: str) -> tuple[Any, str | None] | Vote:
    """The reply's `field` and its justification as text (None without one), or the
    `invalid_judge_output` vote saying why the reply has no such field."""
    data = reply_object(reply, field)
    if isinstance(data, Vote):
        return data
    if field not in data:
        return bad_output(f"the judge's reply has no '{field}' field: {safe_repr(data)}")
    justification = data.get("justification")
    return data[field], None if justification is None else str(justification)


def parse_reply(reply: object, low: float, high: float) -> Vote:
    """Validate one reply (the tool call's arguments: a mapping or JSON text).

    Example:
        >>> parse_reply('{"score": 95, "justification": "fine"}', 0, 100).raw
        95.0
        >>> parse_reply({"score": 950}, 0, 100).code
        'invalid_score'
    """
    found = reply_field(reply, "score")
    if isinstance(found, Vote):
        return found
    raw, text = found
    try:
        value = validate_on_scale(raw, low, high)
    except InvalidScore as exc:
        return Vote(justification=text, code="invalid_score", message=f"judge reply: {exc}")
    shown = raw if type(raw) is int or type(raw) is float else value
    return Vote(raw=value, shown=shown, justification=text)


def _attr(obj: object, name: str) -> Any:
    """`obj.name`, or None when it is missing or reading it raises (an SDK error's property
    may raise anything: the judge must still record the error)."""
    try:
        return getattr(obj, name, None)
    except Exception:
        return None


def _status_code(exc: BaseException) -> int | None:
    for holder in (exc, _attr(exc, "response")):
        code = _attr(holder, "status_code")
        if isinstance(code, int) and not isinstance(code, bool):
            return code
    return None


def is_transient(exc: BaseException) -> bool:
    """True for errors worth retrying: timeouts, connection failures, 408, 409, 429 and 5xx.

    Example:
        >>> is_transient(TimeoutError()), is_transient(ValueError())
        (True, False)
    """
    if isinstance(exc, TimeoutError | ConnectionError):
        return True
    code = _status_code(exc)
    if code is not None:
        return code in (408, 409, 429) or 500 <= code < 600
    return any(cls.__name__ in _TRANSIENT_NAMES for cls in type(exc).__mro__)


def _retry_after(exc: BaseException) -> float | None:
    headers = _attr(_attr(exc, "response"), "headers")
    if headers is None:
        return None
    try:
        value = float(headers.get("retry-after"))
    except Exception:  # no such header, not a number, or a mapping whose get() raises
        return None
    return value if value >= 0 else None


def backoff_delay(
    retry: int, base: float, cap: float, rng: random.Random, exc: BaseException | None = None
) -> float:
    """Seconds to wait before retry number `retry` (0-based): exponential with jitter.

    The ceiling doubles each retry (`base`, `2·base`, `4·base`, … up to `cap`); the delay is
    drawn uniformly from its upper half. A server's `Retry-After` (up to `cap`) is honoured.

    Example:
        >>> 1.0 <= backoff_delay(1, 1.0, 30.0, random.Random(0)) <= 2.0
        True
    """
    ceiling = min(cap, base * 2.0**retry)
    delay = ceiling / 2 + rng.uniform(0, ceiling / 2)
    hint = _retry_after(exc) if exc is not None else None
    if hint is not None:
        delay = max(delay, min(hint, cap))
    return delay


def judge_request(
    model: str | None,
    messages: list[dict[str, Any]],
    tool: dict[str, Any],
    params: Mapping[str, Any],
) -> dict[str, Any]:
    """What one vote asks, as the response cache (`_cache.ResponseCache`) keys it."""
    return {"model": model, "messages": messages, "tool": tool, "params": dict(params)}


def storable(reply: Any) -> Any:
    """The reply as the cache keeps it: bytes as their UTF-8 text (parsed the same way);
    bytes that are not UTF-8 stay bytes, which JSON cannot hold, so they are not cached."""
    if isinstance(reply, bytes | bytearray):
        try:
            return bytes(reply).decode("utf-8")
        except UnicodeDecodeError:
            return reply
    return reply
