"""A transcript as bounded text, one line per message: what a judge prompt's `{transcript}` shows.

Each message is one line, `role: content`; an assistant's tool calls follow as `name(args)`,
a tool result is `tool name(call id): content`, marked `[error: ...]` when it failed. Text is
made visible (newlines and control characters as their escapes, so a line stays one line),
each part is shortened to `PART_CHARS` characters, each line to `LINE_CHARS`, and the whole
text to `TOTAL_CHARS`: past that, the first and the last messages are kept and one line says
how many were left out.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._util._text import visible
from ._transcript import Message, Transcript

__all__ = ["LINE_CHARS", "PART_CHARS", "TOTAL_CHARS", "transcript_text"]

PART_CHARS = 500  # longest content, arguments or error shown of one message
LINE_CHARS = 2_000  # longest line (a message with many tool calls)
TOTAL_CHARS = 20_000  # the whole text's bound (in characters), its omission line included


def _short(text: str, limit: int) -> str:
    text = visible(text)
    if len(text) <= limit:
        return text
    return f"{text[: limit - 1]}… ({len(text)} chars)"


def _line(m: Message, names: dict[str, str]) -> str:
    parts = [f"{m.role}:"]
    if m.role == "tool":
        name = names.get(m.tool_call_id or "", m.name or "?")
        parts = [f"tool {_short(name, 100)}({_short(m.tool_call_id or '', 100)}):"]
    if m.content:
        parts.append(_short(m.content, PART_CHARS))
    for call in m.tool_calls or ():
        names[call.id] = call.function.name
        args = _short(call.function.arguments, PART_CHARS)
        parts.append(f"{_short(call.function.name, 100)}({args})")
    if m.error is not None:
        parts.append(f"[error: {_short(m.error, PART_CHARS)}]")
    line = " ".join(parts)
    return line if len(line) <= LINE_CHARS else f"{line[: LINE_CHARS - 1]}…"


def _bounded(lines: Sequence[str], total: int) -> str:
    if sum(len(x) + 1 for x in lines) <= total + 1:
        return "\n".join(lines)
    budget = total - 60  # room for the line that says what was left out
    head: list[str] = []
    tail: list[str] = []
    used = 0
    i, j = 0, len(lines) - 1
    while i <= j:  # alternate: the start of the run and its end matter alike
        take_head = len(head) <= len(tail)
        line = lines[i] if take_head else lines[j]
        if used + len(line) + 1 > budget:
            break
        used += len(line) + 1
        if take_head:
            head.append(line)
            i += 1
        else:
            tail.append(line)
            j -= 1
    left = len(lines) - len(head) - len(tail)
    gap = [f"… {left} message{'s' if left != 1 else ''} not shown …"] if left else []
    return "\n".join([*head, *gap, *reversed(tail)])


def transcript_text(transcript: Transcript, total: int = TOTAL_CHARS) -> str:
    """`transcript` as text, one line per message, at most about `total` characters.

    Example:
        >>> import evalbook as eb
        >>> t = eb.Transcript([
        ...     {"role": "user", "content": "Weather in\\nParis?"},
        ...     {"role": "assistant", "tool_calls": [{"id": "c1", "function": {
        ...         "name": "weather", "arguments": '{"city": "Paris"}'}}]},
        ...     {"role": "tool", "tool_call_id": "c1", "content": "", "error": "timeout"},
        ...     {"role": "assistant", "content": "Sorry."}])
        >>> print(transcript_text(t))
        user: Weather in\\nParis?
        assistant: weather({"city": "Paris"})
        tool weather(c1): [error: timeout]
        assistant: Sorry.
    """
    names: dict[str, str] = {}
    return _bounded([_line(m, names) for m in transcript.messages], total)
