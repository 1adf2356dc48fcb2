"""eb.export_otel and `evalbook export RUN --otlp URL` (docs/interop.md, OpenTelemetry).

Against a local OTLP/HTTP receiver (tests/_otlp_receiver.py: it decodes the protobuf payload
with opentelemetry-proto, so these tests read what went over the wire) and with the SDK's
in-memory reader and exporter.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import sys
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import evalbook as eb
from _cli_helpers import assert_user_error, cli, in_process
from _otlp_receiver import OtlpReceiver, Span
from _strategies import runs
from evalbook import ConfigurationError, export_otel

# text a backend must show as data: markup, ANSI escapes, control characters, other scripts
HOSTILE = [
    "<script>alert(1)</script>",
    "a\x1b[31mred\x1b[0m",
    "tab\there\nnewline",
    "nul\x00bell\x07",
    "读法自然 \u202eevil",
    "plain",
]
RUN_NAME = "<script>alert('run')</script>"


@contextmanager
def export_error() -> Iterator[pytest.ExceptionInfo[OSError]]:
    """The `OtelExportError` (an `OSError`, docs/interop.md) an export raises, told by its name."""
    with pytest.raises(OSError) as caught:
        yield caught
    assert type(caught.value).__name__ == "OtelExportError", caught.value


def _run(store: Any = None, epochs: int = 2) -> eb.Run:
    """Hostile case ids; a primary score, a never-scored one, an invalid value, an errored case."""
    data = pd.DataFrame({"id": HOSTILE, "q": range(len(HOSTILE))})
    correct = eb.define_score("qa.correct", label="Correct <b>&amp;</b>", primary=True)
    never = eb.define_score("qa.never", label="Never scored")
    judged = eb.define_score("qa.judged", label="Judged\x07")

    @eb.scorer(correct, never, judged)
    def score(output: Any, q: int) -> dict[Any, Any]:
        return {
            correct: eb.Score(float(q % 2 == 0), rationale=f"why <{q}>", label="pass"),
            never: eb.Unscored("not_applicable"),
            judged: 0.25 if q != 1 else "high",  # "high" -> an invalid_score record
        }

    def task(q: int) -> str:
        if q == 3:
            raise RuntimeError("boom <b>")
        return str(q)

    return eb.run(
        data,
        task,
        scorers=[score],
        # a stored run's name names its folder: markup only in a run kept in memory
        name=RUN_NAME if store is None else "hostile-ids",
        store=store,
        progress=False,
        epochs=epochs,
    )


def _samples(spans: list[Span]) -> tuple[Span, list[Span]]:
    runs = [s for s in spans if s.name == "evalbook.run"]
    assert len(runs) == 1, [s.name for s in spans]
    return runs[0], [s for s in spans if s.name == "evalbook.sample"]


def _check_spans(run: eb.Run, spans: list[Span]) -> None:
    """One span per sample, children of the run span, attributes equal to the run's tables."""
    root, samples = _samples(spans)
    cases = run.cases
    assert len(samples) == len(cases) == len(spans) - 1
    assert all(s.parent_span_id == root.span_id for s in samples)
    assert all(s.trace_id == root.trace_id for s in samples)
    scores = run.scores
    by_key = {
        (s.attributes["evalbook.case.id"], s.attributes["evalbook.case.epoch"]): s for s in samples
    }
    assert set(by_key) == {
        (str(c), int(e)) for c, e in zip(cases.case_id, cases.epoch, strict=True)
    }
    for case in cases.itertuples(index=False):
        span = by_key[(case.case_id, int(case.epoch))]
        assert span.attributes["evalbook.case.outcome"] == case.outcome
        assert span.start == case.started_at.value
        assert span.end == case.started_at.value + round(case.duration_s * 1e9)
        assert (span.status_code == 2) == (case.outcome == "errored")  # 2: STATUS_CODE_ERROR
        rows = scores[(scores.case_id == case.case_id) & (scores.epoch == case.epoch)]
        for rec in rows.itertuples(index=False):
            key = f"evalbook.case.score.{rec.score}"
            if math.isnan(rec.counted):
                assert key not in span.attributes  # never sent as 0
            else:
                assert span.attributes[key] == rec.counted
            assert span.attributes[f"evalbook.case.score_status.{rec.score}"] == rec.status
        events = [e for name, e in span.events if name == "gen_ai.evaluation.result"]
        assert [e["gen_ai.evaluation.name"] for e in events] == list(rows.score)
        for event, rec in zip(events, rows.itertuples(index=False), strict=True):
            if rec.status == "scored":
                assert event["gen_ai.evaluation.score.value"] == rec.value
            else:
                assert "gen_ai.evaluation.score.value" not in event
            if rec.status == "error":
                assert event["error.type"] == rec.reason


def _check_run_span(run: eb.Run, root: Span) -> None:
    primary = run.summary().set_index("score").loc["qa.correct"]
    assert root.attributes["evalbook.run.name"] == run.name
    assert root.attributes["evalbook.run.id"] == run.id
    assert root.attributes["evalbook.run.primary.name"] == "qa.correct"
    assert root.attributes["evalbook.run.primary.mean"] == primary["mean"]
    assert root.attributes["evalbook.run.primary.ci_low"] == primary["ci_low"]
    assert root.attributes["evalbook.run.primary.counted"] == primary["counted"]
    assert root.attributes["evalbook.run.headline"] == run.headline.text


def test_gauges_are_the_summary_means_with_the_run_attributes() -> None:
    run = _run()
    with OtlpReceiver() as rx:
        sent = export_otel(run, endpoint=rx.url)
    summary = run.summary().set_index("score")
    gauges = {g.name: g for g in rx.gauges()}
    # qa.never has no counted value: no gauge (never a 0)
    assert set(gauges) == {"evalbook.score.qa.correct", "evalbook.score.qa.judged"}
    assert sent.not_sent == {"qa.never": "no counted value"}
    for name, g in gauges.items():
        score = name.removeprefix("evalbook.score.")
        assert g.value == summary.loc[score, "mean"]
        assert g.description == summary.loc[score, "label"]
        assert g.unit == "1"
        assert g.attributes == {
            "evalbook.run.name": RUN_NAME,
            "evalbook.run.id": run.id,
            "evalbook.score.primary": score == "qa.correct",
        }
    assert sent.gauges == {name: g.value for name, g in gauges.items()}


def test_a_span_per_sample_under_the_run_span_with_the_primary_score() -> None:
    run = _run()
    with OtlpReceiver() as rx:
        sent = export_otel(run, endpoint=rx.url)
    spans = rx.spans()
    _check_spans(run, spans)
    root, samples = _samples(spans)
    _check_run_span(run, root)
    assert sent.trace_id == root.trace_id
    assert sent.spans == len(spans) == 1 + len(HOSTILE) * 2
    assert root.resource["service.name"] == "evalbook"
    assert "127.0.0.1" in sent.text and f"{sent.spans} spans" in sent.text
    errored = [s for s in samples if s.attributes["evalbook.case.outcome"] == "errored"]
    assert errored and all(s.attributes["error.type"] == "RuntimeError" for s in errored)
    assert all(s.status_message == "boom <b>" for s in errored)


def test_hostile_text_arrives_as_data(record_property: Any) -> None:
    run = _run()
    with OtlpReceiver() as rx:
        export_otel(run, endpoint=rx.url)
    root, samples = _samples(rx.spans())
    received = {s.attributes["evalbook.case.id"] for s in samples}
    texts = [*HOSTILE, RUN_NAME]
    changed = len(set(HOSTILE) ^ received) + (root.attributes["evalbook.run.name"] != RUN_NAME)
    labels = {g.description for g in rx.gauges()}
    changed += "Correct <b>&amp;</b>" not in labels
    figure = f"hostile texts: {len(texts) + 1} sent, {changed} arrived different"
    print(figure)
    record_property("hostile_text", figure)
    assert changed == 0


def test_the_in_memory_reader_and_exporter_get_the_same() -> None:
    run = _run()
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    sent = export_otel(run, meter_provider=meters, tracer_provider=tracers)
    data = reader.get_metrics_data()
    assert data is not None
    points = {
        m.name: p
        for rm in data.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
        for p in m.data.data_points
    }
    summary = run.summary().set_index("score")
    assert {n: p.value for n, p in points.items()} == {
        f"evalbook.score.{s}": summary.loc[s, "mean"] for s in ("qa.correct", "qa.judged")
    }
    assert dict(points["evalbook.score.qa.correct"].attributes)["evalbook.score.primary"] is True
    finished = exporter.get_finished_spans()
    spans = [
        Span(
            s.name,
            format(s.context.trace_id, "032x"),
            format(s.context.span_id, "016x"),
            format(s.parent.span_id, "016x") if s.parent else "",
            s.start_time or 0,
            s.end_time or 0,
            dict(s.attributes or {}),
            [(e.name, dict(e.attributes or {})) for e in s.events],
            {"UNSET": 0, "OK": 1, "ERROR": 2}[s.status.status_code.name],
            s.status.description or "",
        )
        for s in finished
    ]
    _check_spans(run, spans)
    _check_run_span(run, _samples(spans)[0])
    assert sent.endpoint is None and sent.spans == len(finished)
    # the caller's providers are flushed, not shut down: a second export still lands
    export_otel(run, tracer_provider=tracers)
    assert len(exporter.get_finished_spans()) == 2 * len(finished)


def test_only_the_given_signal_is_sent() -> None:
    run = _run(epochs=1)
    reader = InMemoryMetricReader()
    sent = export_otel(run, meter_provider=MeterProvider(metric_readers=[reader]))
    assert sent.spans == 0 and sent.trace_id == "" and len(sent.gauges) == 2
    assert sent.text == (
        "sent 2 gauges to the given providers · no gauge for qa.never (no counted value)"
    )


def test_the_global_providers_are_never_touched() -> None:
    before = (trace.get_tracer_provider(), metrics.get_meter_provider())
    with OtlpReceiver() as rx:
        export_otel(_run(epochs=1), endpoint=rx.url)
    assert (trace.get_tracer_provider(), metrics.get_meter_provider()) == before


def _files(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("status", [500, 400])
def test_a_refusing_endpoint_is_one_clear_error_and_the_run_is_untouched(
    tmp_path: Path, status: int
) -> None:
    run = _run(store=tmp_path / "runs")
    assert run.path is not None
    files, scores = _files(run.path), run.scores.copy()
    with OtlpReceiver() as rx:
        rx.refuse(status, "no such tenant <b>\x1b[31m")
        with export_error() as caught:
            export_otel(run, endpoint=rx.url, timeout=2)
        assert rx.requests == [("/v1/metrics", status)]  # not retried; the spans not tried
    message = str(caught.value)
    assert f"{rx.url}/v1/metrics" in message and f"HTTP {status}" in message
    assert "no such tenant <b>\\x1b[31m" in message  # what it said, its escapes shown
    assert "Nothing was sent" in message and "\n" not in message
    assert _files(run.path) == files
    pd.testing.assert_frame_equal(run.scores, scores)


def test_a_refusal_of_the_spans_says_the_gauges_were_sent() -> None:
    run = _run(epochs=1)
    with OtlpReceiver() as rx:
        rx.refuse(500, "traces are off", paths=("/v1/traces",))
        with export_error() as caught:
            export_otel(run, endpoint=rx.url, timeout=2)
    message = str(caught.value)
    assert (
        f"{rx.url}/v1/traces" in message and "HTTP 500" in message and "traces are off" in message
    )
    n = 1 + len(HOSTILE)
    assert f"The 2 gauges and 0 of {n} spans were sent" in message
    assert len(rx.metrics) == 1 and rx.traces == []


def test_a_receiver_that_rejects_part_of_it_is_an_error() -> None:
    run = _run(epochs=1)
    with OtlpReceiver() as rx:
        rx.reject_some(2, "data points too old")
        with export_error() as caught:
            export_otel(run, endpoint=rx.url)
    message = str(caught.value)
    assert "/v1/metrics" in message and "Nothing was sent" in message
    assert "the receiver rejected 2 data points: data points too old" in message


def test_a_score_too_long_for_a_gauge_name_is_said_not_sent() -> None:
    long = eb.define_score("s" * 250)
    data = pd.DataFrame({"q": ["a", "b"]})
    run = eb.run(data, lambda q: q, scorers=[eb.scorer(long)(lambda: 1.0)], store=None)
    reader = InMemoryMetricReader()
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    sent = export_otel(
        run, meter_provider=MeterProvider(metric_readers=[reader]), tracer_provider=tracers
    )
    assert sent.gauges == {} and "longer than OpenTelemetry allows" in sent.not_sent[long.name]
    samples = [s for s in exporter.get_finished_spans() if s.name == "evalbook.sample"]
    assert [dict(s.attributes or {})[f"evalbook.case.score.{long.name}"] for s in samples] == [
        1.0,
        1.0,
    ]


def _free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_dead_port_fails_with_a_clear_error_within_the_timeout(record_property: Any) -> None:
    run = _run(epochs=1)
    url = f"http://127.0.0.1:{_free_port()}"
    began = time.monotonic()
    with export_error() as caught:
        export_otel(run, endpoint=url, timeout=1)
    took = time.monotonic() - began
    figure = f"dead port, timeout=1: raised after {took:.2f} s"
    print(figure)
    record_property("dead_port", figure)
    message = str(caught.value)
    assert f"{url}/v1/metrics" in message and "nothing answered" in message
    assert "Connection refused" in message and "listening there?" in message
    assert isinstance(caught.value, OSError)


@pytest.mark.parametrize(
    ("endpoint", "fragment"),
    [
        ("127.0.0.1:4318", "is not an http(s) URL"),
        ("ftp://127.0.0.1:4318", "is not an http(s) URL"),
        ("http://127.0.0.1:4318/v1/traces", "give the base URL (http://127.0.0.1:4318)"),
    ],
)
def test_an_endpoint_that_is_not_a_base_url_is_a_configuration_error(
    endpoint: str, fragment: str
) -> None:
    with pytest.raises(ConfigurationError, match=re.escape(fragment)):
        export_otel(_run(epochs=1), endpoint=endpoint)


@pytest.mark.parametrize("timeout", [0, -1, math.nan, math.inf, True, "5"])
def test_a_timeout_that_is_not_a_positive_number_is_refused(timeout: Any) -> None:
    with pytest.raises(ConfigurationError, match="timeout must be"):
        export_otel(_run(epochs=1), endpoint="http://127.0.0.1:4318", timeout=timeout)


def test_nowhere_to_send_and_both_ways_are_configuration_errors() -> None:
    run = _run(epochs=1)
    with pytest.raises(ConfigurationError, match="needs endpoint="):
        export_otel(run)
    with pytest.raises(ConfigurationError, match="not both"):
        export_otel(run, endpoint="http://127.0.0.1:4318", tracer_provider=TracerProvider())


def test_without_the_extra_one_import_error_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)  # as if not installed
    with pytest.raises(ImportError, match=re.escape('pip install "evalbook[otel]"')):
        export_otel(_run(epochs=1), endpoint="http://127.0.0.1:4318")


# -- the contract, as a property: counted values only, never a 0 for nothing -----------------


@settings(max_examples=60, deadline=None)
@given(run=runs(texts=st.text(max_size=8)))
def test_span_scores_are_exactly_the_counted_values(run: Any) -> None:
    definitions, results = run
    frame = pd.DataFrame(index=range(results.n_cases))
    data = eb.Run(name="r", id="i", definitions=definitions, data=frame, results=results)
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    sent = export_otel(
        data, tracer_provider=tracers, meter_provider=MeterProvider(metric_readers=[reader])
    )
    summary = data.summary()
    means = {f"evalbook.score.{s}": m for s, m in zip(summary.score, summary["mean"], strict=True)}
    assert sent.gauges == {k: v for k, v in means.items() if not math.isnan(v)}
    samples = [s for s in exporter.get_finished_spans() if s.name == "evalbook.sample"]
    ran = data.cases[data.cases.outcome.notna()]
    assert len(samples) == len(ran) and sent.samples_not_run == len(data.cases) - len(ran)
    counted = {
        (str(r.case_id), int(r.epoch), str(r.score)): r.counted
        for r in data.scores.itertuples(index=False)
    }
    for span in samples:
        attrs = dict(span.attributes or {})
        key = (attrs["evalbook.case.id"], attrs["evalbook.case.epoch"])
        for d in definitions:
            value = counted[(*key, d.name)]
            sent_value = attrs.get(f"evalbook.case.score.{d.name}")
            assert sent_value == value if not math.isnan(value) else sent_value is None


# -- the CLI -------------------------------------------------------------------------------------


def test_cli_export_otlp_sends_and_prints_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(store=tmp_path / "runs", epochs=1)
    with OtlpReceiver() as rx:
        code, out, err = in_process(
            capsys, "export", str(run.path), "--otlp", rx.url, "--store", str(tmp_path / "runs")
        )
    assert code == 0, err
    assert out.count("\n") == 1 and out.startswith("sent 2 gauges and 7 spans")
    assert rx.url in out and "qa.never" in out
    _check_spans(run, rx.spans())


def test_cli_export_otlp_refused_is_exit_2_and_one_line(tmp_path: Path) -> None:
    run = _run(store=tmp_path / "runs", epochs=1)
    with OtlpReceiver() as rx:
        rx.refuse(500, "collector is down")
        proc = cli("export", str(run.path), "--otlp", rx.url, cwd=tmp_path)
    assert_user_error(proc, "evalbook export: error:", "HTTP 500", "collector is down", rx.url)
    dead = cli(
        "export",
        str(run.path),
        "--otlp",
        f"http://127.0.0.1:{_free_port()}",
        "--otlp-timeout",
        "1",
        cwd=tmp_path,
    )
    assert_user_error(dead, "nothing answered", "Connection refused")


def test_cli_export_needs_a_path_or_otlp_not_both(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(store=tmp_path / "runs", epochs=1)
    code, _, err = in_process(capsys, "export", str(run.path))
    assert code == 2
    assert err.strip() == (
        "evalbook export: error: the following arguments are required: PATH "
        "(see 'evalbook export --help')"
    )
    code, _, err = in_process(
        capsys, "export", str(run.path), "out.csv", "--otlp", "http://127.0.0.1:4318"
    )
    assert code == 2 and "not both" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out.csv").exists()
    code, _, err = in_process(
        capsys, "export", str(run.path), "--table", "cases", "--otlp", "http://127.0.0.1:4318"
    )
    assert code == 2 and "--table cases does not apply with --otlp" in err
    assert len(err.strip().splitlines()) == 1
    code, _, _ = in_process(capsys, "export", str(run.path), "out.csv")
    assert code == 0 and (tmp_path / "out.csv").is_file()  # the table export is unchanged


def test_a_run_without_sample_times_is_spans_of_zero_length_at_the_harness_s_own_time() -> None:
    """lm-eval's files carry no per-sample time: every span starts and ends when the harness
    says the eval ran (its `date`), not when the export happens (docs/interop.md)."""
    folder = Path(__file__).parent / "fixtures" / "lm-eval" / "out"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what the fixture skips is tested in its own file
        run = eb.import_results(folder)
    [results] = folder.glob("*/results_*.json")
    date_ns = round(json.loads(results.read_text())["date"] * 1e9)
    exporter = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(exporter))
    export_otel(run, tracer_provider=tracers)
    finished = exporter.get_finished_spans()
    assert len(finished) == 1 + int(run.cases.outcome.notna().sum())
    for span in finished:
        assert span.start_time is not None and abs(span.start_time - date_ns) < 1_000_000
        assert span.end_time == span.start_time
