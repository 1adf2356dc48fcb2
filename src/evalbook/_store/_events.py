"""The event log of the run store: one JSON object per line in `events.jsonl`.

Writing is on the hot path (once per case): `LineEncoder` assembles a finished case's lines
from pieces encoded once per run, with the C string encoder of `json`. Reading rebuilds the
run's `Results` from the lines. The format is documented in docs/file-formats.md.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _enc
from pathlib import Path
from typing import Any

from .._model._contract import ERROR, SCORED, UNSCORED, InvalidScore, Rec, validate_value
from .._model._results import OUTCOMES, Finished, Results
from .._model._scores import Grader, ScoreDefinition
from .._util._text import TextGate
from ._codec import decode_output, encode_output
from ._layout import open_regular
from ._log import strip_padding

__all__ = [
    "SCHEMA_VERSION",
    "LineEncoder",
    "NotARunLog",
    "SchemaVersionError",
    "dumps",
    "event_line",
    "read_events",
    "replay",
    "warn_invalid",
]

SCHEMA_VERSION = 2  # 2: case times as integer microseconds (started_us, duration_us, at_us)
_V = f'{{"schema_version":{SCHEMA_VERSION},"event":'
_VALUE_TEXT = {0.0: "0.0", 1.0: "1.0", 0.5: "0.5"}  # -0.0 is written 0.0 (an equal value)
_OUTCOME_CODES = {name: code for code, name in enumerate(OUTCOMES)}
_MAX_TAILS = 1 << 12  # cached line tails per score and run: well under 1 MB each
# the JSON escape of a surrogate (\ud800-\udfff): a line that may decode to a lone one
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


class NotARunLog(ValueError):
    """A file named like a run log that does not start with `run.started`."""


class SchemaVersionError(ValueError):
    """A store file was written with a `schema_version` this evalbook cannot read."""


def version_error(where: str, found: object) -> SchemaVersionError:
    """The error for a file with another schema version, naming both versions."""
    return SchemaVersionError(
        f"{where} has schema_version {found!r}, but this evalbook reads schema_version "
        f"{SCHEMA_VERSION}; open it with the evalbook version that wrote it"
    )


def dumps(obj: Any) -> str:
    """Compact ASCII JSON (non-ASCII text as `\\u` escapes: every log line is ASCII)."""
    return json.dumps(obj, ensure_ascii=True, separators=(",", ":"), default=repr)


# -- writing ------------------------------------------------------------------------------


class LineEncoder:
    """Builds the event lines of one run; `case_block` runs once per finished case.

    A `score.recorded` line is the case's part (`{..."case_id":"c7"`) and a tail that
    depends on the score and the record only (`,"score":"exact","derived":false,...}`).
    The tails of plain values are cached per score: `repr` of a float costs more than the
    rest of its line, and scores repeat (0 and 1, rubric steps, ratios of small counts).
    Every line is ASCII (other characters are JSON escapes).
    """

    def __init__(self, definitions: Sequence[ScoreDefinition], case_ids: Sequence[str]) -> None:
        self.case_ids = case_ids
        self._ended = f'{_V}"case.ended","case_id":'
        self._started = f'{_V}"case.started","case_id":'
        self._record_head = f'{_V}"score.recorded","case_id":'
        # each score's keys after the case id: `,"score":"exact","derived":false,`
        self._keys = [
            f',"score":{_enc(d.name)},"derived":{"true" if d.derived else "false"},'
            for d in definitions
        ]
        # per score: plain value -> the tail of its line
        self._tails: list[dict[float, str]] = [
            {v: f'{keys}"value":{text}}}\n' for v, text in _VALUE_TEXT.items()}
            for keys in self._keys
        ]
        self._outcomes = [f',"outcome":"{name}","output":' for name in OUTCOMES]

    def case_started(self, pos: int, attempt: int, at_us: int) -> str:
        """The `case.started` line of an attempt that started at `at_us` (Unix µs)."""
        return f'{self._started}{_enc(self.case_ids[pos])},"attempt":{attempt},"at_us":{at_us}}}\n'

    def case_lines(self, pos: int, case: Finished) -> str:
        """A finished case's `score.recorded` lines (definition order), then its `case.ended`."""
        return self.case_block(pos, case, ())

    def case_block(self, pos: int, case: Finished, started: Sequence[tuple[int, int, int]]) -> str:
        """The `case.started` lines of `started` (pos, attempt, at_us), then `case_lines`.

        Times are written as integer microseconds: the engine takes them at that precision,
        so they read back exactly, and integers format several times faster than floats.
        """
        outcome, attempts, output, error_type, error_message, started_at, duration_s, records = case
        cid = _enc(self.case_ids[pos])
        if len(started) == 1 and started[0][0] == pos:  # the common case: its own start only
            _, attempt, at_us = started[0]
            lines = [f'{self._started}{cid},"attempt":{attempt},"at_us":{at_us}}}\n']
        else:
            lines = [self.case_started(p, a, t) for p, a, t in started]
        head = self._record_head + cid
        tails = self._tails
        for j, r in enumerate(records):  # one per score, in definition order
            if r[0] == SCORED and r[4] is None and r[5] is None and r[6] is None:  # plain: cached
                lines.append(head + (tails[j].get(r[1]) or self.plain_tail(j, r[1])))
            else:
                lines.append(f"{head}{self._keys[j]}{_record_body(r)}}}\n")
        out = _enc(output) if type(output) is str else _output_json(output)
        if error_type is not None:
            out += f',"error_type":{_enc(error_type)}'
        if error_message is not None:
            out += f',"error_message":{_enc(error_message)}'
        lines.append(
            f'{self._ended}{cid},"attempt":{attempts}{self._outcomes[outcome]}{out},"started_us":'
            f"{round(started_at * 1e6) if started_at == started_at else 'null'},"  # NaN: null
            f'"duration_us":{round(duration_s * 1e6) if duration_s == duration_s else "null"}}}\n'
        )
        return "".join(lines)

    def plain_tail(self, j: int, value: float) -> str:
        """The tail of score `j`'s line for a plain `value` (cached, up to a bound)."""
        text = f'{self._keys[j]}"value":{float(value)!r}}}\n'
        tails = self._tails[j]
        if len(tails) < _MAX_TAILS and value == value:  # NaN never hits
            tails[value] = text
        return text

    def case_ended(self, pos: int, results: Results) -> str:
        """`case_lines` for a case already stored in `results` (not the hot path)."""
        return self.case_lines(pos, results.finished(pos))


def _output_json(output: Any) -> str:
    """A non-text output as its `case.ended` JSON (and `output_kind`); never raises.

    An output that cannot be written is stored as a placeholder of kind `repr` for its case
    alone: the log stays on for the rest of the run.
    """
    try:
        encoded, kind = encode_output(output)
        return dumps(encoded) if kind is None else f'{_enc(encoded)},"output_kind":"{kind}"'
    except Exception as exc:  # e.g. a nested value json cannot write
        text = f"<{type(output).__name__} output that cannot be stored: {type(exc).__name__}>"
        return f'{_enc(text)},"output_kind":"repr"'


def _seconds(us: int | None) -> float:
    return math.nan if us is None else us / 1e6


def _record_body(rec: Rec) -> str:
    """The body of one `score.recorded` line after its `score` and `derived` keys."""
    status, value, reason, message, rationale, metadata, grader = rec
    if status == SCORED:
        body = f'"value":{float(value)!r}'
    else:
        key, label = ("unscored", "reason") if status == UNSCORED else ("error", "code")
        body = f'"{key}":{{"{label}":{"null" if reason is None else _enc(reason)}'
        body += "}" if message is None else f',"message":{_enc(message)}}}'
    if rationale is not None:
        body += f',"rationale":{_enc(rationale)}'
    if grader is not None:
        body += f',"grader":{dumps(grader.model_dump(mode="json", exclude_none=True))}'
    if metadata is not None:
        body += f',"metadata":{dumps(metadata)}'
    return body


def event_line(event: str, **fields: Any) -> str:
    """One non-hot-path event line (run.started, score.defined, run.resumed, run.ended)."""
    return dumps({"schema_version": SCHEMA_VERSION, "event": event, **fields}) + "\n"


# -- reading ------------------------------------------------------------------------------


def read_events(path: Path) -> Iterator[dict[str, Any]]:
    """Yield the events of a log, checking every line's `schema_version`.

    Only newline-terminated lines count: a truncated last line (a crash in the middle of a
    write) is skipped with a warning, and NUL bytes after it (space reserved by evalbook
    0.1.0's writer) are ignored. An unreadable complete line is an error naming it. Text that
    decodes to a lone surrogate (a `\\ud800` escape written by hand, or by 0.1.0) is
    replaced by its escape, with one warning per log.
    """
    gate = TextGate()
    try:  # a FIFO, a device or a symlink out of the folder is no log (and must not hang)
        fd = open_regular(path)
    except OSError as exc:
        raise ValueError(f"{path} cannot be read as a run log ({exc})") from None
    with os.fdopen(fd, "rb") as f:
        data = strip_padding(f.read())  # the NUL padding a hard crash of 0.1.0 left
    body, _, tail = data.rpartition(b"\n")
    if tail.strip():
        warnings.warn(
            f"{path}: the last line is truncated (the run was interrupted while writing it); "
            "it is ignored",
            RuntimeWarning,
            stacklevel=3,
        )
    if not body:
        return
    for number, raw in enumerate(body.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            event = json.loads(raw)
        except ValueError as exc:
            raise ValueError(f"{path}, line {number}: not a valid event ({exc})") from None
        if not isinstance(event, dict):
            raise ValueError(f"{path}, line {number}: not a valid event (not a JSON object)")
        found = event.get("schema_version")
        if found != SCHEMA_VERSION:
            raise version_error(f"{path} (line {number})", found)
        if _SURROGATE_ESCAPE.search(raw):  # rare: only then is the event worth a walk
            event = gate(event, f"{path}, line {number}")
        yield event


def _rec(event: dict[str, Any], invalid: list[str]) -> Rec:
    """A `score.recorded` event's record; a value the score contract rejects (8.5, Infinity,
    `true`, `"1"`) is an `invalid_score` error, noted in `invalid`, never a number."""
    grader = event.get("grader")
    g = Grader(**grader) if grader is not None else None
    rationale = event.get("rationale")
    metadata = event.get("metadata")
    if "value" in event:
        try:
            value = validate_value(event["value"])
        except InvalidScore as exc:
            invalid.append(repr(event["value"]))
            message = f"stored value rejected on load: {exc}"
            return Rec(ERROR, math.nan, "invalid_score", message, rationale, metadata, g)
        return Rec(SCORED, value, None, None, rationale, metadata, g)
    if "unscored" in event:
        u = event["unscored"]
        return Rec(UNSCORED, math.nan, u.get("reason"), u.get("message"), rationale, metadata, g)
    e = event.get("error") or {}
    return Rec(ERROR, math.nan, e.get("code"), e.get("message"), rationale, metadata, g)


_MISSING = Rec(
    ERROR,
    math.nan,
    "record_missing",
    "events.jsonl has no score.recorded event for this (case, score)",
)


@dataclass
class EventLog:
    """What a run's event log says: its identity, definitions and finished cases."""

    run_id: str
    name: str
    started_at: str | None
    case_ids: list[str]
    options: dict[str, Any]
    definitions: list[ScoreDefinition]
    results: Results
    data_file: str | None = None
    ended: dict[str, Any] | None = None


def warn_invalid(path: Path, invalid: Sequence[str]) -> None:
    """One warning for the stored values of `path` that are not valid scores."""
    shown = ", ".join(invalid[:3]) + (" …" if len(invalid) > 3 else "")
    warnings.warn(
        f"{path}: {len(invalid)} stored score value(s) are not valid scores ({shown}); "
        "they load as invalid_score errors, not as numbers",
        RuntimeWarning,
        stacklevel=4,
    )


def replay(path: Path) -> EventLog:
    """Rebuild a run from its event log alone (e.g. after a crash)."""
    events = read_events(path)
    first = next(events, None)
    if first is None or first.get("event") != "run.started":
        raise NotARunLog(f"{path} does not start with a run.started event; it is not a run log")
    definitions: list[ScoreDefinition] = []
    finished: dict[str, tuple[dict[str, Any], dict[str, Rec]]] = {}
    pending: dict[str, dict[str, Rec]] = {}
    case_ids: list[str] = list(first["case_ids"])
    options: dict[str, Any] = dict(first.get("options") or {})
    ended: dict[str, Any] | None = None
    invalid: list[str] = []  # stored values the score contract rejects
    for event in events:
        kind = event.get("event")
        if kind == "score.recorded":
            pending.setdefault(event["case_id"], {})[event["score"]] = _rec(event, invalid)
        elif kind == "case.ended":
            cid = event["case_id"]
            finished[cid] = (event, pending.pop(cid, {}))
        elif kind == "case.started":
            pending.pop(event["case_id"], None)
        elif kind == "score.defined":
            definitions.append(ScoreDefinition.model_validate(event["definition"]))
        elif kind == "run.resumed":
            case_ids = list(event.get("case_ids") or case_ids)
            options.update(event.get("options") or {})
            ended = None
        elif kind == "run.ended":
            ended = event
    if invalid:
        warn_invalid(path, invalid)
    results = Results(case_ids, len(definitions))
    position = {cid: pos for pos, cid in enumerate(case_ids)}
    for cid, (event, by_name) in finished.items():
        pos = position.get(cid)
        if pos is None:
            continue
        results.set_case(
            pos,
            Finished(
                _OUTCOME_CODES[event["outcome"]],
                int(event["attempt"]),
                decode_output(event.get("output"), event.get("output_kind")),
                event.get("error_type"),
                event.get("error_message"),
                _seconds(event.get("started_us")),
                _seconds(event.get("duration_us")),
                [by_name.get(d.name) or _MISSING for d in definitions],
            ),
        )
    return EventLog(
        run_id=str(first["run_id"]),
        name=str(first["name"]),
        started_at=first.get("started_at"),
        case_ids=case_ids,
        options=options,
        definitions=definitions,
        results=results,
        data_file=first.get("data_file"),
        ended=ended,
    )
