"""The quick reading of Inspect AI logs (issue 31): samples streamed from the archive, events
read from the JSON, transcripts kept compact. What it gives is what Inspect's own models give.

Each test compares against the import with the quick path turned off (every sample read by
Inspect's `EvalSample` model, as before), so any difference in a value, a table or a
transcript fails it.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

import msgspec

import evalbook as eb
from _eval_members import rewritten
from evalbook._interop import _inspect
from evalbook._interop._inspect_events import Unusual, events_of
from evalbook._interop._inspect_files import read_eval
from evalbook._interop._inspect_json import Event

FIXTURES = Path(__file__).parent / "fixtures" / "inspect"
LOGS = [FIXTURES / "agent.eval", FIXTURES / "tiny.eval"]


def _slow(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(log_api: Any, data: Any) -> Any:
        raise Unusual("the quick path is off")

    monkeypatch.setattr(_inspect, "_light", refuse)


def _tables(run: Any) -> list[pd.DataFrame]:
    return [run.cases, run.scores, run.steps(), run.tool_calls()]


def _transcripts(run: Any) -> list[Any]:
    return [
        None if t is None else (t.model_dump(), repr(t))
        for cid in run.cases["case_id"].unique()
        for t in [run.transcript(cid)]
    ]


def _import(path: Path) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return eb.import_results(path, format="inspect")


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.name)
def test_the_quick_path_gives_what_inspects_models_give(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    quick = _import(path)
    quick_tables, quick_transcripts = _tables(quick), _transcripts(quick)
    _slow(monkeypatch)
    slow = _import(path)
    for mine, theirs in zip(quick_tables, _tables(slow), strict=True):
        pd.testing.assert_frame_equal(mine, theirs)
    assert quick_transcripts == _transcripts(slow)
    assert quick.summary().equals(slow.summary())


def _rewritten(path: Path, out: Path, change: Any) -> Path:
    """`path` with each sample member's JSON changed by `change(doc, n)`."""

    def changed(data: bytes, n: int) -> bytes:
        doc = json.loads(data)
        change(doc, n)
        return json.dumps(doc).encode()

    return rewritten(path, out, changed)


def test_text_beyond_ascii_and_a_lone_surrogate_read_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def hostile(doc: dict[str, Any], n: int) -> None:
        if n == 1:  # not ASCII: this transcript is kept whole, the others compact
            doc["messages"][0]["content"] = "look über up"
        if n == 2:  # Inspect's JSON reader refuses a lone surrogate: the sample is skipped
            doc["messages"][0]["content"] = "look \ud800 up"

    log = _rewritten(LOGS[0], tmp_path / "hostile.eval", hostile)
    quick = _import(log)
    assert "look über up" in set(quick.steps()["content"])
    assert quick.options["imported"]["skipped"] == 1
    quick_tables, quick_transcripts = _tables(quick), _transcripts(quick)
    _slow(monkeypatch)
    slow = _import(log)
    for mine, theirs in zip(quick_tables, _tables(slow), strict=True):
        pd.testing.assert_frame_equal(mine, theirs)
    assert quick_transcripts == _transcripts(slow)


def test_events_of_another_shape_are_read_by_inspects_models(tmp_path: Path) -> None:
    def odd(doc: dict[str, Any], n: int) -> None:
        for event in doc["events"]:
            if event["event"] == "model" and n == 0:
                event["timestamp"] = 1700000000  # a number: Inspect's model decides
            if event["event"] == "model" and n == 2:
                del event["output"]["usage"]["input_tokens"]  # Inspect's default: 0

    log = _rewritten(LOGS[0], tmp_path / "odd.eval", odd)
    steps = _import(log).steps()
    assistant = steps[steps["role"] == "assistant"]
    by_case = assistant.groupby("case_id", observed=True)["input_tokens"].apply(list)
    assert by_case["a"] == [10, 30, 50] and by_case["c"] == [0, 0, 0]
    first = assistant[assistant["case_id"] == "a"]
    assert first["latency_s"].notna().all()


def _events(raw: Any) -> list[Event]:
    return msgspec.convert(raw, list[Event])


def test_events_of_the_light_shape() -> None:
    found = events_of(
        _events(
            [
                {"event": "span_begin"},
                {
                    "event": "model",
                    "model": "m",
                    "timestamp": "2026-01-01T00:00:00",  # no offset: UTC, as Inspect reads it
                    "working_time": 2,
                    "output": {"choices": [{"message": {"id": "r1"}}], "usage": {"total_cost": 1}},
                },
                {"event": "tool", "id": "t1", "timestamp": "2026-01-01T00:00:01+00:00"},
            ]
        )
    )
    assert [e.event for e in found] == ["span_begin", "model", "tool"]
    model = found[1]
    assert model.timestamp.timestamp() == 1767225600.0
    assert model.output.usage.input_tokens == 0 and model.output.usage.total_cost == 1.0
    assert model.working_time == 2.0 and model.output.choices[0].message.id == "r1"
    assert found[2].completed is None and not math.isnan(found[2].timestamp.timestamp())
    for bad in ([{"event": 3}], [{"event": "model", "model": "m"}], [{"event": "tool"}]):
        with pytest.raises(Unusual):
            events_of(_events(bad))
    for bad_shape in ("events", ["event"], [None]):  # not a list of objects: msgspec refuses
        with pytest.raises(msgspec.ValidationError):
            _events(bad_shape)


def test_the_archive_is_read_member_by_member_and_closed() -> None:
    header, members, skipped = read_eval(LOGS[0])
    assert json.loads(header)["eval"]["task"] == "agent"
    assert not members.f.closed
    names = [where for where, _ in members]
    assert names == [f"agent.eval:samples/{k}_epoch_1.json" for k in "abc"]
    assert members.f.closed and skipped == []
    _, unread, _ = read_eval(LOGS[0])
    unread.close()  # closed without being read: the file is closed too
    assert unread.f.closed
