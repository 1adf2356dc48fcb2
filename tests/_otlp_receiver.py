"""A local OTLP/HTTP receiver for the OpenTelemetry export tests (127.0.0.1 only).

It accepts `POST /v1/metrics` and `POST /v1/traces`, decodes each protobuf body with the
collector's own request messages (`opentelemetry.proto.collector.{metrics,trace}.v1`) and
keeps what it decoded, so a test reads exactly what went over the wire. `refuse(status,
text)` makes it answer every request with that HTTP status instead (e.g. 500 or 400).
"""

from __future__ import annotations

import gzip
import threading
import zlib
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

__all__ = ["Gauge", "OtlpReceiver", "Span", "any_value", "attributes"]


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP `AnyValue` (str, bool, int, float, list or None)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return attributes(value.kvlist_value.values)
    return getattr(value, kind)


def attributes(pairs: Any) -> dict[str, Any]:
    """OTLP `KeyValue`s as a dict (a repeated key would be a bug: the last one is kept)."""
    out: dict[str, Any] = {}
    for kv in pairs:
        assert isinstance(kv, KeyValue)
        out[kv.key] = any_value(kv.value)
    return out


@dataclass
class Gauge:
    """One gauge data point as received."""

    name: str
    description: str
    unit: str
    value: float
    attributes: dict[str, Any]
    scope: str


@dataclass
class Span:
    """One span as received (ids as hex text, times in Unix nanoseconds)."""

    name: str
    trace_id: str
    span_id: str
    parent_span_id: str
    start: int
    end: int
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    status_code: int
    status_message: str
    resource: dict[str, Any] = field(default_factory=dict)


class OtlpReceiver:
    """An OTLP/HTTP receiver in a thread: `with OtlpReceiver() as rx: ... rx.url`."""

    def __init__(self) -> None:
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.traces: list[ExportTraceServiceRequest] = []
        self.requests: list[tuple[str, int]] = []  # (path, status answered)
        self._refusal: tuple[int, str, tuple[str, ...]] | None = None
        self._partial: tuple[int, str] | None = None
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """The base URL, e.g. `http://127.0.0.1:43125` (the exporter adds `/v1/...`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def refuse(
        self,
        status: int,
        text: str = "refused by the test receiver",
        paths: tuple[str, ...] = ("/v1/metrics", "/v1/traces"),
    ) -> None:
        """From now on, answer requests to `paths` with HTTP `status` and `text` as the body."""
        self._refusal = (status, text, paths)

    def reject_some(self, rejected: int, message: str) -> None:
        """From now on, answer 200 with an OTLP partial success: `rejected` points or spans."""
        self._partial = (rejected, message)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    # -- what was received, flattened -------------------------------------------------------

    def gauges(self) -> list[Gauge]:
        """Every gauge data point received, in order."""
        out: list[Gauge] = []
        for request in self.metrics:
            for rm in request.resource_metrics:
                for sm in rm.scope_metrics:
                    for metric in sm.metrics:
                        assert metric.WhichOneof("data") == "gauge", metric.name
                        for point in metric.gauge.data_points:
                            value = (
                                point.as_double
                                if point.WhichOneof("value") == "as_double"
                                else float(point.as_int)
                            )
                            out.append(
                                Gauge(
                                    metric.name,
                                    metric.description,
                                    metric.unit,
                                    value,
                                    attributes(point.attributes),
                                    sm.scope.name,
                                )
                            )
        return out

    def spans(self) -> list[Span]:
        """Every span received, in order."""
        out: list[Span] = []
        for request in self.traces:
            for rs in request.resource_spans:
                resource = attributes(rs.resource.attributes)
                for ss in rs.scope_spans:
                    for s in ss.spans:
                        out.append(
                            Span(
                                s.name,
                                s.trace_id.hex(),
                                s.span_id.hex(),
                                s.parent_span_id.hex(),
                                s.start_time_unix_nano,
                                s.end_time_unix_nano,
                                attributes(s.attributes),
                                [(e.name, attributes(e.attributes)) for e in s.events],
                                s.status.code,
                                s.status.message,
                                resource,
                            )
                        )
        return out

    # -- the HTTP side ----------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the tests read what was received, not a log

            def _answer(self, status: int, body: bytes, kind: str) -> None:
                with receiver._lock:
                    receiver.requests.append((self.path, status))
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                refusal = receiver._refusal
                if refusal is not None and self.path in refusal[2]:
                    status, text, _ = refusal
                    self._answer(status, text.encode(), "text/plain; charset=utf-8")
                    return
                request: Any
                response: Any
                if self.path == "/v1/metrics":
                    request, response = (
                        ExportMetricsServiceRequest(),
                        ExportMetricsServiceResponse(),
                    )
                    store: list[Any] = receiver.metrics
                elif self.path == "/v1/traces":
                    request, response = ExportTraceServiceRequest(), ExportTraceServiceResponse()
                    store = receiver.traces
                else:
                    self._answer(404, b"unknown path", "text/plain")
                    return
                request.ParseFromString(body)
                with receiver._lock:
                    store.append(request)
                if receiver._partial is not None:
                    rejected, message = receiver._partial
                    what = (
                        "rejected_data_points" if self.path == "/v1/metrics" else "rejected_spans"
                    )
                    setattr(response.partial_success, what, rejected)
                    response.partial_success.error_message = message
                self._answer(200, response.SerializeToString(), "application/x-protobuf")

        return Handler
