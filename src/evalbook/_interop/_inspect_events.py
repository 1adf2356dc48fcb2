"""An Inspect sample's events read from its JSON: only what the import reads, no Inspect models.

A sample's `events` are most of its log (each model event repeats the conversation so far);
building Inspect's models of them (`ModelEvent`, `ToolEvent`, ...) and walking them for
attachments is most of the time an import takes, for the few fields `_inspect.py` reads. Here
those fields are read from the JSON (the event fields `_inspect_json.Event` decodes; the rest of
each event is skipped unbuilt), as Inspect's models give them (inspect_ai 0.3.285,
`event/_model.py`, `event/_tool.py`, `event/_base.py`, `model/_model_output.py`):

- a model event: `model`, `output.choices[0].message.id`, `output.usage` (`ModelUsage`:
  `input_tokens` and `output_tokens` default 0, `total_cost` None), `timestamp`, `completed`
  (`UtcDatetime`: ISO text, without an offset taken as UTC) and `working_time`;
- a tool event: `id` and the same times.

The model and tool events come back as light objects with those attributes (other events as
their kind only). Anything of another shape raises `Unusual`: the caller then reads the sample
through Inspect's own models, as before, so an odd sample reads as Inspect reads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from types import SimpleNamespace

from ._inspect_json import Event

__all__ = ["Unusual", "events_of"]


class Unusual(Exception):
    """A sample's events are not of the shape read here: read the sample with Inspect's models."""


def events_of(events: Sequence[Event]) -> list[SimpleNamespace]:
    """The events of a sample (its member's `events`, read by `_inspect_json`).

    Raises:
        Unusual: events not of the shape described in the module docstring.
    """
    out: list[SimpleNamespace] = []
    for event in events:
        kind = event.event
        if kind == "model":
            out.append(_model(event))
        elif kind == "tool":
            out.append(_tool(event))
        elif isinstance(kind, str):
            out.append(SimpleNamespace(event=kind))
        else:
            raise Unusual("event kind")
    return out


def _times(event: Event) -> dict[str, object]:
    working = event.working_time
    if working is not None and (isinstance(working, bool) or not isinstance(working, int | float)):
        raise Unusual("working_time")
    return {
        "timestamp": _when(event.timestamp),
        "completed": None if event.completed is None else _when(event.completed),
        "working_time": None if working is None else float(working),
    }


def _when(text: object) -> datetime:
    if not isinstance(text, str):
        raise Unusual("time")
    try:
        found = datetime.fromisoformat(text)
    except ValueError:
        raise Unusual("time") from None
    return found if found.tzinfo is not None else found.replace(tzinfo=UTC)


def _model(event: Event) -> SimpleNamespace:
    model, output = event.model, event.output
    if not isinstance(model, str) or output is None:
        raise Unusual("model event")
    first = []
    if output.choices:
        message = output.choices[0].message
        if message is None:
            raise Unusual("choice")
        reply_id = message.id
        if reply_id is not None and not isinstance(reply_id, str):
            raise Unusual("message id")
        first = [SimpleNamespace(message=SimpleNamespace(id=reply_id))]
    usage = output.usage
    return SimpleNamespace(
        event="model",
        model=model,
        output=SimpleNamespace(choices=first, usage=None if usage is None else _usage(usage)),
        **_times(event),
    )


def _usage(usage: object) -> SimpleNamespace:
    if not isinstance(usage, dict):
        raise Unusual("usage")
    tokens_in, tokens_out = usage.get("input_tokens", 0), usage.get("output_tokens", 0)
    cost = usage.get("total_cost")
    if not (_whole(tokens_in) and _whole(tokens_out)) or not (
        cost is None or (not isinstance(cost, bool) and isinstance(cost, int | float))
    ):
        raise Unusual("usage")
    return SimpleNamespace(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        total_cost=None if cost is None else float(cost),
    )


def _whole(value: object) -> bool:
    return type(value) is int


def _tool(event: Event) -> SimpleNamespace:
    call_id = event.id
    if not isinstance(call_id, str):
        raise Unusual("tool event")
    return SimpleNamespace(event="tool", id=call_id, **_times(event))
