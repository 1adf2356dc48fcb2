"""The event log's contract: whatever a run holds, its lines replay to the same results."""

from __future__ import annotations

import functools
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _strategies import odd_text, records, runs
from evalbook._model._contract import SCORED, Rec
from evalbook._model._results import PENDING, Finished, Results
from evalbook._store import _events as _events
from evalbook._store._events import LineEncoder, read_events, replay
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
    """A case the fast path takes (plain values, text output), and the starts to log."""
    n_scores = draw(st.integers(0, 4))
    ids = draw(st.lists(odd_text, min_size=3, max_size=3, unique=True))
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
        draw(odd_text),
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
def test_the_fast_lines_are_the_general_lines(drawn: Any, odd: Rec) -> None:
    ids, case, started = drawn
    definitions = [eb.define_score(f"s{j}") for j in range(len(case.records))]
    encoder = LineEncoder(definitions, ids)
    expected = encoder.case_block(1, case, started)
    assert encoder.block(1, case, started) == expected
    assert encoder.block(1, case, started) == expected  # and again, from the cached tails
    data = expected.encode("utf-8", "surrogatepass")
    assert encoder.block_bytes(1, case, started) == data  # in C when built
    assert encoder.block_bytes(1, case, started) == data
    lines = [json.loads(line) for line in expected.splitlines()]
    assert [e["value"] for e in lines if e["event"] == "score.recorded"] == [
        r.value for r in case.records
    ]
    if case.records:  # any other record goes the general way, with the same result
        other = case._replace(records=[odd, *case.records[1:]])
        text = encoder.case_block(1, other, started)
        assert encoder.block(1, other, started) == text
        assert encoder.block_bytes(1, other, started) == text.encode("utf-8", "surrogatepass")


def test_the_c_lines_are_built_where_a_compiler_is() -> None:
    """CI has a C compiler: a silently failed build would cost the store half its speed."""
    if shutil.which("cc") is None and shutil.which("gcc") is None:
        pytest.skip("no C compiler here: evalbook writes the log in Python")
    assert _events._c_case_block is not None


def test_without_the_c_module_the_python_path_writes_the_same(monkeypatch: Any) -> None:
    definitions = [eb.define_score("a"), eb.define_score("b")]
    case = Finished(
        0, 1, "out \ud800 é", None, None, 1.5, 0.25, [Rec(SCORED, 1.0), Rec(SCORED, 0.3)]
    )
    with_c = LineEncoder(definitions, ["x", "y"]).block_bytes(1, case, [(1, 1, 7)])
    monkeypatch.setattr(_events, "_c_case_block", None)
    encoder = LineEncoder(definitions, ["x", "y"])
    assert not isinstance(encoder.block_bytes, functools.partial)  # the Python function
    assert encoder.block_bytes(1, case, [(1, 1, 7)]) == with_c
