"""Export a run to OpenTelemetry: a gauge per score, a span per sample (docs/interop.md).

What is sent is planned from the run's tables first (`_otel_plan.plan_of`, no OpenTelemetry),
then made into SDK gauges and spans. Sent to an endpoint, it goes through providers made here for
this one export (never the global ones), and each batch goes to the SDK's OTLP/HTTP exporter
directly, so that its result is seen: the exporter logs and retries a refused export rather
than raising, and a refusal must be one clear error here. The run is only read.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from .._errors import ConfigurationError
from .._model._run_data import RunData
from .._util._text import visible
from .._version import __version__
from ._otel_plan import Plan, plan_of

if TYPE_CHECKING:  # optional extra: types only, never imported at run time here
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

__all__ = ["INSTALL", "OtelExport", "OtelExportError", "export_otel"]

INSTALL = 'pip install "evalbook[otel]"'
# spans per OTLP request: well under the exporter's 64 MiB request limit for usual runs
_SPAN_BATCH = 1000
# the receiver's answer quoted in an error, at most this many characters
_QUOTE = 300
_RUN_SPAN, _SAMPLE_SPAN = "evalbook.run", "evalbook.sample"
_EVENT = "gen_ai.evaluation.result"
# where the SDK's OTLP/HTTP exporters log a failed or retried export
_EXPORTER_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.common.http",
)


class OtelExportError(OSError):
    """The OTLP endpoint refused the export, or nothing answered there (the run is unchanged)."""


@dataclass(frozen=True)
class OtelExport:
    """What `export_otel` sent: the gauges with their values, how many spans, what was not sent.

    `not_sent` maps a score to why it has no gauge (e.g. no counted value: a mean of nothing is
    never sent as 0). `endpoint` is None when the caller's providers received it all.
    """

    run_id: str
    endpoint: str | None
    trace_id: str
    gauges: dict[str, float]
    spans: int
    samples: int
    samples_not_run: int = 0
    not_sent: dict[str, str] = field(default_factory=dict)

    @property
    def text(self) -> str:
        """One line: what was sent, and where."""
        n, k = len(self.gauges), self.samples
        what = [f"{n} gauge{'' if n == 1 else 's'}"] if n or not self.spans else []
        if self.spans:
            what.append(
                f"{self.spans} span{'' if self.spans == 1 else 's'} "
                f"(the run and {k} sample{'' if k == 1 else 's'})"
            )
        where = f"to {self.endpoint}" if self.endpoint else "to the given providers"
        line = f"sent {' and '.join(what)} {where}"
        if self.trace_id:
            line += f" · trace {self.trace_id}"
        if self.not_sent:
            why = ", ".join(f"{name} ({reason})" for name, reason in sorted(self.not_sent.items()))
            line += f" · no gauge for {why}"
        if self.samples_not_run:
            line += f" · {self.samples_not_run} sample(s) never ran: no span"
        return line

    def __str__(self) -> str:
        return self.text


# -- sending ------------------------------------------------------------------------------------


def _check_endpoint(endpoint: str) -> str:
    """The base URL, e.g. `http://127.0.0.1:4318` (the signal paths are added here)."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigurationError(
            f"endpoint {endpoint!r} is not an http(s) URL: give the OTLP/HTTP receiver's base "
            "URL, e.g. http://127.0.0.1:4318"
        )
    base = endpoint.rstrip("/")
    if base.endswith(("/v1/metrics", "/v1/traces")):
        raise ConfigurationError(
            f"endpoint {endpoint!r} names one signal's path: give the base URL "
            f"({base.rsplit('/v1/', 1)[0]}); /v1/metrics and /v1/traces are added to it"
        )
    return base


def _cause(exc: BaseException) -> str:
    """The innermost readable reason of a connection error (e.g. 'Connection refused')."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    found = f"{type(exc).__name__}"
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.strerror:
            found = e.strerror
        nested = [getattr(e, "reason", None), e.__cause__, e.__context__, *e.args[:1]]
        todo.extend(n for n in nested if isinstance(n, BaseException))
    return found


class _Wire:
    """Wraps a `requests.Session`: records what the receiver answered (or why nothing did)."""

    def __init__(self, session: Any) -> None:
        self.session = session
        self.answers: list[str] = []
        self.accepted: list[bytes] = []  # bodies of the answers that accepted a request
        send: Callable[..., Any] = session.request

        def request(*args: Any, **kwargs: Any) -> Any:
            try:
                response = send(*args, **kwargs)
            except Exception as exc:
                spent = kwargs.get("timeout") is not None and kwargs["timeout"] <= 0
                if not spent:  # a call with no time left says nothing of the receiver
                    self.answers.append(f"nothing answered ({_cause(exc)})")
                raise
            if not 200 <= response.status_code < 400:
                body = visible(" ".join(str(response.text or "").split()))
                body = body[:_QUOTE] + ("…" if len(body) > _QUOTE else "")
                said = f"HTTP {response.status_code} {response.reason or ''}".rstrip()
                self.answers.append(said + (f": {body}" if body else ""))
            else:
                self.accepted.append(bytes(response.content or b""))
            return response

        session.request = request


def _rejected(wire: _Wire, response: Any, what: str) -> str | None:
    """What a receiver that answered 2xx still rejected (OTLP partial success), else None."""
    bodies, wire.accepted = wire.accepted, []
    for body in bodies:
        answer = response()
        try:
            answer.ParseFromString(body)
        except Exception:  # not an OTLP answer (an empty body is a valid one): nothing to read
            continue
        partial = answer.partial_success
        rejected = int(getattr(partial, f"rejected_{what}"))
        if rejected:  # a message alone is a warning (OTLP), the data was accepted
            said = visible(" ".join(partial.error_message.split()))[:_QUOTE]
            return f"the receiver rejected {rejected} {what.replace('_', ' ')}" + (
                f": {said}" if said else ""
            )
    return None


def _refused(
    url: str, wire: _Wire, timeout: float, sent: str, rejected: str | None = None
) -> OtelExportError:
    said = rejected or (wire.answers[-1] if wire.answers else "the exporter refused the batch")
    tries = len(wire.answers)
    within = f" (tried {tries} times within the {timeout:g} s timeout)" if tries > 1 else ""
    hint = ""
    if said.startswith("nothing answered"):
        hint = " Is an OTLP/HTTP receiver (e.g. an OpenTelemetry Collector) listening there?"
    return OtelExportError(
        f"OpenTelemetry export to {url} failed: {said}{within}.{hint} {sent}; the run is unchanged."
    )


class _Quiet(logging.Filter):
    """Drops this thread's records of the OTLP exporters: their failure is raised instead.

    Records of other threads (the caller's own exporters, say) pass untouched.
    """

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in _EXPORTER_LOGGERS]
    only = _Quiet()
    for log in loggers:
        log.addFilter(only)
    try:
        yield
    finally:
        for log in loggers:
            log.removeFilter(only)


def _emit(plan: Plan, meter_provider: Any, tracer_provider: Any) -> str:
    """Make the plan's gauges and spans with the providers; the trace id (hex) or ''."""
    from opentelemetry import trace  # optional extra: imported where it is used

    if meter_provider is not None:
        meter = meter_provider.get_meter("evalbook", __version__)
        for name, description, value, attrs in plan.gauges:
            meter.create_gauge(name, unit="1", description=description).set(value, attrs)
    if tracer_provider is None:
        return ""
    tracer = tracer_provider.get_tracer("evalbook", __version__)
    now = time.time_ns()
    start = plan.run.start_ns if plan.run.start_ns is not None else now
    end = plan.run.end_ns if plan.run.end_ns is not None else start
    root = tracer.start_span(_RUN_SPAN, attributes=plan.run.attributes, start_time=start)
    parent = trace.set_span_in_context(root)
    for s in plan.samples:
        s_start = s.start_ns if s.start_ns is not None else start
        s_end = s.end_ns if s.end_ns is not None else s_start
        span = tracer.start_span(
            _SAMPLE_SPAN, context=parent, attributes=s.attributes, start_time=s_start
        )
        for event in s.events:
            span.add_event(_EVENT, attributes=event, timestamp=s_end)
        if s.error is not None:
            span.set_status(trace.Status(trace.StatusCode.ERROR, s.error))
        inside = trace.set_span_in_context(span)
        for c in s.children:  # the sample's steps (steps=True)
            c_start = c.start_ns if c.start_ns is not None else s_start
            c_end = c.end_ns if c.end_ns is not None else c_start
            step = tracer.start_span(
                c.name or "step", context=inside, attributes=c.attributes, start_time=c_start
            )
            if c.error is not None:
                step.set_status(trace.Status(trace.StatusCode.ERROR, c.error))
            step.end(end_time=c_end)
        span.end(end_time=s_end)
    root.end(end_time=max(end, start))
    return format(root.get_span_context().trace_id, "032x")


def _send(plan: Plan, base: str, timeout: float) -> str:
    """Through providers made here to the OTLP/HTTP exporters, checking each export's result."""
    import requests  # the exporter's own HTTP client (otel extra)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceResponse,
    )
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceResponse,
    )
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
    from opentelemetry.sdk.resources import OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import SpanLimits
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.sdk.trace.sampling import ALWAYS_ON

    # service.name evalbook unless OTEL_SERVICE_NAME / OTEL_RESOURCE_ATTRIBUTES say otherwise
    resource = Resource.create({"service.name": "evalbook"}).merge(OTELResourceDetector().detect())
    reader = InMemoryMetricReader()
    meters = SdkMeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)
    # every score's attribute and event kept (the SDK's default limit is 128 of each)
    widest = max([len(s.attributes) for s in plan.samples] + [len(plan.run.attributes), 128])
    most = max([len(s.events) for s in plan.samples] + [128])
    limits = SpanLimits(max_span_attributes=widest, max_events=most, max_event_attributes=128)
    spans = InMemorySpanExporter()
    tracers = SdkTracerProvider(
        sampler=ALWAYS_ON, resource=resource, span_limits=limits, shutdown_on_exit=False
    )
    tracers.add_span_processor(SimpleSpanProcessor(spans))
    wires = [_Wire(requests.Session()), _Wire(requests.Session())]
    metric_url, trace_url = f"{base}/v1/metrics", f"{base}/v1/traces"
    metric_exporter = OTLPMetricExporter(
        endpoint=metric_url, timeout=timeout, session=wires[0].session
    )
    span_exporter = OTLPSpanExporter(endpoint=trace_url, timeout=timeout, session=wires[1].session)
    with _quiet():
        try:
            trace_id = _emit(plan, meters, tracers)
            data = reader.get_metrics_data()
            if plan.gauges and data is not None:
                ok = metric_exporter.export(data, timeout_millis=timeout * 1000)
                said = _rejected(wires[0], ExportMetricsServiceResponse, "data_points")
                if ok is not MetricExportResult.SUCCESS or said is not None:
                    raise _refused(metric_url, wires[0], timeout, "Nothing was sent", said)
            finished = spans.get_finished_spans()
            for i in range(0, len(finished), _SPAN_BATCH):
                done = span_exporter.export(finished[i : i + _SPAN_BATCH])
                said = _rejected(wires[1], ExportTraceServiceResponse, "spans")
                if done is not SpanExportResult.SUCCESS or said is not None:
                    gauges = f"The {len(plan.gauges)} gauges and " if plan.gauges else ""
                    sent = f"{gauges}{i} of {len(finished)} spans were sent"
                    raise _refused(trace_url, wires[1], timeout, sent, said)
        finally:
            meters.shutdown()
            tracers.shutdown()
            for exporter in (metric_exporter, span_exporter):
                cast(Any, exporter).shutdown()  # untyped in the SDK
    return trace_id


def export_otel(
    run: RunData,
    *,
    endpoint: str | None = None,
    meter_provider: MeterProvider | None = None,
    tracer_provider: TracerProvider | None = None,
    timeout: float = 5.0,
    steps: bool = False,
) -> OtelExport:
    """Send a run to OpenTelemetry: gauges `evalbook.score.<name>`, a span per sample.

    With no provider, everything goes by OTLP/HTTP to `endpoint` (a base URL such as
    `http://127.0.0.1:4318`) through providers made for this export, never the global ones;
    a refusal, or nothing answering within `timeout` seconds (retries included), raises
    `OtelExportError` (an `OSError`). Given `meter_provider` and/or `tracer_provider`, those
    receive the gauges and/or spans and are flushed, not shut down. With `steps=True`, each
    sample's transcript steps are child spans of its span (GenAI semantic conventions'
    `gen_ai.operation.name` "chat" / "execute_tool", tool names and call ids, models, tokens;
    never message text); off by default, for size. Names: docs/interop.md.

    Example:
        >>> import pandas as pd
        >>> import evalbook as eb
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import InMemoryMetricReader
        >>> def correct(output, expected):
        ...     return float(output == expected)
        >>> data = pd.DataFrame({"q": ["a", "b"], "expected": ["a", "c"]})
        >>> run = eb.run(data, lambda q: q, scorers=[correct], store=None, progress=False)
        >>> reader = InMemoryMetricReader()
        >>> export_otel(run, meter_provider=MeterProvider(metric_readers=[reader])).gauges
        {'evalbook.score.correct': 0.5}
    """
    try:
        import opentelemetry.sdk  # noqa: F401  # optional extra: only this export needs it
    except ImportError as exc:
        raise ImportError(f"export_otel needs OpenTelemetry: {INSTALL}") from exc
    if not isinstance(run, RunData):
        raise ConfigurationError(
            f"export_otel takes a run (from eb.run or eb.load_run), not {type(run).__name__}"
            + (": for a stored run, pass eb.load_run(path)" if isinstance(run, str) else "")
        )
    if not isinstance(timeout, int | float) or isinstance(timeout, bool):
        raise ConfigurationError(f"timeout must be a number of seconds, not {timeout!r}")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ConfigurationError(f"timeout must be a positive number of seconds, not {timeout!r}")
    if meter_provider is None and tracer_provider is None and endpoint is None:
        raise ConfigurationError(
            "export_otel needs endpoint= (an OTLP/HTTP receiver's base URL, e.g. "
            "http://127.0.0.1:4318) or meter_provider= / tracer_provider="
        )
    providers = meter_provider is not None or tracer_provider is not None
    if providers and endpoint is not None:
        raise ConfigurationError(
            "give endpoint= or providers, not both: with providers, their own exporters "
            "decide where the data goes"
        )
    base = _check_endpoint(endpoint) if endpoint is not None else None
    if not isinstance(steps, bool):
        raise ConfigurationError(f"steps must be True or False, not {steps!r}")
    plan = plan_of(run, steps)
    if base is not None:
        trace_id = _send(plan, base, float(timeout))
    else:
        trace_id = _emit(plan, meter_provider, tracer_provider)
        for provider in (meter_provider, tracer_provider):
            flush = getattr(provider, "force_flush", None)
            if flush is not None and flush(int(timeout * 1000)) is False:
                raise OtelExportError(
                    f"{type(provider).__name__}.force_flush did not finish within {timeout:g} s "
                    "(see its exporter's log)"
                )
    metrics = base is not None or meter_provider is not None
    traced = base is not None or tracer_provider is not None
    return OtelExport(
        run_id=run.id,
        endpoint=base,
        trace_id=trace_id,
        gauges={name: value for name, _, value, _ in plan.gauges} if metrics else {},
        spans=1 + len(plan.samples) + sum(len(s.children) for s in plan.samples) if traced else 0,
        samples=len(plan.samples) if traced else 0,
        samples_not_run=plan.not_run,
        not_sent=plan.not_sent,
    )
