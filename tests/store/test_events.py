"""The event log's contract: whatever a run holds, its lines replay to the same results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _strategies import records, runs, text

# any Results (hypothesis) through the encoder and back: no run makes them all
from evalbook._model._contract import SCORED, Rec
from evalbook._model._results import PENDING, Finished, Results
from evalbook._store._log._read import read_events, replay
from evalbook._store._log._write import LineEncoder
from evalbook._store._sink import start_events


def _same(a: Results, b: Results) -> None:
    assert a.case_ids == b.case_ids
    for name in ("outcome", "attempts", "status"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    for name in ("started_at", "duration_s", "value"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))  # NaN == NaN here
    for name in ("output", "error_type", "error_message", "reason", "message", "rationale"):
        assert getattr(a, name) == getattr(b, name), name
    assert a.metadata == b.metadata
    assert a.grader == b.grader


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(run=runs())
def test_every_run_replays_to_the_same_results(tmp_path: Path, run: Any) -> None:
    definitions, results = run
    encoder = LineEncoder(definitions, results.case_ids)
    lines = [
        start_events(
            "id", "name", "2025-01-01T00:00:00+00:00", results.case_ids, {}, definitions, None
        )
    ]
    for pos in range(results.n_cases):
        if results.outcome[pos] != PENDING:
            lines.append(encoder.case_started(pos, 1, 1.5e9))
            lines.append(encoder.case_ended(pos, results))
    log = tmp_path / "events.jsonl"
    log.write_text("".join(lines), encoding="utf-8")
    for event in read_events(log):  # every line is a JSON object with the integer version
        assert type(event["schema_version"]) is int
    _same(replay(log).results, results)


@st.composite
def plain_cases(draw: Any) -> tuple[list[str], Finished, list[tuple[int, int, int]]]:
    """A common case (plain values, a text output), and the starts to log with it."""
    n_scores = draw(st.integers(0, 4))
    ids = draw(st.lists(text, min_size=3, max_size=3, unique=True))
    values = draw(
        st.lists(
            st.floats(0.0, 1.0) | st.sampled_from([0.0, 1.0, 0.5, -0.0]),
            min_size=n_scores,
            max_size=n_scores,
        )
    )
    case = Finished(
        draw(st.sampled_from([0, 1])),
        draw(st.integers(1, 3)),
        draw(text),
        None,
        None,
        draw(st.integers(10**15, 2 * 10**15)) / 1e6,
        draw(st.integers(0, 10**10)) / 1e6,
        [Rec(SCORED, v) for v in values],
    )
    starts = st.tuples(st.integers(0, 2), st.integers(1, 3), st.integers(0, 2 * 10**15))
    return ids, case, draw(st.lists(starts, max_size=3))  # a list, as the sink passes it


@settings(max_examples=300, deadline=None)
@given(drawn=plain_cases(), odd=records())
def test_a_case_block_is_ascii_json_lines_that_say_what_the_case_holds(
    drawn: Any, odd: Rec
) -> None:
    ids, case, started = drawn
    definitions = [eb.define_score(f"s{j}") for j in range(len(case.records))]
    encoder = LineEncoder(definitions, ids)
    block = encoder.case_block(1, case, started)
    assert encoder.case_block(1, case, started) == block  # the same from the cached tails
    assert block.isascii() and block.endswith("\n")
    lines = [json.loads(line) for line in block.splitlines()]
    assert [(e["case_id"], e["attempt"], e["at_us"]) for e in lines[: len(started)]] == [
        (ids[p], a, t) for p, a, t in started
    ]
    recorded = [e for e in lines if e["event"] == "score.recorded"]
    assert [e["value"] for e in recorded] == [r.value for r in case.records]
    assert lines[-1]["event"] == "case.ended" and lines[-1]["output"] == case.output
    assert lines[-1]["started_us"] / 1e6 == case.started_at
    if case.records:  # any other record: its own line, the others as they were
        other = case._replace(records=[odd, *case.records[1:]])
        lines = encoder.case_block(1, other, started).splitlines()
        assert lines[len(started) + 1 :] == block.splitlines()[len(started) + 1 :]
