"""Every event line carries its checksum; a damaged line is found, named and read up to
(docs/file-formats.md, "The checksum" and "A damaged line")."""

from __future__ import annotations

import json
import re
import warnings
import zlib
from pathlib import Path
from typing import Any

import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import DATA, drop_final_files, exact, judge, passed, resealed, run_t, task_fn

SEAL = re.compile(rb',"crc":"([0-9a-f]{8})"\}$')


def _stored(tmp_path: Path) -> tuple[eb.Run, Path, list[bytes]]:
    run = run_t(tmp_path / "runs", concurrency=1)
    assert run.path is not None
    drop_final_files(run.path)
    log = run.path / "events.jsonl"
    return run, log, log.read_bytes().splitlines(keepends=True)


def _case_end_line(lines: list[bytes], case: str) -> int:
    """The 0-based index of a case's `case.ended` line."""
    return next(
        i
        for i, line in enumerate(lines)
        if b'"case.ended"' in line and b'"case_id":"%s"' % case.encode() in line
    )


def test_every_line_ends_with_the_crc32_of_the_line_without_it(tmp_path: Path) -> None:
    _, _, lines = _stored(tmp_path)
    for line in lines:
        body = line.rstrip(b"\n")
        found = SEAL.search(body)
        assert found is not None, body
        without = body[: found.start()] + b"}"
        assert zlib.crc32(without) == int(found[1], 16)
        assert list(json.loads(body))[-1] == "crc"
        event = json.loads(without)
        if "case_id" in event:  # epoch right after the case id, always 1 for now
            keys = list(event)
            assert keys[keys.index("case_id") + 1] == "epoch" and event["epoch"] == 1


def _damaged(log: Path, lines: list[bytes], index: int, new: bytes) -> None:
    changed = list(lines)
    changed[index] = new
    log.write_bytes(b"".join(changed))


def _check_prefix(run: eb.Run, loaded: eb.Run, kept: int) -> None:
    """The first `kept` cases load as stored, the others as not run."""
    assert loaded.cases["outcome"].notna().tolist() == [True] * kept + [False] * (len(DATA) - kept)
    n = len(run.definitions)
    for a, b in ((loaded.cases, run.cases), (loaded.scores, run.scores)):
        rows = kept * (n if a is loaded.scores else 1)
        # the values, not the categories (those list only what the loaded prefix holds)
        assert_frame_equal(a.iloc[:rows].astype(object), b.iloc[:rows].astype(object))


def test_a_flipped_byte_is_reported_with_file_and_line_and_the_prefix_loads(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "3")  # case 3's case.ended: cases 0-2 stay
    flipped = bytearray(lines[index])
    flipped[40] ^= 0x01  # one bit inside the line
    _damaged(log, lines, index, bytes(flipped))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = eb.load_run(run.path)  # type: ignore[arg-type]
    damage = [str(w.message) for w in caught if "checksum mismatch" in str(w.message)]
    assert len(damage) == 1
    unread = len(lines) - index
    assert f"{log}, line {index + 1}: checksum mismatch" in damage[0]
    assert f"{unread} line(s) from there on were not read" in damage[0]
    _check_prefix(run, loaded, 3)
    # a resume cuts the log where the damaged line starts: the lines before it stay, byte for byte
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eb.run(DATA, task=task_fn, scorers=[exact, judge], scores=[passed], resume=run.path,
               progress=False)  # fmt: skip
    assert log.read_bytes().startswith(b"".join(lines[:index]))
    resumed = log.read_bytes()[sum(len(line) for line in lines[:index]) :].splitlines()
    assert resumed[0].startswith(b'{"schema_version":4,"event":"run.resumed"')


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda e: e.pop("case_id"), "no 'case_id' key"),
        (lambda e: e.update(outcome="won"), "unknown outcome 'won'"),
        (lambda e: e.update(attempt="1"), "'attempt' is '1'"),
        (lambda e: e.update(case_id="nobody"), "case 'nobody' is not a case of this run"),
        (lambda e: e.update(started_us=1.5), "'started_us' is 1.5"),
        (lambda e: e.update(output_kind="pickle"), "unknown output_kind 'pickle'"),
        (lambda e: e.update(epoch=0), "'epoch' is 0"),
    ],
)
def test_an_ill_typed_line_with_a_valid_checksum_is_damage_too(
    tmp_path: Path, edit: Any, reason: str
) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "4")
    event = json.loads(lines[index])
    event.pop("crc")
    edit(event)
    _damaged(log, lines, index, resealed(json.dumps(event, separators=(",", ":"))).encode())
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(
            RuntimeWarning,
            match=rf"line {index + 1}: a damaged 'case.ended' event \(.*{re.escape(reason)}",
        ),
    ):
        loaded = eb.load_run(run.path)  # type: ignore[arg-type]
    _check_prefix(run, loaded, 4)


def test_a_definition_pydantic_rejects_is_damage_at_its_line(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    event = json.loads(lines[2])  # the second score.defined
    event.pop("crc")
    event["definition"]["errors"] = "ignore"
    _damaged(log, lines, 2, resealed(json.dumps(event, separators=(",", ":"))).encode())
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(RuntimeWarning, match=r"line 3: a damaged 'score.defined' event"),
    ):
        loaded = eb.load_run(run.path)  # type: ignore[arg-type]
    assert loaded.cases["outcome"].isna().all()


def test_a_version_3_line_without_its_checksum_is_damage(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "1")
    _damaged(log, lines, index, SEAL.sub(b"}", lines[index].rstrip(b"\n")) + b"\n")
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(RuntimeWarning, match=rf"line {index + 1}: no checksum at its end"),
    ):
        loaded = eb.load_run(run.path)  # type: ignore[arg-type]
    _check_prefix(run, loaded, 1)


def test_a_damaged_run_started_is_an_error_naming_file_and_line_1(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    _damaged(log, lines, 0, lines[0].replace(b'"name":"t"', b'"name":"u"'))
    with pytest.raises(ValueError, match=rf"{re.escape(str(log))}, line 1: checksum mismatch"):
        eb.load_run(run.path)  # type: ignore[arg-type]


def test_resuming_a_damaged_log_sets_it_aside_and_runs_the_rest_once(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "5")
    middle = bytearray(lines[index])
    middle[len(middle) // 2] ^= 0x20
    _damaged(log, lines, index, bytes(middle))
    before = log.read_bytes()
    calls: list[str] = []

    def counting(question: str, ctx: Any) -> Any:
        calls.append(question)
        return task_fn(question, ctx)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed = eb.run(
            DATA,
            task=counting,
            scorers=[exact, judge],
            scores=[passed],
            resume=run.path,
            progress=False,
        )
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and f"line {index + 1}" in said[0] and "events.jsonl.damaged-1" in said[0]
    assert sorted(calls) == sorted(DATA["question"][5:])  # the cases after the damage, once
    copy = log.with_name("events.jsonl.damaged-1")
    assert copy.read_bytes() == before  # nothing is lost
    reloaded = eb.load_run(run.path)  # type: ignore[arg-type]
    assert_frame_equal(
        reloaded.cases.drop(columns=["started_at", "duration_s"]),
        run.cases.drop(columns=["started_at", "duration_s"]),
    )
    assert_frame_equal(reloaded.scores, run.scores)
    drop_final_files(run.path)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the log alone: whole, no warning
        assert_frame_equal(eb.load_run(run.path).scores, run.scores)  # type: ignore[arg-type]
    assert resumed.cases["outcome"].notna().all()


def test_a_resume_that_read_the_final_files_logs_again_what_the_cut_drops(
    tmp_path: Path,
) -> None:
    run = run_t(tmp_path / "runs", concurrency=1)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    index = _case_end_line(lines, "5")
    _damaged(log, lines, index, lines[index].replace(b'"attempt":1', b'"attempt":2'))
    calls: list[str] = []

    def counting(question: str, ctx: Any) -> Any:
        calls.append(question)
        return task_fn(question, ctx)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        eb.run(
            DATA,
            task=counting,
            scorers=[exact, judge],
            scores=[passed],
            resume=run.path,
            progress=False,
        )
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 1 and "3 kept cases were logged again" in said[0], said
    assert calls == []  # every case was kept, from the final files
    assert log.with_name("events.jsonl.damaged-1").exists()
    drop_final_files(run.path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the log alone holds every case again, undamaged
        again = eb.load_run(run.path)
    assert_frame_equal(again.cases, run.cases)
    assert_frame_equal(again.scores, run.scores)


def test_runs_lists_a_damaged_log_as_incomplete_with_one_warning(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "2")
    _damaged(log, lines, index, lines[index].replace(b'"outcome":', b'"outcome" :'))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = eb.runs(tmp_path / "runs")
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and f"{log}, line {index + 1}: checksum mismatch" in said[0]
    assert table["status"].tolist() == ["incomplete"] and table["id"].tolist() == [run.id]
    assert table["completion"][0] == 2 / len(DATA)  # the two cases before the damage


def test_saving_a_run_loaded_from_a_damaged_log_keeps_the_damaged_log(tmp_path: Path) -> None:
    run, log, lines = _stored(tmp_path)
    index = _case_end_line(lines, "6")
    _damaged(log, lines, index, lines[index].replace(b'"case.ended"', b'"case.endeb"'))
    damaged = log.read_bytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = eb.load_run(run.path)  # type: ignore[arg-type]
        loaded.save()  # writes the log anew from the prefix: the damaged one stays beside it
    assert log.with_name("events.jsonl.damaged-1").read_bytes() == damaged
    drop_final_files(run.path)  # type: ignore[arg-type]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the log written anew: no damage to warn of
        warnings.filterwarnings("ignore", r"run 't' .* is incomplete", RuntimeWarning)
        again = eb.load_run(run.path)  # type: ignore[arg-type]
    _check_prefix(run, again, 6)
