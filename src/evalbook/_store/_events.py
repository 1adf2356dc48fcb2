"""The event log of the run store: one JSON object per line in `events.jsonl`.

Writing is on the hot path (once per case): `LineEncoder` assembles a finished case's lines
from pieces encoded once per run, with the C string encoder of `json`, and seals each with its
checksum (`_lines.seal`). Reading (`replay`) takes the checked lines of `_lines` and rebuilds
the run's `Results`; a damaged line ends the read there (`Damage`), the events before it
count. The versions and the line checks live in `_lines` (re-exported here). The format is
documented in docs/file-formats.md.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _enc
from pathlib import Path
from typing import Any

from .._model._contract import ERROR, SCORED, UNSCORED, InvalidScore, Rec, validate_value
from .._model._results import OUTCOMES, PENDING, Finished, Results
from .._model._scores import Grader, ScoreDefinition
from .._util._text import TextGate
from ._codec import decode_output, encode_output
from ._lines import (
    FILE_READ_VERSIONS,
    READ_VERSIONS,
    SCHEMA_VERSION,
    Bad,
    Damage,
    DamagedLog,
    NotARunLog,
    SchemaVersionError,
    checked_lines,
    field_int,
    field_number,
    field_text,
    open_log,
    read_events,
    seal,
    version_error,
    warn_truncated,
)
from ._log import LineReader, LineTooLong, LogFile, count_lines

__all__ = [
    "FILE_READ_VERSIONS",
    "READ_VERSIONS",
    "SCHEMA_VERSION",
    "Damage",
    "DamagedLog",
    "EventLog",
    "LineEncoder",
    "NotARunLog",
    "SchemaVersionError",
    "dumps",
    "event_line",
    "prepare_append",
    "read_events",
    "replay",
    "seal",
    "version_error",
    "warn_invalid",
]

_V = f'{{"schema_version":{SCHEMA_VERSION},"event":'
_VALUE_TEXT = {0.0: "0.0", 1.0: "1.0", 0.5: "0.5"}  # -0.0 is written 0.0 (an equal value)
_OUTCOME_CODES = {name: code for code, name in enumerate(OUTCOMES)}
_MAX_TAILS = 1 << 12  # cached line tails per score and run: well under 1 MB each


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

    def __init__(
        self, definitions: Sequence[ScoreDefinition], case_ids: Sequence[str], epochs: int = 1
    ) -> None:
        self.case_ids = case_ids
        self.epochs = epochs
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
            {v: f'{keys}"value":{text}}}' for v, text in _VALUE_TEXT.items()} for keys in self._keys
        ]
        self._outcomes = [f',"outcome":"{name}","output":' for name in OUTCOMES]

    def sample(self, pos: int) -> str:
        """The `"case_id":…,"epoch":…` values of sample `pos` (its case id, then its epoch)."""
        case, epoch = divmod(pos, self.epochs)
        return f'{_enc(self.case_ids[case])},"epoch":{epoch + 1}'

    def case_started(self, pos: int, attempt: int, at_us: int) -> str:
        """The `case.started` line of an attempt that started at `at_us` (Unix µs)."""
        cid = self.sample(pos)
        return seal(f'{self._started}{cid},"attempt":{attempt},"at_us":{at_us}}}')

    def case_lines(self, pos: int, case: Finished) -> str:
        """A finished case's `score.recorded` lines (definition order), then its `case.ended`."""
        return self.case_block(pos, case, ())

    def case_block(self, pos: int, case: Finished, started: Sequence[tuple[int, int, int]]) -> str:
        """The `case.started` lines of `started` (pos, attempt, at_us), then `case_lines`.

        Times are written as integer microseconds: the engine takes them at that precision,
        so they read back exactly, and integers format several times faster than floats.
        Each line is sealed with its checksum (one CRC-32 of its bytes).
        """
        outcome, attempts, output, error_type, error_message, started_at, duration_s, records = case
        cid = self.sample(pos)
        if len(started) == 1 and started[0][0] == pos:  # the common case: its own start only
            _, attempt, at_us = started[0]
            lines = [seal(f'{self._started}{cid},"attempt":{attempt},"at_us":{at_us}}}')]
        else:
            lines = [self.case_started(p, a, t) for p, a, t in started]
        head = self._record_head + cid
        tails = self._tails
        for j, r in enumerate(records):  # one per score, in definition order
            if r[0] == SCORED and r[4] is None and r[5] is None and r[6] is None:  # plain: cached
                lines.append(seal(head + (tails[j].get(r[1]) or self.plain_tail(j, r[1]))))
            else:
                lines.append(seal(f"{head}{self._keys[j]}{_record_body(r)}}}"))
        out = _enc(output) if type(output) is str else _output_json(output)
        if error_type is not None:
            out += f',"error_type":{_enc(error_type)}'
        if error_message is not None:
            out += f',"error_message":{_enc(error_message)}'
        lines.append(
            seal(
                f'{self._ended}{cid},"attempt":{attempts}{self._outcomes[outcome]}{out},'
                f'"started_us":{round(started_at * 1e6) if started_at == started_at else "null"},'
                f'"duration_us":{round(duration_s * 1e6) if duration_s == duration_s else "null"}}}'
            )
        )
        return "".join(lines)

    def plain_tail(self, j: int, value: float) -> str:
        """The tail of score `j`'s line for a plain `value` (cached, up to a bound)."""
        text = f'{self._keys[j]}"value":{float(value)!r}}}'
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
    return seal(dumps({"schema_version": SCHEMA_VERSION, "event": event, **fields}))


# -- reading ------------------------------------------------------------------------------


def _rec(event: dict[str, Any], invalid: list[str]) -> Rec:
    """A `score.recorded` event's record; a value the score contract rejects (8.5, Infinity,
    `true`, `"1"`) is an `invalid_score` error, noted in `invalid`, never a number."""
    grader = event.get("grader")
    g = Grader(**grader) if grader is not None else None
    rationale = field_text(event, "rationale", optional=True)
    metadata = event.get("metadata")
    kinds = [k for k in ("value", "unscored", "error") if k in event]
    if len(kinds) != 1:
        raise ValueError("a record holds exactly one of 'value', 'unscored' and 'error'")
    if "value" in event:
        try:
            value = validate_value(event["value"])
        except InvalidScore as exc:
            invalid.append(repr(event["value"]))
            message = f"stored value rejected on load: {exc}"
            return Rec(ERROR, math.nan, "invalid_score", message, rationale, metadata, g)
        return Rec(SCORED, value, None, None, rationale, metadata, g)
    status, key, label = (UNSCORED, "unscored", "reason") if kinds == ["unscored"] else _ERROR
    body = event[key]
    if not isinstance(body, dict):
        raise TypeError(f"{key!r} is {type(body).__name__}, not an object")
    reason = field_text(body, label, optional=True)
    message = field_text(body, "message", optional=True)
    return Rec(status, math.nan, reason, message, rationale, metadata, g)


_ERROR = (ERROR, "error", "code")


_MISSING = Rec(
    ERROR,
    math.nan,
    "record_missing",
    "events.jsonl has no score.recorded event for this (case, score)",
)


@dataclass
class EventLog:
    """What a run's event log says: its identity, definitions and finished cases.

    `damage` says where reading stopped at a damaged line (None: the whole log was read).
    """

    run_id: str
    name: str
    started_at: str | None
    case_ids: list[str]
    options: dict[str, Any]
    definitions: list[ScoreDefinition]
    results: Results
    data_file: str | None = None
    ended: dict[str, Any] | None = None
    damage: Damage | None = None


def warn_invalid(path: Path, invalid: Sequence[str]) -> None:
    """One warning for the stored values of `path` that are not valid scores."""
    shown = ", ".join(invalid[:3]) + (" …" if len(invalid) > 3 else "")
    warnings.warn(
        f"{path}: {len(invalid)} stored score value(s) are not valid scores ({shown}); "
        "they load as invalid_score errors, not as numbers",
        RuntimeWarning,
        stacklevel=4,
    )


def _started(path: Path, first: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """The case ids and options of a `run.started` event; DamagedLog if ill-typed."""
    try:
        for key, optional in (("run_id", 0), ("name", 0), ("started_at", 1), ("data_file", 1)):
            field_text(first, key, optional=bool(optional))
        case_ids = first["case_ids"]
        if type(case_ids) is not list or not all(type(c) is str for c in case_ids):
            raise TypeError("'case_ids' is not a list of text")
        options = first.get("options") or {}
        if not isinstance(options, dict):
            raise TypeError("'options' is not an object")
    except (KeyError, TypeError) as exc:
        what = f"no {exc} key" if isinstance(exc, KeyError) else str(exc)
        raise DamagedLog(f"{path}, line 1: the run.started event is damaged ({what})") from None
    return list(case_ids), dict(options)


class _Replay:
    """The state of one read of a log; `line` applies one event (KeyError etc. if bad)."""

    def __init__(
        self, first: dict[str, Any], version: int, case_ids: list[str], epochs: int
    ) -> None:
        self.version = version
        self.case_ids = case_ids
        self.known = frozenset(case_ids)
        self.epochs = epochs
        self.options: dict[str, Any] = {}
        self.definitions: list[ScoreDefinition] = []
        self.derived: dict[str, bool] = {}
        # (case id, epoch) -> line, offset, case
        self.finished: dict[tuple[str, int], tuple[int, int, Finished]] = {}
        self.pending: dict[tuple[str, int], dict[str, Rec]] = {}
        self.ended: dict[str, Any] | None = None
        self.invalid: list[str] = []

    def _case(self, event: dict[str, Any]) -> tuple[str, int]:
        """The sample (case id, epoch) an event is about; versions 1-2 have epoch 1 only."""
        cid: str = field_text(event, "case_id")
        if cid not in self.known:
            raise ValueError(f"case {cid!r} is not a case of this run")
        epoch = field_int(event, "epoch", low=1) if self.version >= 3 else 1
        if epoch > self.epochs:
            raise ValueError(f"epoch {epoch} of case {cid!r}: the run has {self.epochs} epoch(s)")
        return cid, epoch

    def line(self, number: int, offset: int, event: dict[str, Any]) -> None:
        kind = field_text(event, "event")
        if kind == "score.recorded":
            cid = self._case(event)
            name = field_text(event, "score")
            if self.derived.get(name) is not event.get("derived", False):
                raise ValueError(
                    f"score {name!r} (derived {event.get('derived')!r}) is not "
                    "a score defined in this log"
                )
            self.pending.setdefault(cid, {})[name] = _rec(event, self.invalid)
        elif kind == "case.ended":
            cid = self._case(event)
            self.finished[cid] = (number, offset, self._ended_case(event, cid))
        elif kind == "case.started":
            cid = self._case(event)
            field_int(event, "attempt", low=1)
            field_number(event, "at_us" if self.version >= 2 else "at")  # informative only
            self.pending.pop(cid, None)
        elif kind == "score.defined":
            definition = ScoreDefinition.model_validate(event["definition"])
            if definition.name in self.derived:
                raise ValueError(f"score {definition.name!r} is defined twice")
            self.definitions.append(definition)
            self.derived[definition.name] = definition.derived
        elif kind == "run.resumed":
            ids = event.get("case_ids") or self.case_ids
            if type(ids) is not list or frozenset(ids) != self.known or len(ids) != len(self.known):
                raise ValueError("'case_ids' are not the run's cases")
            options = event.get("options") or {}
            if not isinstance(options, dict):
                raise TypeError("'options' is not an object")
            self.case_ids = list(ids)
            self.options.update(options)
            self.ended = None
        elif kind == "run.ended":
            self.ended = event
        elif kind == "run.started":
            raise ValueError("a second run.started event")
        # another event name: a later writer's addition, with nothing this reader needs

    def _ended_case(self, event: dict[str, Any], cid: tuple[str, int]) -> Finished:
        outcome = _OUTCOME_CODES.get(event["outcome"])
        if outcome is None:
            raise ValueError(f"unknown outcome {event['outcome']!r}")
        kind = field_text(event, "output_kind", optional=True)
        if kind not in (None, "literal", "repr"):
            raise ValueError(f"unknown output_kind {kind!r}")
        if self.version >= 2:
            started = _seconds(field_int(event, "started_us", optional=True))
            duration = _seconds(field_int(event, "duration_us", optional=True))
        else:  # version 1: seconds as numbers
            started, duration = field_number(event, "started_at"), field_number(event, "duration_s")
        by_name = self.pending.pop(cid, {})
        return Finished(
            outcome,
            field_int(event, "attempt"),
            decode_output(event.get("output"), kind),
            field_text(event, "error_type", optional=True),
            field_text(event, "error_message", optional=True),
            started,
            duration,
            [by_name.get(d.name) or _MISSING for d in self.definitions],
        )


_DAMAGE = (KeyError, TypeError, ValueError, AttributeError, SyntaxError, RecursionError)


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc} key"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def _read(path: Path, stop: Bad | None) -> tuple[EventLog, int | None, list[str]]:
    """One read of the log, up to the first damaged line (or up to `stop`): the log, the
    number of a truncated last line, and the stored values the score contract rejects."""
    with open_log(path) as f:
        reader = LineReader(f, path)
        lines = checked_lines(path, reader, TextGate())
        try:
            first = next(lines, None)
        except (Bad, LineTooLong) as exc:
            reason = exc.reason if isinstance(exc, Bad) else str(exc).split(": ", 1)[1]
            raise DamagedLog(f"{path}, line 1: {reason}; it is not readable as a run log") from None
        if first is None or first[2].get("event") != "run.started":
            raise NotARunLog(f"{path} does not start with a run.started event; it is not a run log")
        case_ids, options = _started(path, first[2])
        epochs = options.get("epochs", 1)
        if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
            raise DamagedLog(
                f"{path}, line 1: the run.started event is damaged (epochs {epochs!r})"
            )
        state = _Replay(first[2], first[2]["schema_version"], case_ids, epochs)
        state.options = options
        bad = stop
        try:
            for number, offset, event in lines:
                if stop is not None and number >= stop.number:
                    break
                try:
                    state.line(number, offset, event)
                except _DAMAGE as exc:
                    raise Bad(
                        number, offset, f"a damaged {event.get('event')!r} event ({_why(exc)})"
                    ) from None
        except Bad as exc:
            bad = exc
        except LineTooLong as exc:
            bad = Bad(exc.number, exc.offset, str(exc).split(": ", 1)[1])
        damage = None
        if bad is not None:
            f.seek(bad.offset)
            unread, exact = count_lines(f)
            damage = Damage(path, bad.number, bad.offset, bad.reason, unread, exact)
        truncated = reader.truncated if bad is None else None
    k = state.epochs
    results = Results(state.case_ids, len(state.definitions), epochs=k)
    position = {cid: pos for pos, cid in enumerate(state.case_ids)}
    for (cid, epoch), (number, offset, case) in state.finished.items():
        try:
            results.set_case(position[cid] * k + epoch - 1, case)
        except _DAMAGE as exc:  # found only now: read again, up to that line
            bad = Bad(number, offset, f"a damaged 'case.ended' event ({_why(exc)})")
            raise _Late(bad) from None
    log = EventLog(
        run_id=first[2]["run_id"],
        name=first[2]["name"],
        started_at=first[2].get("started_at"),
        case_ids=state.case_ids,
        options=state.options,
        definitions=state.definitions,
        results=results,
        data_file=first[2].get("data_file"),
        ended=state.ended,
        damage=damage,
    )
    return log, truncated, state.invalid


class _Late(Exception):
    """A damaged line found after the read (when its case was stored)."""

    def __init__(self, bad: Bad) -> None:
        super().__init__(bad.reason)
        self.bad = bad


def replay(path: Path, *, warn: bool = True, warn_damage: bool = True) -> EventLog:
    """Rebuild a run from its event log alone (e.g. after a crash).

    A damaged line (bad checksum, not JSON, a missing or ill-typed key, an unknown outcome,
    a definition that does not validate, ...) ends the read there: the events before it
    count, and one `RuntimeWarning` names the file, the line, what is wrong and how many
    lines were not read (`EventLog.damage` says it too). A damaged first line is a
    `DamagedLog` error naming the file (nothing to recover). `warn=False`: no warning at all
    (a second look at a log already read); `warn_damage=False`: none for the damage (a
    resume, which sets the damaged log aside and says so).
    """
    stop: Bad | None = None
    while True:
        try:
            log, truncated, invalid = _read(path, stop)
            break
        except _Late as late:  # each try stops at an earlier line: this ends
            stop = late.bad
    if warn:
        if truncated is not None:
            warn_truncated(path, truncated)
        if invalid:
            warn_invalid(path, invalid)
        if log.damage is not None and warn_damage:
            warnings.warn(log.damage.message(), RuntimeWarning, stacklevel=3)
    return log


def prepare_append(log: LogFile, encoder: LineEncoder, results: Results) -> None:
    """Make a stored log ready for a resume to append to it (the log's lock is held).

    What a crash left after the last complete line is cut. A log damaged at some line is
    copied whole to `events.jsonl.damaged-<n>` (nothing is lost) and cut at that line, with
    one warning: appending after the damage would hide what the resume logs from every later
    read (reading stops at the damaged line). The kept cases (`results`) that the cut log no
    longer holds (a resume that read the final files, not the log) are logged again.
    """
    found = replay(log.path, warn=False)
    if found.damage is None:
        log.cut_partial_line()
        return
    copy = log.set_aside(found.damage.offset)
    where = {cid: pos for pos, cid in enumerate(found.results.case_ids)}
    k = results.epochs
    lost = [
        pos
        for pos in range(results.n_samples)
        if results.outcome[pos] != PENDING
        and found.results.outcome[where[results.case_id_of(pos)] * k + pos % k] == PENDING
    ]
    if lost:
        log.write("".join(encoder.case_ended(pos, results) for pos in lost).encode())
    warnings.warn(
        f"{log.path}, line {found.damage.line}: {found.damage.reason}; the damaged log is kept "
        f"as {copy.name} and the log is cut at that line, so the resume continues after the "
        "last good line and runs every case without a final outcome before it"
        + (f" ({len(lost)} kept cases were logged again)" if lost else ""),
        RuntimeWarning,
        stacklevel=3,
    )
