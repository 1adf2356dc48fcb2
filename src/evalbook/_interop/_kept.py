"""A sample's transcript kept compact by an import: its counts, its steps table rows, its
messages compressed; the `Transcript` is made again only when it is asked for.

A `Transcript` of messages takes kilobytes a step; an import of a long log keeps this instead
(`to_run_data` gives the run its steps table from the rows, its transcripts on first use).
An importer hands its steps over as dicts (`KeptTranscript.of_steps`): a transcript of plain
steps (below) is kept without building its pydantic messages (building and dumping them was
a third of the time an Inspect sample took to read), its checked fields packed by `marshal`
(in memory only, never written) and compressed; any other is built as a `Transcript`, which
checks it (and refuses it, as before), and kept as its messages' JSON. The rows of a run of
samples are then pooled into one `StepBlock` (`pool_steps`): a few arrays where a tuple a row
was (an import's worker processes hand them back so).

A plain step is a dict of only the fields below, each `None` or of exactly the type the
message keeps (no conversion but a whole amount to its float): `role` one of `ROLES`; text
(`content`, `tool_call_id`, `name`, `model`, `error`) that is all ASCII (other text may hold a
lone surrogate, which the run cleans: such a transcript is built and kept whole);
amounts (`input_tokens`, `output_tokens`, `cost`, `latency_s`, `started_at`) a finite float
>= 0 or a whole number 0..2**53 (exactly its float); `tool_calls` a list of `{"id",
"function": {"name", "arguments"}}`, the arguments a dict (written as `ToolFunction` writes
it), text or None; every tool message answering a call made before it. That is a subset of
what `Transcript` takes, and the transcript made again is the one it builds, with the same
counts, output and rows (tests/interop/test_kept.py).
"""

from __future__ import annotations

import json
import marshal
import math
import zlib
from collections.abc import Sequence
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from .._model._step_tables import StepBlock, step_rows
from .._model._transcript import ROLES, Message, Transcript, arguments_text, counts_of, is_ascii

__all__ = ["KeptTranscript", "pool_steps"]

_STEP_KEYS = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "model",
        "error",
        "input_tokens",
        "output_tokens",
        "cost",
        "latency_s",
        "started_at",
    }
)
# a plain step's fields as `_plain` packs them (its tool calls after them)
_FIELDS = (
    "role", "content", "tool_call_id", "name", "model", "error",
    "input_tokens", "output_tokens", "cost", "latency_s", "started_at",
)  # fmt: skip
_CALL_KEYS = frozenset({"id", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})
# a whole amount up to this is exactly its float (pydantic converts a larger one: left to it)
_EXACT = 2**53
_NAN = math.nan
_INF = math.inf


class KeptTranscript:
    """A sample's transcript kept compact (see the module docstring)."""

    __slots__ = ("_blob", "_packed", "_whole", "ascii", "at", "block", "counts", "output", "rows")

    def __init__(self, transcript: Transcript) -> None:
        messages = transcript.messages
        self.counts = counts_of(messages)
        self.output = transcript.output
        self.ascii = all(is_ascii(m) for m in messages)
        # text that is not all ASCII may hold a lone surrogate, which no JSON encoder takes
        # (the run cleans it): such a transcript is kept whole
        self._whole = None if self.ascii else transcript
        self.rows = step_rows(messages) if self.ascii else []
        # the rows pooled with other samples' (`pool_steps`): sample `at` of `block`
        self.block: StepBlock | None = None
        self.at = 0
        dumped = _messages().dump_json(messages, exclude_defaults=True) if self.ascii else b""
        self._blob = zlib.compress(dumped, 1)
        self._packed = False  # the blob is the messages' JSON (`_plain`'s: their fields packed)

    @classmethod
    def of_steps(cls, steps: Sequence[Any], output: Any = None) -> KeptTranscript:
        """The transcript of `steps` (dicts, as `Transcript` takes them) kept compact: plain
        steps without building their messages, any others as `Transcript(steps, output=)`.

        Raises:
            ConfigurationError: `Transcript` refuses the steps (plain steps it never does).
        """
        kept = _plain(cls, steps, output)
        return cls(Transcript(list(steps), output=output)) if kept is None else kept

    def transcript(self) -> Transcript:
        """The transcript again, as it was given."""
        if self._whole is not None:
            return self._whole
        if not self._packed:
            return Transcript(json.loads(zlib.decompress(self._blob)), output=self.output)
        messages = []
        for *values, calls in marshal.loads(zlib.decompress(self._blob)):
            message = {k: v for k, v in zip(_FIELDS, values, strict=True) if v is not None}
            if calls:
                message["tool_calls"] = [
                    {"id": c, "function": {"name": n, "arguments": a}} for c, n, a in calls
                ]
            messages.append(message)
        return Transcript(messages, output=self.output)

    def steps(self) -> list[tuple[Any, ...]]:
        """Its steps table rows, once (`step_rows`); made again from the transcript after."""
        rows, self.rows = self.rows, []
        if self.block is not None:
            rows, self.block = self.block.rows(self.at), None
        if rows or not self.counts[0]:
            return rows
        return step_rows(self.transcript().messages)


def pool_steps(kept: Sequence[KeptTranscript]) -> None:
    """The rows of `kept` pooled into one `StepBlock`, each transcript pointing at its own."""
    holding = [k for k in kept if k.rows]
    block = StepBlock([k.rows for k in holding])
    for i, k in enumerate(holding):
        k.rows, k.block, k.at = [], block, i


@cache
def _messages() -> TypeAdapter[list[Message]]:
    return TypeAdapter(list[Message])


def _plain(cls: type[KeptTranscript], steps: Sequence[Any], output: Any) -> KeptTranscript | None:
    """`steps` kept without building their messages; None unless every step is plain."""
    if type(steps) is not list:
        return None
    packed: list[tuple[Any, ...]] = []  # each step's fields (`_FIELDS`), then its calls
    rows: list[tuple[Any, ...]] = []
    made: dict[str, tuple[str, str]] = {}  # each call so far by id: (name, arguments)
    n_calls = n_errors = 0
    last_text: str | None = None  # the last assistant message's text (`last_assistant_text`)
    for step in steps:
        if type(step) is not dict or not step.keys() <= _STEP_KEYS:
            return None
        get = step.get
        role = get("role")
        if type(role) is not str or role not in ROLES:
            return None
        content, call_id, name, model, error = (
            get("content"), get("tool_call_id"), get("name"), get("model"), get("error")
        )  # fmt: skip
        for text in (content, call_id, name, model, error):
            if text is not None and (type(text) is not str or not text.isascii()):
                return None
        given = (
            get("input_tokens"), get("output_tokens"), get("cost"), get("latency_s"),
            get("started_at"),
        )  # fmt: skip
        amounts = [_amount(v) for v in given]
        if None in amounts:
            return None
        calls = _calls(get("tool_calls"))
        if calls is None:
            return None
        if calls:
            for c, n, a in calls:
                made[c] = (n, a)
            n_calls += len(calls)
            if len(calls) == 1:
                c, n, a = calls[0]
                about: tuple[str | None, str | None, str | None] = (n, c, a)
            else:
                about = (", ".join(n for _, n, _ in calls), None, None)
        else:
            about = (None, None, None)
        if role == "tool":
            answered = None if call_id is None else made.get(call_id)
            if answered is None:  # answering no call made before it: `Transcript` refuses it
                return None
            n_errors += error is not None
            if not calls:
                about = (answered[0], call_id, answered[1])
        elif role == "assistant" and content:
            last_text = content
        rows.append((role, content, *about, error, model, *amounts[:4]))
        packed.append((role, content, call_id, name, model, error, *given, tuple(calls)))
    kept = cls.__new__(cls)
    kept.counts = (len(rows), n_calls, n_errors)
    kept.output = last_text if output is None else output
    kept.ascii = True
    kept._whole = None
    kept.rows = rows
    kept.block, kept.at = None, 0
    # marshal: only text, numbers, None and tuples, each checked above; in memory only
    kept._blob = zlib.compress(marshal.dumps(packed), 1)
    kept._packed = True
    return kept


def _amount(value: object) -> float | None:
    """A plain amount as the steps table holds it (NaN: none); None when it is not plain."""
    if value is None:
        return _NAN
    kind = type(value)
    if kind is float:
        return value if 0.0 <= value < _INF else None  # type: ignore[operator,return-value]
    if kind is int and 0 <= value <= _EXACT:  # type: ignore[operator]
        return float(value)  # type: ignore[arg-type]
    return None


def _calls(raw: object) -> list[tuple[str, str, str]] | None:
    """A step's plain tool calls as (id, name, arguments); None when they are not plain."""
    if raw is None:
        return []
    if type(raw) is not list:
        return None
    calls = []
    for c in raw:
        if type(c) is not dict or not c.keys() <= _CALL_KEYS:
            return None
        cid, function = c.get("id"), c.get("function")
        if type(cid) is not str or type(function) is not dict:
            return None
        if not function.keys() <= _FUNCTION_KEYS:
            return None
        name, arguments = function.get("name"), function.get("arguments")
        if type(arguments) is dict:
            try:
                arguments = arguments_text(arguments)
            except Exception:  # whatever writing them raises, `ToolFunction` raises: its to say
                return None
        elif arguments is None:
            arguments = "{}"
        if type(name) is not str or type(arguments) is not str:
            return None
        if not (cid.isascii() and name.isascii() and arguments.isascii()):
            return None
        calls.append((cid, name, arguments))
    return calls
