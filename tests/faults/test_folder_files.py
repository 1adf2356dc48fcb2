"""Every file of a run folder gets the checks the log has: a regular file, no link out of the
folder, a bounded read, and consistency with the log (docs/file-formats.md, "Final files").

Each test reports what it measured (seconds to refuse a special file, what loaded) with -s.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests._store_helpers import drop_final_files, resealed

import evalbook as eb

DATA = pd.DataFrame({"x": list(range(6))})


def _half(x: int) -> float:
    return float(x % 2 == 0)


def _stored(store: Path, name: str = "half", scorer: Any = _half) -> eb.Run:
    scored = eb.scorer(eb.define_score("even", primary=True))(lambda x: scorer(x))
    return eb.run(DATA, task=lambda x: x, scorers=[scored], store=store, name=name, progress=False)


def _load(path: Path) -> tuple[eb.Run, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.load_run(path)
    return run, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("kind", ["fifo", "link to /dev/zero", "4 GiB sparse file"])
def test_a_special_summary_json_is_refused_quickly_and_the_log_decides(
    tmp_path: Path, kind: str
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    summary = run.path / "summary.json"
    summary.unlink()
    if kind == "fifo":
        os.mkfifo(summary)
    elif kind == "link to /dev/zero":
        summary.symlink_to("/dev/zero")
    else:
        with summary.open("wb") as f:
            f.truncate(4 << 30)
    start = time.perf_counter()
    loaded, said = _load(run.path)
    listed = eb.runs(tmp_path / "runs")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        resumed = eb.run(
            DATA,
            task=lambda x: x,
            scorers=[eb.scorer(eb.define_score("even", primary=True))(lambda x: _half(x))],
            resume=run.path,
            progress=False,
        )
    seconds = time.perf_counter() - start
    print(f"{kind}: load_run, runs and resume in {seconds:.2f} s")
    assert any("summary.json" in m and "events.jsonl" in m for m in said), said
    assert_frame_equal_scores(loaded, run)
    assert len(listed) == 1 and listed["id"].iloc[0] == run.id
    assert resumed.headline.value == run.headline.value


def assert_frame_equal_scores(a: eb.Run, b: eb.Run) -> None:
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.id == b.id and a.headline.text == b.headline.text


def test_a_final_file_linked_to_another_run_is_not_followed(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    other = _stored(tmp_path / "runs", name="other", scorer=lambda x: 1.0)
    assert run.path is not None and other.path is not None
    (run.path / "cases.parquet").unlink()
    (run.path / "cases.parquet").symlink_to(other.path / "cases.parquet")
    loaded, said = _load(run.path)
    print(f"loaded {loaded.headline.text!r}; warned: {said}")
    assert any("symlink" in m and "cases.parquet" in m for m in said), said
    assert_frame_equal_scores(loaded, run)


def test_another_runs_final_files_copied_in_do_not_load_as_this_run(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    other = _stored(tmp_path / "runs", name="other", scorer=lambda x: 1.0)
    assert run.path is not None and other.path is not None
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        shutil.copyfile(other.path / name, run.path / name)
    loaded, said = _load(run.path)
    listed = eb.runs(tmp_path / "runs")
    print(f"loaded {loaded.id} {loaded.headline.text!r}; warned: {said}")
    assert loaded.id == run.id and loaded.name == "half"
    assert loaded.headline.value == pytest.approx(0.5)  # the log's, not the copy's 100 %
    assert any(other.id in m and run.id in m for m in said), said
    assert sorted(listed["id"]) == sorted([run.id, other.id])  # each listed as itself


def _swap_two_values(path: Path) -> None:
    """Swap the values of the first two cases in scores.parquet: every total stays the same."""
    table = pq.read_table(path)
    values = table.column("value").to_pylist()
    assert values[0] != values[1]
    values[0], values[1] = values[1], values[0]
    at = table.column_names.index("value")
    pq.write_table(table.set_column(at, "value", pa.array(values, table.schema[at].type)), path)


def test_two_values_swapped_in_scores_parquet_with_totals_kept_are_caught(
    tmp_path: Path,
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    _swap_two_values(run.path / "scores.parquet")
    loaded, said = _load(run.path)
    print(f"warned: {said}")
    assert any("scores.parquet" in m and "changed or replaced" in m for m in said), said
    assert_frame_equal_scores(loaded, run)  # the log's values


def test_a_resume_does_not_carry_an_edited_final_file_forward(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    _swap_two_values(run.path / "scores.parquet")
    scored = eb.scorer(eb.define_score("even", primary=True))(lambda x: _half(x))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        eb.run(DATA, task=lambda x: x, scorers=[scored], resume=run.path, progress=False)
    loaded, said = _load(run.path)
    assert said == []  # the new final files are the log's, and agree with it
    assert_frame_equal_scores(loaded, run)


def _lines(run: eb.Run) -> list[bytes]:
    assert run.path is not None
    return (run.path / "events.jsonl").read_bytes().splitlines(keepends=True)


def test_a_second_case_ended_after_the_run_ended_is_damage_not_a_new_result(
    tmp_path: Path,
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    lines = _lines(run)
    ended = next(
        json.loads(raw)
        for raw in lines
        if b'"case.ended"' in raw and json.loads(raw)["outcome"] == "passed"
    )
    ended.pop("crc")
    again = dict(ended, outcome="errored", error_type="ValueError", error_message="late")
    extra = resealed(json.dumps(again, separators=(",", ":"))).encode()
    (run.path / "events.jsonl").write_bytes(b"".join(lines) + extra)
    drop_final_files(run.path)
    loaded, said = _load(run.path)
    print(f"warned: {said}")
    assert any(f"line {len(lines) + 1}" in m and "after run.ended" in m for m in said), said
    assert (loaded.cases["outcome"] == "passed").all()


def test_a_resealed_unknown_event_is_reported_as_damage(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    lines = _lines(run)
    index = next(i for i, raw in enumerate(lines) if b'"case.ended"' in raw)
    event = json.loads(lines[index])
    event.pop("crc")
    event["event"] = "case.endex"
    lines[index] = resealed(json.dumps(event, separators=(",", ":"))).encode()
    (run.path / "events.jsonl").write_bytes(b"".join(lines))
    drop_final_files(run.path)
    loaded, said = _load(run.path)
    print(f"warned: {said}")
    assert any(f"line {index + 1}" in m and "case.endex" in m for m in said), said
    assert loaded.headline.completion < 1.0  # the lines from the damage on are not read


def test_a_case_ended_twice_without_a_new_start_is_damage(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    lines = _lines(run)
    index = next(i for i, raw in enumerate(lines) if b'"case.ended"' in raw)
    event = json.loads(lines[index])
    event.pop("crc")
    event.update(outcome="errored", error_type="ValueError", error_message="again")
    lines.insert(index + 1, resealed(json.dumps(event, separators=(",", ":"))).encode())
    (run.path / "events.jsonl").write_bytes(b"".join(lines))
    drop_final_files(run.path)
    loaded, said = _load(run.path)
    print(f"warned: {said}")
    assert any(f"line {index + 2}" in m and "a second case.ended" in m for m in said), said
    assert "errored" not in set(loaded.cases["outcome"].dropna())


def _resume(path: Path) -> eb.Run:
    scored = eb.scorer(eb.define_score("even", primary=True))(lambda x: _half(x))
    return eb.run(DATA, task=lambda x: x, scorers=[scored], resume=path, progress=False)


@pytest.mark.timeout(120)
def test_a_resume_sets_a_damaged_sparse_log_aside_without_writing_its_holes(
    tmp_path: Path,
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = _lines(run)
    index = next(i for i, raw in enumerate(lines) if b'"case.ended"' in raw)
    lines[index] = lines[index].replace(b'"outcome":"', b'"outcome":"x')  # checksum fails
    log.write_bytes(b"".join(lines))
    with log.open("r+b") as f:
        f.truncate(4 << 30)  # then 4 GiB of hole
    drop_final_files(run.path)
    start = time.perf_counter()
    with pytest.warns(RuntimeWarning, match="damaged"):
        resumed = _resume(run.path)
    seconds = time.perf_counter() - start
    copy = run.path / "events.jsonl.damaged-1"
    written = copy.stat().st_blocks * 512
    print(
        f"resume in {seconds:.2f} s; the copy holds {copy.stat().st_size:,} bytes, "
        f"{written:,} of them written; mode {oct(copy.stat().st_mode & 0o777)}"
    )
    assert copy.stat().st_size == 4 << 30  # every byte kept, holes as holes
    with copy.open("rb") as f:
        assert f.read(len(b"".join(lines))) == b"".join(lines)
    assert written < 1 << 20
    assert copy.stat().st_mode & 0o777 == 0o600
    assert resumed.headline.value == run.headline.value


def test_a_resume_that_fails_on_the_way_releases_the_folder(tmp_path: Path) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    cases = run.path / "cases.parquet"
    cases.unlink()
    cases.mkdir()  # what a resume cannot remove: it fails after taking the lock
    with pytest.raises(eb.ConfigurationError, match="cannot replace its stored files"):
        _resume(run.path)
    cases.rmdir()
    resumed = _resume(run.path)  # not "another process is writing"
    assert resumed.headline.value == run.headline.value


def test_a_log_damaged_before_its_scores_says_why_it_cannot_be_resumed(
    tmp_path: Path,
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    lines = _lines(run)
    lines[1] = lines[1].replace(b'"score.defined"', b'"score.defineX"')  # checksum fails
    (run.path / "events.jsonl").write_bytes(b"".join(lines))
    drop_final_files(run.path)
    with pytest.raises(eb.ConfigurationError, match="damaged before its score definitions") as e:
        _resume(run.path)
    assert "line 2" in str(e.value) and "(none)" not in str(e.value)


def test_folders_left_by_runs_killed_while_they_started_are_removed(tmp_path: Path) -> None:
    store = tmp_path / "runs"
    kept = _stored(store)
    old = time.time() - 3600
    empty = store / "killed-20260101T000000Z"
    lone_tmp = store / "killed-20260101T000001Z"
    young = store / "starting-now-20260101T000002Z"
    foreign = store / "notes"
    for folder in (empty, lone_tmp, young, foreign):
        folder.mkdir()
    (lone_tmp / ".events.jsonl.a1b2c3d4.tmp").write_bytes(b'{"schema_version":3')
    (foreign / "todo.txt").write_text("mine")
    for folder in (empty, lone_tmp, foreign):
        os.utime(folder, (old, old))
    _stored(store, name="next")  # a new run in the store cleans up
    left = sorted(p.name for p in store.iterdir())
    print(f"left in the store: {left}")
    assert not empty.exists() and not lone_tmp.exists()
    assert young.exists()  # it may be a run starting right now in another process
    assert (foreign / "todo.txt").read_text() == "mine"  # not a run's leftovers: untouched
    assert kept.path is not None and kept.path.exists()


def test_a_run_another_process_is_writing_is_not_called_interrupted(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    lines = _lines(run)
    (run.path / "events.jsonl").write_bytes(b"".join(lines[: len(lines) // 2]))
    drop_final_files(run.path)
    with (run.path / "events.jsonl").open("ab") as writer:
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX)  # what a live writer holds
        _, running = _load(run.path)
    _, stopped = _load(run.path)
    print(f"while written: {running}; after: {stopped}")
    assert any("another process is running it right now" in m for m in running), running
    assert not any("resume it" in m for m in running)
    assert any("interrupted); resume it" in m for m in stopped), stopped


# -- the sweep: every final file, every kind of fault (tools/faults_folder_files.py: long form) --

FILES = ("summary.json", "cases.parquet", "scores.parquet", "data.parquet")
FAULTS = ("fifo", "link out", "sparse", "directory", "flip", "cut", "swap", "copied")


def _fault(folder: Path, other: Path, name: str, fault: str, rng: random.Random) -> None:
    path = folder / name
    if fault == "copied":
        for final in ("cases.parquet", "scores.parquet", "summary.json"):
            shutil.copyfile(other / final, folder / final)
        return
    if fault == "swap":
        _swap_two_values(folder / "scores.parquet")
        return
    data = path.read_bytes()
    path.unlink()
    if fault == "fifo":
        os.mkfifo(path)
    elif fault == "link out":
        path.symlink_to(other / name)
    elif fault == "sparse":
        with path.open("wb") as f:
            f.truncate(17 << 30)  # beyond every cap
    elif fault == "directory":
        path.mkdir()
    elif fault == "flip":
        at = rng.randrange(len(data))
        path.write_bytes(data[:at] + bytes([data[at] ^ (1 << rng.randrange(8))]) + data[at + 1 :])
    else:
        path.write_bytes(data[: rng.randrange(len(data))])


def folder_trials(trials: int, seed: int) -> dict[str, int]:
    """`trials` damaged run folders, each loaded: how many were identical to the run the log
    holds, detected (a warning), raised, slow (over 10 s) or silently different."""
    rng = random.Random(seed)
    counts = dict.fromkeys(("identical", "detected", "raised", "slow", "silently different"), 0)
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp)
        base = _stored(store / "base")
        other = _stored(store / "other", name="half", scorer=lambda x: 1.0)
        assert base.path is not None and other.path is not None
        for trial in range(trials):
            fault = rng.choice(FAULTS)
            name = rng.choice(FILES) if fault not in ("swap", "copied") else "scores.parquet"
            folder = store / f"t{trial}"
            shutil.copytree(base.path, folder)
            _fault(folder, other.path, name, fault, rng)
            start = time.perf_counter()
            try:
                loaded, said = _load(folder)
            except Exception:
                counts["raised"] += 1
                continue
            finally:
                if time.perf_counter() - start > 10:
                    counts["slow"] += 1
            same = loaded.scores.equals(base.scores) and loaded.cases.equals(base.cases)
            same = same and loaded.id == base.id
            if same:
                counts["detected" if said else "identical"] += 1
            elif said:
                counts["detected"] += 1  # said, and loaded what the log holds, or less
            else:
                counts["silently different"] += 1
    return counts


@pytest.mark.timeout(300)
def test_every_fault_of_every_final_file_is_seen_or_harmless() -> None:
    counts = folder_trials(24, seed=5)
    print(f"24 damaged folders: {counts}")
    assert counts["silently different"] == 0 and counts["raised"] == 0 and counts["slow"] == 0
    assert counts["detected"] > 0


def test_an_empty_log_says_it_is_empty_and_resume_is_a_configuration_error(
    tmp_path: Path,
) -> None:
    run = _stored(tmp_path / "runs")
    assert run.path is not None
    drop_final_files(run.path)
    (run.path / "events.jsonl").write_bytes(b"")
    with pytest.raises(ValueError, match="is empty: the run wrote nothing"):
        eb.load_run(run.path)
    with pytest.raises(eb.ConfigurationError, match="is empty: the run wrote nothing"):
        _resume(run.path)


def test_resuming_a_folder_left_by_a_start_up_kill_says_nothing_ran(tmp_path: Path) -> None:
    folder = tmp_path / "runs" / "killed-20260101T000000Z"
    folder.mkdir(parents=True)
    (folder / ".events.jsonl.a1b2c3d4.tmp").write_bytes(b"")
    with pytest.raises(eb.ConfigurationError, match=r"nothing of it ran\); run it again"):
        _resume(folder)
