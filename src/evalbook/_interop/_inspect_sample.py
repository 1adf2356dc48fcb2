"""An Inspect sample read from its JSON (the fields `_inspect_json` decodes): what the import
keeps, no Inspect models.

Building Inspect's `EvalSample` (and resolving its attachments) was most of an import's time,
for the few fields `_inspect.py` reads. Here those fields are read from the JSON as Inspect's
models give them (inspect_ai 0.3.285: `log/_log.py` `EvalSample`, `model/_chat_message.py`,
`model/_model_output.py`, `scorer/_metric.py` `Score`, `tool/_tool_call.py`,
`log/_condense.py` `resolve_sample_attachments`):

- a message's `text`: its content if text, else its text parts' text joined by newlines; an
  `attachment://` (or older `tc://`) reference in the content is the attachment's text, one the
  sample does not hold stays as written; an assistant's `tool_calls`, a tool result's `error`;
- the output's `completion`: as written, else the first choice's text (never resolved);
- a score's `reason`: its own, else its metadata's legacy `unscored_reason`.

Fields the import does not keep are not read, so not checked either. Anything of another
shape in what is kept (a content part other than text or reasoning, a tool call argument that
is a reference, a number where Inspect takes a whole one, a legacy `score` or `transcript`) raises
`Unusual`: the caller reads that sample with Inspect's own models, as Inspect reads it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from msgspec import UNSET

from ._inspect_events import Unusual, events_of
from ._inspect_json import Doc

__all__ = ["LightSample", "light_sample"]

_ROLES = ("system", "user", "assistant", "tool")
_REFERENCES = ("attachment://", "tc://")
_ATTACHMENT = "attachment://"
_OLD_REFERENCE = "tc://"
# the content parts read here (Inspect's text and reasoning); any other part: Inspect decides
_PARTS = ("text", "reasoning")
_TOOL_ERRORS = frozenset(
    {
        "parsing",
        "timeout",
        "unicode_decode",
        "permission",
        "file_not_found",
        "is_a_directory",
        "limit",
        "approval",
        "cancelled",
        "sandbox_unavailable",
        "unknown",
        "output_limit",
    }
)
_LIMITS = frozenset(
    {"context", "time", "working", "message", "token", "turn", "cost", "operator", "custom"}
)


class _Obj:
    """Attributes only: what `_inspect.py` reads of an Inspect object."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)


class LightSample(_Obj):
    """A sample as `_inspect.py` reads it: the attributes of Inspect's `EvalSample` it uses."""


def light_sample(doc: Doc) -> tuple[LightSample, list[Any]]:
    """The sample of `doc` (a sample member's fields read, `_inspect_json`) and its events.

    Raises:
        Unusual: `doc` is not a sample of the shape read here (see the module docstring).
    """
    if doc.score is not UNSET or doc.transcript is not UNSET:
        raise Unusual("not a sample of the current shape")
    attachments = doc.attachments
    sid, epoch = doc.id, doc.epoch
    if not (_is_int(sid) or isinstance(sid, str)) or not _is_int(epoch):
        raise Unusual("id or epoch")
    raw_input = doc.input
    sample_input: Any
    if isinstance(raw_input, str):
        sample_input = raw_input  # Inspect resolves a text input's references: never
    elif isinstance(raw_input, list):
        sample_input = [_message(m, attachments) for m in raw_input]
    else:
        raise Unusual("input")
    target = doc.target
    if not (isinstance(target, str) or _strings(target)):
        raise Unusual("target")
    choices = doc.choices
    if choices is not None and not _strings(choices):
        raise Unusual("choices")
    metadata = doc.metadata
    if not isinstance(metadata, dict):
        raise Unusual("metadata")
    messages = doc.messages
    if not isinstance(messages, list):
        raise Unusual("messages")
    retries = doc.error_retries
    if retries is not None and not isinstance(retries, list):
        raise Unusual("error_retries")
    sample = LightSample(
        id=sid,
        epoch=epoch,
        input=sample_input,
        target=target,
        choices=choices,
        metadata=metadata,
        messages=[_message(m, attachments) for m in messages],
        output=_output(doc.output),
        scores=_scores(doc.scores),
        error=_error(doc.error),
        error_retries=None if retries is None else [_error(r) for r in retries],
        limit=_limit(doc.limit),
        model_usage=_usages(doc.model_usage),
        started_at=_utc(doc.started_at),
        total_time=_optional_float(doc.total_time, "total_time"),
    )
    return sample, events_of(doc.events)


def _is_int(value: object) -> bool:
    return type(value) is int


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _optional_str(value: object, what: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Unusual(what)
    return value


def _optional_float(value: object, what: str) -> float | None:
    if value is None:
        return None
    if type(value) is not float and type(value) is not int:
        raise Unusual(what)
    return float(value)


def _utc(value: object) -> str | None:
    """Inspect's `UtcDatetimeStr`: ISO text, a trailing Z or none taken as UTC, given in UTC."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise Unusual("time")
    text = value[:-1] + "+00:00" if value.endswith(("Z", "z")) else value
    try:
        when = datetime.fromisoformat(text)
        return (when if when.tzinfo else when.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
    except (ValueError, OverflowError):
        raise Unusual("time") from None


def _resolved(text: str, attachments: dict[str, Any]) -> str:
    """Inspect's `resolve_attachment_fn`: a reference is its attachment, else left as is."""
    if text.startswith(_OLD_REFERENCE):
        text = _ATTACHMENT + text[len(_OLD_REFERENCE) :]
    if text.startswith(_ATTACHMENT):
        found = attachments.get(text[len(_ATTACHMENT) :], text)
        if not isinstance(found, str):
            raise Unusual("attachment")
        return found
    return text


def _text(content: object, attachments: dict[str, Any] | None) -> str:
    """A message's `text`, its references resolved (none when `attachments` is None)."""
    if isinstance(content, str):
        return content if attachments is None else _resolved(content, attachments)
    if not isinstance(content, list):
        raise Unusual("content")
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") not in _PARTS:
            raise Unusual("content part")
        if part["type"] == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise Unusual("text part")
            texts.append(text if attachments is None else _resolved(text, attachments))
        elif not isinstance(part.get("reasoning"), str):
            raise Unusual("reasoning part")
    return "\n".join(texts)


def _message(m: object, attachments: dict[str, Any]) -> _Obj:
    if not isinstance(m, dict):
        raise Unusual("message")
    role = m.get("role")
    if role not in _ROLES or "tool_error" in m:  # tool_error: Inspect migrates it
        raise Unusual("role")
    fields: dict[str, Any] = {
        "role": role,
        "id": _optional_str(m.get("id"), "message id"),
        "text": _text(m.get("content"), attachments),
    }
    if role == "assistant":
        calls = m.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise Unusual("tool_calls")
        fields["tool_calls"] = None if calls is None else [_call(c) for c in calls]
        fields["model"] = _optional_str(m.get("model"), "model")
    elif role == "tool":
        fields["tool_call_id"] = _optional_str(m.get("tool_call_id"), "tool_call_id")
        fields["function"] = _optional_str(m.get("function"), "function")
        error = m.get("error")
        if error is not None:
            if (
                not isinstance(error, dict)
                or error.get("type") not in _TOOL_ERRORS
                or not isinstance(error.get("message"), str)
            ):
                raise Unusual("tool error")
            error = _Obj(message=error["message"])
        fields["error"] = error
    return _Obj(**fields)


def _call(c: object) -> _Obj:
    if not isinstance(c, dict):
        raise Unusual("tool call")
    cid, function, arguments = c.get("id"), c.get("function"), c.get("arguments")
    if not isinstance(cid, str) or not isinstance(function, str) or not isinstance(arguments, dict):
        raise Unusual("tool call")
    if c.get("type") not in (None, "function", "custom") or _refers(arguments):
        # Inspect resolves the references of a call's arguments in some messages only
        raise Unusual("tool call")
    return _Obj(id=cid, function=function, arguments=arguments)


def _refers(value: object) -> bool:
    """Whether a JSON value holds a text that is an attachment reference."""
    if isinstance(value, str):
        return value.startswith(_REFERENCES)
    if isinstance(value, dict):
        return any(_refers(v) for v in value.values())
    if isinstance(value, list):
        return any(_refers(v) for v in value)
    return False


def _output(raw: object) -> _Obj:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise Unusual("output")
    choices = raw.get("choices", [])
    completion = raw.get("completion", "")
    if not isinstance(choices, list) or not isinstance(completion, str):
        raise Unusual("output")
    if not completion and choices:
        first = choices[0]
        message = first.get("message") if isinstance(first, dict) else None
        if not isinstance(message, dict) or message.get("role", "assistant") != "assistant":
            raise Unusual("output choice")
        completion = _text(message.get("content"), None)  # Inspect never resolves it
    return _Obj(completion=completion, choices=choices)


def _scores(raw: object) -> dict[str, _Obj] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise Unusual("scores")
    return {str(name): _score(s) for name, s in raw.items()}


def _scalar(value: object) -> bool:
    return isinstance(value, str | int | float)  # bool is an int


def _score(raw: object) -> _Obj:
    if not isinstance(raw, dict) or "value" not in raw:
        raise Unusual("score")
    value = raw["value"]
    if isinstance(value, list):
        ok = all(_scalar(v) for v in value)
    elif isinstance(value, dict):
        ok = all(v is None or _scalar(v) for v in value.values())
    else:
        ok = _scalar(value)
    answer, explanation = raw.get("answer"), raw.get("explanation")
    reason, metadata = raw.get("reason"), raw.get("metadata")
    if not ok or not all(v is None or isinstance(v, str) for v in (answer, explanation, reason)):
        raise Unusual("score")
    if metadata is not None and not isinstance(metadata, dict):
        raise Unusual("score metadata")
    if reason is None and metadata is not None and metadata.get("unscored_reason") is not None:
        reason = metadata["unscored_reason"]  # Score._lift_unscored_reason
        if not isinstance(reason, str):
            raise Unusual("unscored_reason")
    return _Obj(
        value=value, answer=answer, explanation=explanation, reason=reason, metadata=metadata
    )


def _error(raw: object) -> _Obj | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or not all(
        isinstance(raw.get(k), str) for k in ("message", "traceback", "traceback_ansi")
    ):
        raise Unusual("error")
    return _Obj(message=raw["message"], traceback=raw["traceback"])


def _limit(raw: object) -> _Obj | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("type") not in _LIMITS:
        raise Unusual("limit")
    limit = _optional_float(raw.get("limit"), "limit")
    if limit is None:
        raise Unusual("limit")
    return _Obj(type=raw["type"], limit=limit, reason=_optional_str(raw.get("reason"), "reason"))


def _usages(raw: object) -> dict[str, _Obj]:
    if not isinstance(raw, dict):
        raise Unusual("model_usage")
    out = {}
    for model, usage in raw.items():
        if not isinstance(usage, dict):
            raise Unusual("usage")
        tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
        if not (_is_int(tokens_in) and _is_int(tokens_out)):
            raise Unusual("usage")
        out[model] = _Obj(
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            total_cost=_optional_float(usage.get("total_cost"), "total_cost"),
        )
    return out
