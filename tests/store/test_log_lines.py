"""The one encoder of the log writes, byte for byte, the lines evalbook 0.1.0 wrote.

`fixtures/v010-lines.jsonl` was written by 0.1.0 (its pure-Python path, which its tests pinned
equal to its C path) for the cases below: plain, unscored and error records, rationales,
metadata, a record's own grader, text, JSON, literal and missing outputs, non-finite numbers,
non-ASCII case ids and outputs, errors, retries and interleaved starts.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import evalbook as eb
from _store_helpers import as_v2, resealed

# the encoder fed exact cases (times, retries, interleaved starts) to pin 0.1.0's bytes
from evalbook._model._contract import ERROR, SCORED, UNSCORED, Rec
from evalbook._model._results import Finished
from evalbook._store._log._read import replay
from evalbook._store._log._write import LineEncoder, event_line
from evalbook._store._sink import StoreSink

FIXTURES = Path(__file__).parent / "fixtures"


def _mixed_cases(n: int) -> list[Finished]:
    rng = random.Random(7)
    g = eb.Grader(kind="model", id="j", model="m")
    cases = []
    for i in range(n):
        records = [
            Rec(SCORED, rng.choice([0.0, 1.0, 0.5, i / n, 1 / 3])),
            Rec(SCORED, 0.25, rationale="<b>why</b> é", metadata={"raw": i, "v": [1, 2.5]})
            if i % 4 == 1
            else Rec(SCORED, 1.0),
            Rec(ERROR, reason="scorer_raised", message='ValueError: x\n"y"')
            if i % 9 == 4
            else Rec(SCORED, 0.0, grader=g)
            if i % 10 == 3
            else Rec(SCORED, 1.0),
        ]
        output: Any = f"answer {i} " + "x" * rng.choice([0, 10, 300]) + "é😀"[: i % 3]
        error = None
        outcome = 0
        if i % 7 == 3:
            records[1] = Rec(UNSCORED, reason="skipped", rationale="<script>")
        if i % 11 == 5:
            output = {"answer": i, "tuple": (1, 2)} if i % 2 else None
        if i % 17 == 8:
            output = [1.5, float("nan"), True, None, {"k": "v"}]
        if i % 13 == 6:
            error = "ValueError"
            outcome = 2
        started = (1.7e9 * 1e6 + i) / 1e6
        cases.append(Finished(outcome, 1 + i % 2, output, error, error, started, i / 1e6, records))
    return cases


DEFINITIONS = [
    eb.define_score("s0"),
    eb.define_score("s1", grader=eb.Grader(kind="rule", id="r")),
    eb.define_score("s2"),
]


def _write(folder: Path, cases: list[Finished]) -> bytes:
    ids = [f"c{i}" if i % 5 else f"c{i} «{i}»" for i in range(len(cases))]
    sink = StoreSink(folder, LineEncoder(DEFINITIONS, ids), append=False)
    for pos, case in enumerate(cases):
        sink.case_started((pos, 1, 1_700_000_000_000_000 + pos))
        if pos % 5 == 2:  # another case started in the meantime: its line goes out now
            sink.case_started(((pos + 1) % len(cases), 2, 5))
        sink.case_ended(pos, case)
    sink.close()
    return (folder / "events.jsonl").read_bytes()


def test_the_log_lines_are_the_bytes_0_1_0_wrote(tmp_path: Path) -> None:
    written = _write(tmp_path, _mixed_cases(40))
    expected = (FIXTURES / "v010-lines.jsonl").read_bytes()
    # version 3 adds `epoch` and the checksum, and nothing else: without them, the same bytes
    v2 = as_v2(written.decode("ascii")).encode("ascii")
    assert v2.splitlines() == expected.splitlines()
    assert v2 == expected
    assert written == resealed(written.decode("ascii")).encode("ascii")  # every checksum holds
    assert written.isascii()  # every line is ASCII: other characters are JSON escapes


def test_one_os_write_per_finished_case(tmp_path: Path, monkeypatch: Any) -> None:
    import os

    from evalbook._store._log import _file as _log

    sizes: list[int] = []
    real = os.write

    def counting(fd: int, data: Any) -> int:
        sizes.append(len(data))
        return real(fd, data)

    monkeypatch.setattr(_log.os, "write", counting)
    _write(tmp_path, _mixed_cases(10))
    assert len(sizes) == 10  # the starts noted since the last write go out with the case
    assert sum(sizes) == (tmp_path / "events.jsonl").stat().st_size


def test_the_pinned_lines_replay_to_the_cases(tmp_path: Path) -> None:
    ids = [f"c{i}" if i % 5 else f"c{i} «{i}»" for i in range(40)]
    head = [
        event_line("run.started", run_id="r", name="n", options={}, case_ids=ids),
        *(
            event_line("score.defined", position=j, definition=d.model_dump(mode="json"))
            for j, d in enumerate(DEFINITIONS)
        ),
    ]
    log = tmp_path / "events.jsonl"
    head_v2 = as_v2("".join(head))  # the fixture's lines are version 2: one version a file
    log.write_bytes(head_v2.encode() + (FIXTURES / "v010-lines.jsonl").read_bytes())
    results = replay(log).results
    cases = _mixed_cases(40)
    assert results.outcome.tolist() == [c.outcome for c in cases]
    assert results.attempts.tolist() == [c.attempts for c in cases]
    assert results.output[5] == {"answer": 5, "tuple": (1, 2)}  # a literal: a tuple again
    assert results.output[16] is None and results.output[2] == cases[2].output
    assert results.output[8][:1] == [1.5] and results.output[8][2:] == [True, None, {"k": "v"}]
    assert results.rationale[1 * 3 + 1] == "<b>why</b> é"
