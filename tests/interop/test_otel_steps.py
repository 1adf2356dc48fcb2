"""export_otel(steps=True): one span per transcript step under its sample's span.

Against the local OTLP/HTTP receiver (tests/_otlp_receiver.py), with the GenAI semantic
conventions' names; off by default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import in_process
from _otlp_receiver import OtlpReceiver

pytest.importorskip("opentelemetry.sdk")


def _agent_run() -> eb.Run:
    def task(q: str, ctx: Any) -> str:
        ctx.step(role="user", content=f"{q} <script>")
        call = {"id": "t1", "function": {"name": "search", "arguments": "{}"}}
        ctx.step(role="assistant", tool_calls=[call], model="m-1", input_tokens=12,
                 output_tokens=3, latency_s=0.25, started_at=1_800_000_000.0)  # fmt: skip
        ctx.step(role="tool", tool_call_id="t1", content="secret text",
                 error="boom" if q == "b" else None, latency_s=0.5)  # fmt: skip
        return "done"

    data = pd.DataFrame({"id": ["a", "b"], "q": ["a", "b"]})
    score = eb.define_score("s", primary=True)
    return eb.run(data, task=task, scores=[score], scorers=[], progress=False)


def test_each_step_is_a_child_span_of_its_sample() -> None:
    run = _agent_run()
    with OtlpReceiver() as rx:
        sent = eb.export_otel(run, endpoint=rx.url, steps=True)
    spans = rx.spans()
    assert sent.spans == len(spans) == 1 + 2 + 2 * 3
    samples = {s.span_id: s for s in spans if "evalbook.case.outcome" in s.attributes}
    steps = [s for s in spans if "evalbook.step" in s.attributes]
    assert len(steps) == 6 and all(s.parent_span_id in samples for s in steps)
    chat = [s for s in steps if s.attributes.get("gen_ai.operation.name") == "chat"]
    tools = [s for s in steps if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert [s.name for s in chat] == ["chat m-1"] * 2
    assert [s.name for s in tools] == ["execute_tool search"] * 2
    assert all(s.attributes["gen_ai.usage.input_tokens"] == 12 for s in chat)
    assert all(s.attributes["gen_ai.request.model"] == "m-1" for s in chat)
    assert all(s.attributes["gen_ai.response.model"] == "m-1" for s in chat)
    assert all(s.attributes["gen_ai.tool.call.id"] == "t1" for s in tools)
    assert all(s.start == 1_800_000_000 * 10**9 for s in chat)
    assert all(s.end - s.start == 250_000_000 for s in chat)
    failed = [s for s in tools if s.status_message == "boom"]
    assert len(failed) == 1 and failed[0].attributes["error.type"] == "tool_error"
    # no message text leaves the machine
    text = repr([s.attributes for s in spans])
    assert "secret text" not in text and "<script>" not in text


def test_steps_are_off_by_default() -> None:
    run = _agent_run()
    with OtlpReceiver() as rx:
        sent = eb.export_otel(run, endpoint=rx.url)
    assert sent.spans == len(rx.spans()) == 3
    with pytest.raises(eb.ConfigurationError, match="steps must be True or False"):
        eb.export_otel(run, endpoint=rx.url, steps="yes")  # type: ignore[arg-type]


def test_an_imported_harbor_trajectory_is_sent_step_by_step() -> None:
    """The real ATIF files of tests/interop/fixtures/harbor/agent-job: one span per step."""
    run = eb.import_results(Path(__file__).parent / "fixtures" / "harbor" / "agent-job")
    with OtlpReceiver() as rx:
        sent = eb.export_otel(run, endpoint=rx.url, steps=True)
    spans = rx.spans()
    steps = run.steps()
    assert sent.spans == len(spans) == 1 + 2 + len(steps)
    tools = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert sorted(s.attributes["gen_ai.tool.call.id"] for s in tools) == ["call_0_1", "call_1_1"]
    assert {s.attributes["gen_ai.tool.name"] for s in tools} == {"bash_command"}
    chat = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chat) == (steps["role"] == "assistant").sum()
    assert {s.attributes["gen_ai.response.model"] for s in chat} == {"scripted-1"}
    assert (
        sum(s.attributes["gen_ai.usage.input_tokens"] for s in chat) == steps["input_tokens"].sum()
    )
    # a step starts at its ATIF timestamp; an observation (none of its own) where its step did
    want = []
    for case in ("fix-bug", "hello-world"):
        transcript = run.transcript(case)
        assert transcript is not None
        at = None
        for m in transcript.messages:
            at = round(m.started_at * 1e9) if m.started_at is not None else at
            want.append(at)
    starts = [s.start for s in spans if "evalbook.step" in s.attributes]
    assert sorted(starts) == sorted(want) and None not in want
    assert "<script>" not in repr([s.attributes for s in spans])


def test_cli_export_otlp_steps_sends_the_step_spans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evalbook export RUN --otlp URL --otlp-steps`: export_otel(steps=True)."""
    stored = eb.import_results(Path(__file__).parent / "fixtures" / "harbor" / "agent-job")
    path = stored.save(tmp_path / "runs")
    n_steps = len(stored.steps())
    with OtlpReceiver() as rx:
        code, out, err = in_process(capsys, "export", str(path), "--otlp", rx.url, "--otlp-steps")
        assert code == 0, err
        assert len(rx.spans()) == 1 + 2 + n_steps and f"{1 + 2 + n_steps} spans" in out
    with OtlpReceiver() as rx:
        code, out, err = in_process(capsys, "export", str(path), "--otlp", rx.url)
        assert code == 0 and len(rx.spans()) == 3  # off without the flag
    code, _, err = in_process(capsys, "export", str(path), "out.csv", "--otlp-steps")
    assert code == 2 and "--otlp-steps applies only with --otlp URL" in err
    assert not (tmp_path / "out.csv").exists()
