"""The event log's contract: whatever a run holds, its lines replay to the same results."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings

from _strategies import runs
from evalbook._events import LineEncoder, read_events, replay
from evalbook._results import PENDING, Results
from evalbook._store import start_events


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
