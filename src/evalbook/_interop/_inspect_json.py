"""A sample member's JSON decoded for the fields the import reads; the rest skipped, unbuilt.

Most of a member's bytes are what the import never reads: its model events' `input` (each
repeats the conversation so far), `call` and `tools`, its state events' `changes`. Parsing
them into Python objects only to drop them was a third of an import's time. `msgspec` (of the
extra `evalbook[inspect]`) decodes the JSON against a schema of the fields read (`Doc`,
`Event`) and skips the rest without building it. A field the import checks itself is typed
`Any` (it gets the JSON value as is, as before); `events` must be a list of objects, an
event's `output` an object of `choices` (a list of objects, each `message` an object or null)
and `attachments` Inspect's `dict[str, str]`, else msgspec refuses the member and Inspect's own
models read it, as for any member of another shape (Inspect's models take no other).

The values are Inspect's parser's (`pydantic_core.from_json`, what `model_validate_json`
reads), or the member is not decoded here. Measured (tests/interop/test_inspect_json.py):

- both refuse malformed JSON, trailing data, control characters in text, a lone surrogate
  escape (also in a skipped text), nesting past Python's recursion limit;
- both read integers of any size exactly, `-0.0`, paired surrogate escapes; a key given twice:
  the last value;
- msgspec refuses the constants `NaN` and `Infinity` (Inspect writes a NaN score so) and a
  number beyond a float (`1e400`), which from_json reads: such a member is parsed by from_json
  and then converted to the same schema (`msgspec.convert`, the same checks);
- msgspec does not check the UTF-8 of a text it skips: a member that is not all ASCII is
  decoded first, and one that is not UTF-8 goes to from_json, which refuses it as Inspect does.

The one difference left: from_json refuses JSON nested more than 200 levels deep, msgspec reads
it (to Python's recursion limit), so a member that deep is imported with its values where
Inspect's reader refuses it. No sound check of a member's depth was found that is cheaper than
the parse it would save (stripping the text out of 50 KB took longer than from_json).
"""

from __future__ import annotations

from typing import Any

import msgspec
from pydantic_core import from_json

__all__ = ["Choice", "Doc", "Event", "Output", "Reply", "decoded", "of_parsed"]


class Reply(msgspec.Struct):
    """A model event's choice's message as `_inspect_events` reads it: its id (the rest, its
    text and calls again, skipped)."""

    id: Any = None


class Choice(msgspec.Struct):
    """A model event's choice: its message (None when it has none)."""

    message: Reply | None = None


class Output(msgspec.Struct):
    """A model event's output as `_inspect_events` reads it: its choices' messages' ids and
    its usage (its completion and the rest skipped)."""

    choices: list[Choice] = msgspec.field(default_factory=list)
    usage: Any = None


class Event(msgspec.Struct):
    """An event as `_inspect_events` reads it (each field None when the event has none)."""

    event: Any = None
    model: Any = None
    output: Output | None = None
    timestamp: Any = None
    completed: Any = None
    working_time: Any = None
    id: Any = None


class Doc(msgspec.Struct):
    """A sample member as `_inspect_sample` reads it; `score` and `transcript` (keys Inspect
    migrates) are `UNSET` unless the member has them."""

    events: list[Event]
    id: Any = None
    epoch: Any = None
    input: Any = None
    target: Any = None
    choices: Any = None
    metadata: Any = msgspec.field(default_factory=dict)
    messages: Any = msgspec.field(default_factory=list)
    output: Any = None
    scores: Any = None
    error: Any = None
    error_retries: Any = None
    limit: Any = None
    model_usage: Any = msgspec.field(default_factory=dict)
    started_at: Any = None
    total_time: Any = None
    attachments: dict[str, str] = msgspec.field(default_factory=dict)
    score: Any = msgspec.UNSET
    transcript: Any = msgspec.UNSET


_DECODER = msgspec.json.Decoder(Doc)


def decoded(data: bytes) -> Doc:
    """The member's fields read, with from_json's values (see the module docstring).

    Raises:
        ValueError: from_json refuses the JSON (Inspect's reader refuses it too).
        msgspec.ValidationError: the member is not of the shape `Doc` reads.
    """
    if data.isascii() or _utf8(data):
        try:
            return _DECODER.decode(data)
        except (msgspec.MsgspecError, RecursionError):
            pass  # NaN, 1e400, or not of this shape: from_json says which
    return of_parsed(from_json(data))


def of_parsed(doc: object) -> Doc:
    """A member already parsed (a `.json` log's sample, from_json's value) as a `Doc`.

    Raises:
        msgspec.ValidationError: `doc` is not of the shape `Doc` reads.
    """
    return msgspec.convert(doc, Doc)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True
