"""What an agent did, step by step: `eb.Transcript`, its messages and its tool calls.

A transcript is a list of messages in the OpenAI chat format (`role`, `content`, `tool_calls`,
`tool_call_id`, `name`) plus what evalbook measures of each step: `model`, tokens, `cost`,
`latency_s`, `error` (a tool result that failed), `started_at` and `cached`. It is checked once,
when it is built: a role that is not one of `ROLES`, a tool message answering no earlier call, or
an amount that is not a finite number >= 0 is a `ConfigurationError` naming the message.

`transcript_problem` checks a transcript again as a task handed it back (a list of messages can be
changed after it was built); `counts_of` gives the three counts `run.cases` shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from .._errors import ConfigurationError
from .._util._text import TextGate, visible

__all__ = [
    "ROLES",
    "Message",
    "ToolCall",
    "ToolFunction",
    "Transcript",
    "arguments_text",
    "cleaned",
    "counts_of",
    "is_ascii",
    "last_assistant_text",
    "message_of",
    "transcript_problem",
]

ROLES = ("system", "user", "assistant", "tool")
_REPR_STEPS = 8  # steps a repr names
# a measured amount: a finite number >= 0
_Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# a tool call's dict arguments as JSON text: `json.dumps` with these options, made once (a
# dumps call with options builds its encoder each time, which was most of its cost)
_ARGUMENTS = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=repr)


class _Part(BaseModel):
    # ignore: OpenAI's objects carry keys evalbook does not keep (refusal, annotations, audio)
    model_config = ConfigDict(extra="ignore", defer_build=True, validate_assignment=True)


class ToolFunction(_Part):
    """The function a tool call names: its `name` and `arguments` (JSON text; a dict is
    written as JSON)."""

    name: str
    arguments: str = "{}"

    @field_validator("arguments", mode="before")
    @classmethod
    def _as_json(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return arguments_text(value)
        return "{}" if value is None else value


def arguments_text(value: Mapping[str, Any]) -> str:
    """A tool call's dict arguments as the JSON text a `ToolFunction` keeps."""
    return _ARGUMENTS.encode(dict(value))


class ToolCall(_Part):
    """One tool call of an assistant message: `id` and `function`."""

    id: str
    type: str = "function"
    function: ToolFunction


class Message(_Part):
    """One step: a chat message, with what evalbook measured of it (all optional)."""

    # checked by pydantic's own validators (no Python call per field: a stored run's
    # transcripts are checked again as they are read)
    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    model: str | None = None
    input_tokens: _Amount | None = None
    output_tokens: _Amount | None = None
    cost: _Amount | None = None
    latency_s: _Amount | None = None
    error: str | None = None
    started_at: _Amount | None = None
    cached: bool = False

    @field_validator("content", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        # OpenAI's content parts: the text parts' text, joined; any other part named
        if isinstance(value, list):
            texts = []
            for part in value:
                if isinstance(part, Mapping) and part.get("type") == "text":
                    texts.append(str(part.get("text", "")))
                elif isinstance(part, Mapping):
                    texts.append(f"[{part.get('type', 'part')}]")
                else:
                    texts.append(str(part))
            return "\n".join(texts)
        return value

    @field_validator("tool_calls")
    @classmethod
    def _no_empty(cls, value: list[ToolCall] | None) -> list[ToolCall] | None:
        return value or None  # [] and None say the same: no calls

    def text(self) -> str:
        """The content as text ("" for none)."""
        return self.content or ""


class Transcript(BaseModel):
    """What an agent did: its messages, in order (OpenAI chat format, plus measurements).

    A task may return one; `output=` is then the sample's output (without it, the text of the
    last assistant message). A sample's transcript is in `run.steps()` and `run.tool_calls()`.

    Example:
        >>> import evalbook as eb
        >>> t = eb.Transcript(
        ...     [
        ...         {"role": "user", "content": "2+2?"},
        ...         {"role": "assistant", "tool_calls": [
        ...             {"id": "c1", "function": {"name": "calc", "arguments": '{"x": "2+2"}'}}]},
        ...         {"role": "tool", "tool_call_id": "c1", "content": "4"},
        ...         {"role": "assistant", "content": "4"},
        ...     ]
        ... )
        >>> t.output, len(t.messages)
        ('4', 4)
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)

    messages: list[Message]
    output: Any = None

    def __init__(self, messages: Any = None, /, **data: Any) -> None:
        if messages is not None:
            data["messages"] = messages
        data.setdefault("messages", [])
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise ConfigurationError(f"eb.Transcript: {_said(exc)}") from None
        problem = transcript_problem(self)
        if problem is not None:
            raise ConfigurationError(f"eb.Transcript: {problem}")
        if self.output is None:
            self.output = last_assistant_text(self.messages)

    def __repr__(self) -> str:
        """A short, safe summary: the roles in order (calls named), the output shortened."""
        parts = []
        for m in self.messages[:_REPR_STEPS]:
            calls = ", ".join(c.function.name for c in m.tool_calls or ())
            flag = " error" if m.error is not None else ""
            parts.append(f"{m.role}({calls}){flag}" if calls else f"{m.role}{flag}")
        more = len(self.messages) - _REPR_STEPS
        steps = " → ".join(parts) + (f" … and {more} more" if more > 0 else "")
        output = repr(self.output)
        output = output if len(output) <= 60 else output[:59] + "…"
        return visible(f"Transcript({len(self.messages)} steps: {steps}; output={output})")


def _said(exc: ValidationError) -> str:
    """A pydantic error as one line per problem, naming the message by its number."""
    lines = []
    for err in exc.errors()[:5]:
        loc = err["loc"]
        where = ".".join(str(x) for x in loc)
        if len(loc) >= 2 and loc[0] == "messages" and isinstance(loc[1], int):
            rest = ".".join(str(x) for x in loc[2:])
            where = f"message {loc[1]}" + (f" ({rest})" if rest else "")
        said = err["msg"]
        if err["type"] == "literal_error" and loc[-1] == "role":
            said = f"role {err['input']!r} is not one of {', '.join(ROLES)}"
        elif err["type"] in ("greater_than_equal", "finite_number"):
            said = f"{err['input']!r} is not a finite number >= 0"
        lines.append(f"{where}: {said}")
    more = len(exc.errors()) - 5
    return "; ".join(lines) + (f"; and {more} more" if more > 0 else "")


def last_assistant_text(messages: Sequence[Message]) -> str | None:
    """The text of the last assistant message that has any (None: there is none)."""
    for m in reversed(messages):
        if m.role == "assistant" and m.content:
            return m.content
    return None


def transcript_problem(transcript: Any) -> str | None:
    """What is wrong with `transcript` as a task returned it; None when it is sound.

    Checks what construction checks, again (its lists may have changed since): every message
    a `Message` of a known role, and every tool message answering a call made before it.
    """
    messages = getattr(transcript, "messages", None)
    if not isinstance(messages, list):
        return "messages is not a list"
    called: set[str] = set()
    for i, m in enumerate(messages):
        if not isinstance(m, Message):
            return f"message {i} is a {type(m).__name__}, not a message"
        if m.role not in ROLES:
            return f"message {i}: role {m.role!r} is not one of {', '.join(ROLES)}"
        for call in m.tool_calls or ():
            called.add(call.id)
        if m.role == "tool":
            if m.tool_call_id is None:
                return f"message {i} (role 'tool') has no tool_call_id"
            if m.tool_call_id not in called:
                return (
                    f"message {i} (role 'tool') answers tool_call_id {m.tool_call_id!r}, "
                    "which no earlier assistant message called"
                )
    return None


def message_of(step: Message | Mapping[str, Any] | None = None, **fields: Any) -> Message:
    """One step as a `Message`, from a message, a dict or fields (`ctx.step`'s arguments)."""
    if isinstance(step, Message) and not fields:
        return step
    data: dict[str, Any] = {}
    if isinstance(step, Message):
        data = step.model_dump(exclude_defaults=True)
    elif isinstance(step, Mapping):
        data = dict(step)
    elif step is not None:
        raise ConfigurationError(
            f"ctx.step: takes a message (a dict in the OpenAI chat format) or fields such as "
            f"role=, content=; not a {type(step).__name__}"
        )
    data.update(fields)
    try:
        return Message(**data)
    except ValidationError as exc:
        raise ConfigurationError(f"ctx.step: {_said(exc)}") from None


def counts_of(messages: Iterable[Message]) -> tuple[int, int, int]:
    """`(n_steps, n_tool_calls, n_tool_errors)`: messages, calls made, results with an error."""
    steps = calls = errors = 0
    for m in messages:
        steps += 1
        if m.tool_calls:
            calls += len(m.tool_calls)
        if m.role == "tool" and m.error is not None:
            errors += 1
    return steps, calls, errors


def cleaned(transcript: Transcript, gate: TextGate, case_id: str) -> Transcript:
    """`transcript` with lone surrogates in its text replaced (the same object when none).

    Only non-ASCII text can hold one, so a transcript of ASCII text is passed on unlooked-at.
    """
    if all(is_ascii(m) for m in transcript.messages):
        return transcript
    dumped = transcript.model_dump(mode="python", exclude={"output"})
    clean = gate(dumped, "a transcript", case_id)
    if clean is dumped:
        return transcript
    return Transcript.model_validate({**clean, "output": transcript.output})


def is_ascii(m: Message) -> bool:
    """Whether all of the message's text is ASCII (then it holds no lone surrogate)."""
    texts = [m.content, m.error, m.name, m.model, m.tool_call_id]
    for call in m.tool_calls or ():
        texts += [call.id, call.function.name, call.function.arguments]
    return all(t is None or t.isascii() for t in texts)
