"""What `export_otel` sends, planned from a run's tables: no OpenTelemetry needed here.

One gauge per score with a counted mean; one span per sample that ran, its scores' counted
values as attributes and one `gen_ai.evaluation.result` event per record; the run span with
the primary score; with `steps=True`, one span per transcript step under its sample's span.
The names are listed in docs/interop.md.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, cast

import pandas as pd

from .._model._run_data import RunData
from .._store._layout import first_started_at

__all__ = ["Plan", "SpanPlan", "plan_of"]

# OTel's instrument-name rule: a gauge named after a very long score cannot be made
_INSTRUMENT_NAME = re.compile(r"[A-Za-z][-_./A-Za-z0-9]{0,254}")


@dataclass
class SpanPlan:
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # the span's ERROR status description, when it errored
    name: str | None = None  # a step's span name (a sample's is the export's own)
    children: list[SpanPlan] = field(default_factory=list)  # a sample's steps (steps=True)


@dataclass
class Plan:
    gauges: list[tuple[str, str, float, dict[str, Any]]]  # (name, description, value, attributes)
    not_sent: dict[str, str]
    run: SpanPlan
    samples: list[SpanPlan]
    not_run: int


def _number(x: object) -> float | None:
    """A finite float, or None for NaN / None / pd.NA (what a table holds for 'no value')."""
    if x is None or x is pd.NA or isinstance(x, bool):
        return None
    if isinstance(x, int | float) or hasattr(x, "__float__"):
        value = float(x)
        return value if math.isfinite(value) else None
    return None


def _text(x: object) -> str | None:
    return None if x is None or x is pd.NA or (isinstance(x, float) and math.isnan(x)) else str(x)


def _int(x: object) -> int:
    """A count from a table cell (numpy or Python int)."""
    return int(cast(Any, x))


def _ns(stamp: object) -> int | None:
    """A table's `started_at` (a UTC timestamp or NaT) as Unix nanoseconds."""
    if stamp is None or stamp is pd.NaT or not isinstance(stamp, pd.Timestamp):
        return None
    return int(stamp.value)


def _label_of(metadata: object) -> str | None:
    """The record's own label (`eb.Score(label=...)`, kept in its metadata)."""
    if not isinstance(metadata, str):
        return None
    try:
        meta = json.loads(metadata)
    except ValueError:
        return None
    label = meta.get("label") if isinstance(meta, dict) else None
    return label if isinstance(label, str) else None


def _event(row: Any) -> dict[str, Any]:
    """One record as a `gen_ai.evaluation.result` event's attributes."""
    attrs: dict[str, Any] = {"gen_ai.evaluation.name": str(row.score)}
    status = str(row.status)
    attrs["evalbook.score.status"] = status
    value, counted = _number(row.value), _number(row.counted)
    if status == "scored" and value is not None:
        attrs["gen_ai.evaluation.score.value"] = value
    label = _label_of(row.metadata)
    if label is not None:
        attrs["gen_ai.evaluation.score.label"] = label
    rationale = _text(row.rationale)
    if rationale is not None:
        attrs["gen_ai.evaluation.explanation"] = rationale
    reason = _text(row.reason)
    if reason is not None:
        attrs["evalbook.score.reason"] = reason
        if status == "error":
            attrs["error.type"] = reason
    if counted is not None:
        attrs["evalbook.score.counted"] = counted
    return attrs


def _step_spans(transcript: Any, start: int | None, case_id: str, epoch: int) -> list[SpanPlan]:
    """One span per step of a sample's transcript, GenAI semantic conventions' names.

    A step starts at its `started_at`, else where the step before it ended (the sample's
    start for the first) and lasts its `latency_s` (zero-length when not known). No message
    text is sent: the spans say what happened, the run store keeps what was said.
    """
    spans: list[SpanPlan] = []
    at = start
    for k, m in enumerate(transcript.messages):
        s_start = round(m.started_at * 1e9) if m.started_at is not None else at
        s_end = None if s_start is None else s_start + round((m.latency_s or 0.0) * 1e9)
        attrs: dict[str, Any] = {
            "evalbook.case.id": case_id,
            "evalbook.case.epoch": epoch,
            "evalbook.step": k,
            "evalbook.step.role": m.role,
        }
        if m.role == "assistant":
            attrs["gen_ai.operation.name"] = "chat"
            name = "chat" if m.model is None else f"chat {m.model}"
            if m.model is not None:
                # a step keeps one model, the one that answered (Inspect's, ATIF's, the
                # reply's): it is what was asked for too, as far as the transcript says
                attrs["gen_ai.request.model"] = attrs["gen_ai.response.model"] = m.model
            for key, value in (
                ("gen_ai.usage.input_tokens", m.input_tokens),
                ("gen_ai.usage.output_tokens", m.output_tokens),
            ):
                if value is not None:
                    attrs[key] = int(value)
            if m.tool_calls:
                attrs["evalbook.step.tool_calls"] = [c.function.name for c in m.tool_calls]
        elif m.role == "tool":
            attrs["gen_ai.operation.name"] = "execute_tool"
            tool = m.name or _called(transcript.messages[:k], m.tool_call_id)
            name = "execute_tool" if tool is None else f"execute_tool {tool}"
            if tool is not None:
                attrs["gen_ai.tool.name"] = tool
            if m.tool_call_id is not None:
                attrs["gen_ai.tool.call.id"] = m.tool_call_id
        else:
            name = f"message {m.role}"
        error = None
        if m.error is not None:
            attrs["error.type"] = "tool_error" if m.role == "tool" else "model_error"
            error = m.error
        spans.append(SpanPlan(s_start, s_end, attrs, error=error, name=name))
        at = s_end if s_end is not None else at
    return spans  # times as recorded: a step's own clock is never moved into its sample's


def _called(before: Any, call_id: str | None) -> str | None:
    """The name of the tool call `call_id` among the messages before a result."""
    for m in before:
        for c in m.tool_calls or ():
            if c.id == call_id:
                return str(c.function.name)
    return None


def plan_of(run: RunData, steps: bool = False) -> Plan:
    """The gauges, the run span and one span per sample that ran, from the run's tables
    (with `steps`, one child span per step of each sample's transcript)."""
    ident: dict[str, Any] = {"evalbook.run.name": run.name, "evalbook.run.id": run.id}
    run_attrs = dict(ident)
    summary = run.summary()
    primary = {d.name for d in run.definitions if d.primary}
    gauges: list[tuple[str, str, float, dict[str, Any]]] = []
    not_sent: dict[str, str] = {}
    for row in summary.itertuples(index=False):
        name, mean = str(row.score), _number(row.mean)
        metric = f"evalbook.score.{name}"
        if mean is None:
            not_sent[name] = "no counted value"
        elif not _INSTRUMENT_NAME.fullmatch(metric):
            not_sent[name] = f"{metric[:40]}... is longer than OpenTelemetry allows (255)"
        else:
            point = {**ident, "evalbook.score.primary": name in primary}
            gauges.append((metric, str(row.label), mean, point))
        if name in primary:
            run_attrs["evalbook.run.primary.name"] = name
            for key in ("mean", "ci_low", "ci_high"):
                value = _number(getattr(row, key))
                if value is not None:
                    run_attrs[f"evalbook.run.primary.{key}"] = value
            run_attrs["evalbook.run.primary.counted"] = _int(row.counted)
    h = run.headline
    run_attrs.update(
        {
            "evalbook.run.headline": h.text,
            "evalbook.run.n_cases": h.n_cases,
            "evalbook.run.epochs": h.epochs,
        }
    )
    if h.completion is not None:
        run_attrs["evalbook.run.completion"] = float(h.completion)

    by_sample: dict[tuple[str, int], list[Any]] = {}
    for rec in run.scores.itertuples(index=False):
        by_sample.setdefault((str(rec.case_id), _int(rec.epoch)), []).append(rec)
    samples: list[SpanPlan] = []
    not_run = 0
    r = run.results
    position = {(r.case_id_of(i), r.epoch_of(i)): i for i in range(r.n_samples)} if steps else {}
    for case in run.cases.itertuples(index=False):
        outcome = _text(case.outcome)
        if outcome is None:
            not_run += 1  # a sample that never ran: no span (nothing happened)
            continue
        case_id, epoch = str(case.case_id), _int(case.epoch)
        start = _ns(case.started_at)
        duration = _number(case.duration_s)
        end = start + round(duration * 1e9) if start is not None and duration is not None else None
        attrs: dict[str, Any] = {
            "evalbook.run.id": run.id,
            "evalbook.case.id": case_id,
            "evalbook.case.epoch": epoch,
            "evalbook.case.outcome": outcome,
            "evalbook.case.attempts": _int(case.attempts),
        }
        error = None
        if outcome in ("errored", "timed_out"):
            attrs["error.type"] = _text(case.error_type) or outcome
            error = _text(case.error_message) or outcome
        span = SpanPlan(start, end, attrs, error=error)
        if steps:
            transcript = run.results.transcript_of(position[(case_id, epoch)])
            if transcript is not None:
                span.children = _step_spans(transcript, start, case_id, epoch)
        for rec in by_sample.get((case_id, epoch), []):
            name = str(rec.score)
            counted = _number(rec.counted)
            if counted is not None:  # no counted value: left out, never sent as 0
                attrs[f"evalbook.case.score.{name}"] = counted
            attrs[f"evalbook.case.score_status.{name}"] = str(rec.status)
            span.events.append(_event(rec))
        samples.append(span)
    starts = [s.start_ns for s in samples if s.start_ns is not None]
    ends = [s.end_ns for s in samples if s.end_ns is not None]
    run_attrs["evalbook.run.samples"] = len(samples)
    run_attrs["evalbook.run.samples_not_run"] = not_run
    # no sample with a start (an import whose harness keeps none): when the run started, as
    # the store says it (the harness's own `created`, else now); its spans are zero-length
    first = min(starts) if starts else _ns(pd.Timestamp(first_started_at(run)))
    last = max([*ends, *starts]) if starts else first
    return Plan(gauges, not_sent, SpanPlan(first, last, run_attrs), samples, not_run)
