"""Reading the event log of the run store (`events.jsonl`, one JSON object per line).

`replay` takes the checked lines of `_format` and rebuilds the run's `Results`; a damaged line
ends the read there (`Damage`), the events before it count. Writing is `_write`'s. The
versions and the line checks live in `_format` (re-exported here). The format is documented in
docs/file-formats.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._model._contract import ERROR, SCORED, UNSCORED, InvalidScore, Rec, validate_value
from ..._model._definitions import Grader, ScoreDefinition, reading_stored
from ..._model._origin import HARNESS, ORIGINS, record_origin
from ..._model._results import (
    ERRORED,
    OUTCOMES,
    PENDING,
    TIMED_OUT,
    Attempt,
    Finished,
    Results,
    TranscriptRef,
)
from ..._model._tally import usage_from_json
from ..._util._text import TextGate
from ..._util._warn import warn
from .._codec import decode_output
from ._file import LineReader, LineTooLong, LogFile, count_lines
from ._format import (
    _SURROGATE_ESCAPE,
    FILE_READ_VERSIONS,
    READ_VERSIONS,
    SCHEMA_VERSION,
    Bad,
    Damage,
    DamagedLog,
    NotARunLog,
    SchemaVersionError,
    checked_lines,
    event_of,
    field_int,
    field_number,
    field_text,
    open_log,
    read_events,
    seal,
    version_error,
    warn_truncated,
)
from ._write import LineEncoder

__all__ = [
    "FILE_READ_VERSIONS",
    "READ_VERSIONS",
    "SCHEMA_VERSION",
    "Damage",
    "DamagedLog",
    "EventLog",
    "NotARunLog",
    "SchemaVersionError",
    "prepare_append",
    "read_events",
    "replay",
    "seal",
    "tries_in_log",
    "version_error",
    "warn_invalid",
    "warn_read",
]

_OUTCOME_CODES = {name: code for code, name in enumerate(OUTCOMES)}


def _seconds(us: int | None) -> float:
    return math.nan if us is None else us / 1e6


def _rec(event: dict[str, Any], invalid: list[str]) -> Rec:
    """A `score.recorded` event's record; a value the score contract rejects (8.5, Infinity,
    `true`, `"1"`) is an `invalid_score` error, noted in `invalid`, never a number."""
    grader = event.get("grader")
    g = Grader.model_validate(grader) if grader is not None else None
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
    origin = None
    if status == ERROR:
        origin = _origin(event)
        if origin is None and event["schema_version"] < 4:  # not said before version 4
            origin = record_origin(reason, None)
    return Rec(status, math.nan, reason, message, rationale, metadata, g, origin)


def _origin(event: dict[str, Any]) -> str | None:
    """A version 4 line's `origin` (absent: None); ValueError for one that is no origin."""
    origin: str | None = field_text(event, "origin", optional=True)
    if origin is not None and origin not in ORIGINS:
        raise ValueError(f"unknown origin {origin!r}")
    return origin


_ERROR = (ERROR, "error", "code")


_MISSING = Rec(
    ERROR,
    math.nan,
    "record_missing",
    "events.jsonl has no score.recorded event for this (case, score)",
    origin=HARNESS,  # what evalbook lost: neither the task's nor a scorer's
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
    # what the read found on its way, for the caller to warn of (`warn_read`) or not
    truncated: int | None = None  # the number of a last line cut short by a crash
    invalid: list[str] = field(default_factory=list)  # stored values the contract rejects
    end: int = 0  # the offset after the last complete line read: where an append starts


def warn_invalid(path: Path, invalid: Sequence[str]) -> None:
    """One warning for the stored values of `path` that are not valid scores."""
    shown = ", ".join(invalid[:3]) + (" …" if len(invalid) > 3 else "")
    warn(
        f"{path}: {len(invalid)} stored score value(s) are not valid scores ({shown}); "
        "they load as invalid_score errors, not as numbers",
        RuntimeWarning,
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
        # (case id, epoch) -> {attempt: its start}, of attempts 2.. (the first starts with
        # its sample): a log without `tries` shows a retried sample's attempts by these
        self.starts: dict[tuple[str, int], dict[int, float]] = {}
        self.ended: dict[str, Any] | None = None
        self.invalid: list[str] = []
        # samples whose current attempt has started and not ended: a sample ends once per
        # start, so a second `case.ended` without a new start is damage, not a new result
        self.running: set[tuple[str, int]] = set()

    def _sample_event(self, event: dict[str, Any]) -> tuple[str, int]:
        """`_case`, for an event of a sample: none may follow `run.ended` (until a resume)."""
        if self.ended is not None:
            raise ValueError("an event of a sample after run.ended (and no run.resumed)")
        return self._case(event)

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
            cid = self._sample_event(event)
            name = field_text(event, "score")
            if self.derived.get(name) is not event.get("derived", False):
                raise ValueError(
                    f"score {name!r} (derived {event.get('derived')!r}) is not "
                    "a score defined in this log"
                )
            self.pending.setdefault(cid, {})[name] = _rec(event, self.invalid)
        elif kind == "case.ended":
            cid = self._sample_event(event)
            if cid in self.finished and cid not in self.running:
                raise ValueError(
                    f"a second case.ended of case {cid[0]!r}, epoch {cid[1]}, that no "
                    f"case.started precedes (it ended at line {self.finished[cid][0]})"
                )
            self.running.discard(cid)
            self.finished[cid] = (number, offset, self._ended_case(event, cid))
        elif kind == "case.started":
            cid = self._sample_event(event)
            self.running.add(cid)
            attempt = field_int(event, "attempt", low=1)
            # a number, as it was always read (informative: the sample's lines decide)
            at = (
                field_number(event, "at_us") / 1e6
                if self.version >= 2
                else field_number(event, "at")
            )
            self.pending.pop(cid, None)
            if attempt == 1:  # the sample starts (again, in a resume): no retry of it yet
                self.starts.pop(cid, None)
            else:
                self.starts.setdefault(cid, {})[attempt] = at
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
            if isinstance(event.get("stopped"), dict):  # an early stop's decision
                self.options["stopped"] = event["stopped"]
        elif kind == "run.started":
            raise ValueError("a second run.started event")
        else:  # a later writer's event comes with a later schema_version, refused before
            raise ValueError(f"an unknown event {kind!r}")

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
        attempts = field_int(event, "attempt")
        etype = field_text(event, "error_type", optional=True)
        emsg = field_text(event, "error_message", optional=True)
        starts = self.starts.pop(cid, None)
        tries: tuple[Attempt, ...] | None
        if "tries" in event:
            tries = _tries(event["tries"], attempts, outcome)
        elif attempts > 1 and starts is not None and len(starts) == attempts - 1:
            tries = _tries_of_starts(starts, started, duration, outcome, etype, emsg)
        else:
            tries = None  # what the log has: the sample alone (run.attempts() says unknown)
        return Finished(
            outcome,
            attempts,
            decode_output(event.get("output"), kind),
            etype,
            emsg,
            started,
            duration,
            [by_name.get(d.name) or _MISSING for d in self.definitions],
            usage_from_json(event["usage"]) if "usage" in event else None,
            tries,
            None,
            _transcript_ref(event),
            _origin(event) if outcome in (ERRORED, TIMED_OUT) else None,
        )


def _transcript_ref(event: dict[str, Any]) -> TranscriptRef | None:
    """A `case.ended` line's `steps` and `transcript` (its tie): where its transcript is."""
    tie = field_text(event, "transcript", optional=True)
    if tie is None:
        return None
    counts = event.get("steps")
    if (
        type(counts) is not list
        or len(counts) != 3
        or not all(type(x) is int and x >= 0 for x in counts)
        or len(tie) != 8
    ):
        raise ValueError(f"'steps' {counts!r} or 'transcript' {tie!r} is damaged")
    return TranscriptRef((counts[0], counts[1], counts[2]), tie)


def _tries(items: Any, attempts: int, outcome: int) -> tuple[Attempt, ...]:
    """A `case.ended` line's `tries`: one per attempt, the last one its final outcome."""
    if type(items) is not list or len(items) != attempts or attempts < 2:
        raise ValueError(f"'tries' is not a list of the sample's {attempts} attempts")
    tries = []
    for item in items:
        if not isinstance(item, dict):
            raise TypeError(f"an item of 'tries' is {type(item).__name__}, not an object")
        name = field_text(item, "outcome", optional=True)
        code = PENDING if name is None else _OUTCOME_CODES.get(name)
        if code is None:
            raise ValueError(f"unknown outcome {name!r} in 'tries'")
        tries.append(
            Attempt(
                code,
                field_text(item, "error_type", optional=True),
                field_text(item, "error_message", optional=True),
                _seconds(field_int(item, "started_us", optional=True)),
                _seconds(field_int(item, "duration_us", optional=True)),
            )
        )
    if tries[-1].outcome != outcome:
        raise ValueError("the last of 'tries' is not the sample's outcome")
    return tuple(tries)


def _tries_of_starts(
    starts: dict[int, float],
    started: float,
    duration: float,
    outcome: int,
    etype: str | None,
    emsg: str | None,
) -> tuple[Attempt, ...] | None:
    """A retried sample's attempts in a log without `tries`: the `case.started` times.

    The outcome and error of an earlier attempt are not known (PENDING, None), nor its
    duration; the last one runs from its start to the end of the sample's last attempt.
    """
    if any(a not in starts for a in range(2, len(starts) + 2)):
        return None
    at = [started] + [starts[a] for a in range(2, len(starts) + 2)]
    last = math.nan
    if not math.isnan(started + duration + at[-1]):  # in whole µs: exact
        last = (round(started * 1e6) + round(duration * 1e6) - round(at[-1] * 1e6)) / 1e6
    earlier = [Attempt(PENDING, None, None, t, math.nan) for t in at[:-1]]
    return (*earlier, Attempt(outcome, etype, emsg, at[-1], last))


_DAMAGE = (KeyError, TypeError, ValueError, AttributeError, SyntaxError, RecursionError)


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"no {exc} key"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "…"


def _read(path: Path, stop: Bad | None) -> EventLog:
    """One read of the log, up to the first damaged line (or up to `stop`)."""
    with open_log(path) as f:
        reader = LineReader(f, path)
        lines = checked_lines(path, reader, TextGate())
        try:
            first = next(lines, None)
        except (Bad, LineTooLong) as exc:
            reason = exc.reason if isinstance(exc, Bad) else str(exc).split(": ", 1)[1]
            raise DamagedLog(f"{path}, line 1: {reason}; it is not readable as a run log") from None
        if first is None:  # a run killed before its first line (or a file made by hand)
            raise NotARunLog(f"{path} is empty: the run wrote nothing, so there is nothing to read")
        if first[2].get("event") != "run.started":
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
        end = reader.end
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
        truncated=truncated,
        invalid=state.invalid,
        end=end,
    )
    return log


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
            with reading_stored():
                log = _read(path, stop)
            break
        except _Late as late:  # each try stops at an earlier line: this ends
            stop = late.bad
    if warn:
        warn_read(path, log, warn_damage=warn_damage)
    return log


def warn_read(path: Path, log: EventLog, *, warn_damage: bool) -> None:
    """The warnings of a read of `path` (`replay`'s), given once its caller uses what it read.

    A resume reads the log before it knows whether the log or the final files decide; only
    when the log does are its truncated line and rejected values worth a warning.
    """
    if log.truncated is not None:
        warn_truncated(path, log.truncated)
    if log.invalid:
        warn_invalid(path, log.invalid)
    if log.damage is not None and warn_damage:
        warn(log.damage.message(), RuntimeWarning)


def tries_in_log(path: Path) -> dict[tuple[str, int], tuple[Attempt, ...]]:
    """The `tries` of a log's `case.ended` lines, by sample (case id, epoch); a later line
    of a sample wins, as in `replay`.

    For a run loaded from its final files: only the lines that hold `tries` are parsed and
    checked (checksum, version, the key itself), so the cost is that of reading the file;
    the first such line that is damaged ends the scan, as a damaged line ends a replay.
    """
    found: dict[tuple[str, int], tuple[Attempt, ...]] = {}
    gate = TextGate()
    with open_log(path) as f:
        for number, offset, raw in LineReader(f, path):
            if b'"tries":' not in raw:
                continue  # most lines: not parsed at all
            try:
                event = event_of(path, number, offset, raw)
                if _SURROGATE_ESCAPE.search(raw):  # as `checked_lines` does
                    event = gate(event, f"{path}, line {number}")
                if event.get("event") != "case.ended" or "tries" not in event:
                    continue
                outcome = _OUTCOME_CODES[event["outcome"]]
                key = (field_text(event, "case_id"), field_int(event, "epoch", low=1))
                found[key] = _tries(event["tries"], field_int(event, "attempt"), outcome)
            except (Bad, *_DAMAGE):
                break
    return found


def prepare_append(log: LogFile, encoder: LineEncoder, results: Results, found: EventLog) -> str:
    """Make a stored log ready for a resume to append to it (the log's lock is held).

    `found` is what the resume read of this log, under the same lock: the log is not read
    again. What a crash left after the last complete line is cut (at `found.end`). A log
    damaged at some line is copied whole to `events.jsonl.damaged-<n>` (nothing is lost) and
    cut at that line, with one warning: appending after the damage would hide what the
    resume logs from every later read (reading stops at the damaged line). Returns the lines
    that log again the kept cases (`results`) that the cut log no longer holds (a resume that
    read the final files, not the log): they go after the resume's `run.resumed` line, since
    no sample's line may follow a `run.ended` the cut log may end with.
    """
    if found.damage is None:
        log.cut_at(found.end)
        return ""
    copy = log.set_aside(found.damage.offset)
    where = {cid: pos for pos, cid in enumerate(found.results.case_ids)}
    k = results.epochs
    lost = [
        pos
        for pos in range(results.n_samples)
        if results.outcome[pos] != PENDING
        and found.results.outcome[where[results.case_id_of(pos)] * k + pos % k] == PENDING
    ]
    warn(
        f"{log.path}, line {found.damage.line}: {found.damage.reason}; the damaged log is kept "
        f"as {copy.name} and the log is cut at that line, so the resume continues after the "
        "last good line and runs every case without a final outcome before it"
        + (f" ({len(lost)} kept cases were logged again)" if lost else ""),
        RuntimeWarning,
    )
    return "".join(encoder.case_ended(pos, results) for pos in lost)
