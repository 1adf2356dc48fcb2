"""Writing the event log of the run store: one JSON object per line in `events.jsonl`.

Writing is on the hot path (once per finished sample): `LineEncoder` assembles a sample's
lines from pieces encoded once per run, with the C string encoder of `json`, and seals each
with its checksum (`_format.seal`). The format is documented in docs/file-formats.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from json.encoder import encode_basestring_ascii as _enc
from typing import Any

from ..._model._contract import ERROR, SCORED, UNSCORED, Rec
from ..._model._definitions import ScoreDefinition
from ..._model._results import OUTCOMES, Attempt, Finished, Results
from ..._model._tally import Tally, usage_json
from ..._model._transcript import counts_of
from .._codec import encode_output
from ._format import SCHEMA_VERSION, seal

__all__ = ["LineEncoder", "dumps", "event_line"]

_V = f'{{"schema_version":{SCHEMA_VERSION},"event":'
_VALUE_TEXT = {0.0: "0.0", 1.0: "1.0", 0.5: "0.5"}  # -0.0 is written 0.0 (an equal value)
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

    def case_block(
        self,
        pos: int,
        case: Finished,
        started: Sequence[tuple[int, int, int]],
        tie: str | None = None,
    ) -> str:
        """The `case.started` lines of `started` (pos, attempt, at_us), then `case_lines`.

        `tie` names the sample's line in `transcripts.jsonl` (written before this block):
        `case.ended` then holds the transcript's counts and that tie, never its text.

        Times are written as integer microseconds: the engine takes them at that precision,
        so they read back exactly, and integers format several times faster than floats.
        Each line is sealed with its checksum (one CRC-32 of its bytes).
        """
        outcome, attempts, output, error_type, error_message, started_at, duration_s, records = (
            case[:8]
        )
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
        if case.origin is not None:
            out += f',"origin":"{case.origin}"'
        lines.append(
            seal(
                f'{self._ended}{cid},"attempt":{attempts}{self._outcomes[outcome]}{out},'
                f'"started_us":{round(started_at * 1e6) if started_at == started_at else "null"},'
                f'"duration_us":{round(duration_s * 1e6) if duration_s == duration_s else "null"}'
                f"{'' if case.usage is None else _usage_field(case.usage)}"
                f"{'' if case.tries is None else _tries_field(case.tries)}"
                f"{'' if tie is None else _transcript_field(case, tie)}}}"
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
        """`case_lines` for a case already stored in `results` (not the hot path), with the
        tie of its stored transcript."""
        return self.case_block(pos, results.finished(pos), (), results.ties[pos])


def _transcript_field(case: Finished, tie: str) -> str:
    """`,"steps":[n_steps,n_tool_calls,n_tool_errors],"transcript":"<tie>"`."""
    if case.transcript is not None:
        counts = counts_of(case.transcript.messages)
    elif case.stored_transcript is not None:
        counts = case.stored_transcript.counts
    else:
        return ""
    return f',"steps":[{counts[0]},{counts[1]},{counts[2]}],"transcript":"{tie}"'


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


def _usage_field(usage: Mapping[str, Tally]) -> str:
    """The `,"usage":{...}` part of a `case.ended` line (only samples that recorded usage)."""
    return f',"usage":{dumps(usage_json(usage))}'


def _us(seconds: float) -> int | None:
    """Seconds (taken in whole µs) as the log's integer microseconds; None if not known."""
    return round(seconds * 1e6) if seconds == seconds else None


def _tries_field(tries: Sequence[Attempt]) -> str:
    """The `,"tries":[...]` part of a `case.ended` line: every attempt of a retried sample.

    Only samples with more than one attempt have it; an outcome the source did not know
    (a log from before attempts were logged) is written as null, as are unknown times.
    """
    items = []
    for t in tries:
        item: dict[str, Any] = {"outcome": OUTCOMES[t.outcome] if t.outcome >= 0 else None}
        if t.error_type is not None:
            item["error_type"] = t.error_type
        if t.error_message is not None:
            item["error_message"] = t.error_message
        item["started_us"] = _us(t.started_at)
        item["duration_us"] = _us(t.duration_s)
        items.append(item)
    return f',"tries":{dumps(items)}'


def _record_body(rec: Rec) -> str:
    """The body of one `score.recorded` line after its `score` and `derived` keys."""
    status, value, reason, message, rationale, metadata, grader, origin = rec
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
    if origin is not None and status == ERROR:
        body += f',"origin":"{origin}"'
    return body


def event_line(event: str, **fields: Any) -> str:
    """One non-hot-path event line (run.started, score.defined, run.resumed, run.ended)."""
    return seal(dumps({"schema_version": SCHEMA_VERSION, "event": event, **fields}))


# -- reading ------------------------------------------------------------------------------
