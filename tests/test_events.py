"""The event log's contract: whatever a run holds, its lines replay to the same results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._contract import ERROR, SCORED, UNSCORED, Rec
from evalbook._events import LineEncoder, read_events, replay
from evalbook._results import PENDING, Finished, Results
from evalbook._store import start_events

text = st.text(max_size=12)
maybe_text = st.none() | text
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
outputs = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
) | st.tuples(st.integers(), text)
metadata = st.none() | st.dictionaries(text, json_leaf, max_size=3)
graders = st.none() | st.builds(eb.Grader, kind=st.sampled_from(["rule", "model"]), id=text)


@st.composite
def records(draw: Any) -> Rec:
    status = draw(st.sampled_from([SCORED, UNSCORED, ERROR]))
    value = draw(st.floats(0.0, 1.0)) if status == SCORED else math.nan
    reason = None if status == SCORED else draw(text)
    message = None if status == SCORED else draw(maybe_text)
    return Rec(status, value, reason, message, draw(maybe_text), draw(metadata), draw(graders))


@st.composite
def runs(draw: Any) -> tuple[list[eb.ScoreDefinition], Results]:
    n_scores = draw(st.integers(1, 3))
    definitions = [eb.define_score(f"s{j}") for j in range(n_scores)]
    ids = draw(st.lists(text, min_size=0, max_size=6, unique=True))
    results = Results(ids, n_scores)
    for pos in range(len(ids)):
        outcome = draw(st.sampled_from([PENDING, 0, 1, 2, 3]))
        if outcome == PENDING:
            continue
        results.set_case(
            pos,
            Finished(
                outcome,
                draw(st.integers(0, 5)),
                draw(outputs),
                draw(maybe_text),
                draw(maybe_text),
                draw(st.integers(10**15, 2 * 10**15)) / 1e6,  # the engine takes whole µs
                draw(st.integers(0, 10**10)) / 1e6,
                [draw(records()) for _ in range(n_scores)],
            ),
        )
    return definitions, results


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
