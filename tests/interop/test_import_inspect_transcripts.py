"""Inspect AI logs import with their transcripts: the samples' messages, never flattened.

On a real log (tests/interop/fixtures/inspect/agent.eval, see its README): the steps and tool
calls are the file's messages, counted by Inspect's own reader.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import evalbook as eb

inspect_log = pytest.importorskip("inspect_ai.log")

AGENT = Path(__file__).parent / "fixtures" / "inspect" / "agent.eval"
TINY = Path(__file__).parent / "fixtures" / "inspect" / "tiny.eval"


def test_the_steps_are_the_files_messages() -> None:
    run = eb.import_results(AGENT)
    log = inspect_log.read_eval_log(str(AGENT))
    assert log.samples is not None
    steps = run.steps()
    for sample in log.samples:
        mine = steps[steps["case_id"] == str(sample.id)]
        assert list(mine["role"]) == [m.role for m in sample.messages]
        assert list(mine["content"]) == [m.text for m in sample.messages]
    calls = run.tool_calls()
    in_file = [c for s in log.samples for m in s.messages if m.role == "assistant"
               for c in m.tool_calls or ()]  # fmt: skip
    assert list(calls["call_id"]) == [c.id for c in in_file]
    assert list(calls["tool_name"]) == [c.function for c in in_file]
    errors = [m.error.message for s in log.samples for m in s.messages
              if m.role == "tool" and m.error is not None]  # fmt: skip
    assert errors == ["the lookup service is down"]
    assert calls.loc[~calls["ok"], "error"].tolist() == errors
    assert run.cases["n_tool_errors"].tolist() == [0, 0, 1]
    # the model events' usage is on the assistant steps; hostile text is kept as data
    assert steps.loc[steps["role"] == "assistant", "input_tokens"].tolist() == [10, 30, 50] * 3
    assert "value of a <script>" in set(steps["content"])


def test_a_stored_import_keeps_its_transcripts(tmp_path: Path) -> None:
    run = eb.import_results(AGENT)
    loaded = eb.load_run(run.save(tmp_path))
    assert loaded.steps().equals(run.steps())
    assert loaded.tool_calls().equals(run.tool_calls())


def test_a_log_without_tools_has_each_samples_messages() -> None:
    run = eb.import_results(TINY)
    log = inspect_log.read_eval_log(str(TINY))
    assert log.samples is not None
    assert int(run.cases["n_steps"].sum()) == sum(len(s.messages) for s in log.samples)
    assert len(run.tool_calls()) == 0


def test_messages_that_are_no_transcript_import_without_one(tmp_path: Path) -> None:
    from inspect_ai.model import ChatMessageTool

    log = inspect_log.read_eval_log(str(AGENT))
    assert log.samples is not None
    # a tool result answering a call nobody made (a log edited by hand)
    log.samples[0].messages.insert(1, ChatMessageTool(content="?", tool_call_id="nobody"))
    edited = tmp_path / "edited.eval"
    inspect_log.write_eval_log(log, str(edited))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.import_results(edited)
    said = [str(w.message) for w in caught if "not a transcript" in str(w.message)]
    assert len(said) == 1 and "'a'" in said[0] and "nobody" in said[0]
    assert said[0].startswith(str(edited))  # the file, then the sample
    assert set(run.steps()["case_id"].astype(str)) == {"b", "c"}
    assert run.cases["outcome"].tolist() == ["passed"] * 3  # the rest of the sample imports


def test_an_event_without_working_time_lasts_from_its_start_to_its_completion(
    tmp_path: Path,
) -> None:
    log = inspect_log.read_eval_log(str(AGENT))
    assert log.samples is not None
    took = []
    for sample in log.samples:
        for event in sample.events:
            if event.event in ("model", "tool"):
                event.working_time = None
                took.append((event.completed - event.timestamp).total_seconds())
    edited = tmp_path / "no-working-time.eval"
    inspect_log.write_eval_log(log, str(edited))
    steps = eb.import_results(edited).steps()
    timed = steps[steps["role"].isin(["assistant", "tool"])]
    # within what a float of Unix seconds holds (a microsecond)
    assert timed["latency_s"].tolist() == pytest.approx(took, abs=1e-5)
    assert eb.import_results(AGENT).steps()["latency_s"].notna().sum() == len(took)
