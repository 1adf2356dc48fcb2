"""The run store: folders, names, the event log, save, a full disk, two runs at once."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _store_helpers import (
    DATA,
    SCHEMA_VERSION,
    assert_same,
    events_of,
    run_t,
)

# -- folders and names ----------------------------------------------------------------------


def test_run_writes_its_own_folder(tmp_path: Path) -> None:
    run = run_t(tmp_path, name="baseline")
    assert run.path is not None and run.path.is_absolute()
    assert run.path.parent == tmp_path.resolve()
    assert run.path.name.startswith("baseline-")
    names = {p.name for p in run.path.iterdir()}
    assert {"events.jsonl", "cases.parquet", "scores.parquet", "summary.json"} <= names
    assert not [n for n in names if n.endswith(".tmp")]


def test_default_store_is_runs_under_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = eb.run(DATA.head(2), task=lambda question: question, progress=False)
    assert run.path is not None
    assert run.path.parent == (tmp_path / "runs").resolve()


def test_store_none_touches_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    opened: list[str] = []
    real_open = os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    run = run_t(None)
    assert run.path is None
    assert list(tmp_path.iterdir()) == []
    assert [p for p in opened if "events" in p or "parquet" in p] == []


def test_same_name_same_second_gets_two_folders(tmp_path: Path) -> None:
    a, b = run_t(tmp_path, name="same"), run_t(tmp_path, name="same")
    assert a.path != b.path and a.id != b.id
    assert_same(a, eb.load_run(a.path))  # type: ignore[arg-type]
    assert_same(b, eb.load_run(b.path))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["../evil", "a/b", "..", ".", ".hidden", "a\\b", "/abs", "a b", "x" * 101, "a.."]
)
def test_unsafe_names_are_rejected_before_any_case(tmp_path: Path, name: str) -> None:
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    store = tmp_path / "store"
    with pytest.raises(eb.ConfigurationError, match="run name"):
        eb.run(DATA, task=task, name=name, store=store, progress=False)
    assert calls == []
    assert not store.exists() or list(store.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["store"])


@pytest.mark.parametrize("name", ["baseline", "gpt-4o_v2.1", "a+b", "模型-1", "_x"])
def test_safe_names_pass(tmp_path: Path, name: str) -> None:
    run = eb.run(DATA.head(1), task=lambda question: question, name=name, store=tmp_path,
                 progress=False)  # fmt: skip
    assert run.name == name and run.path is not None
    assert run.path.parent == tmp_path.resolve() and run.path.name.startswith(f"{name}-")


def test_bad_store_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(eb.ConfigurationError, match="store="):
        run_t(blocker / "runs")


# -- the event log --------------------------------------------------------------------------


def test_event_log_shape(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    events = events_of(run)
    assert all(
        type(e["schema_version"]) is int and e["schema_version"] == SCHEMA_VERSION for e in events
    )
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run.started" and kinds[-1] == "run.ended"
    assert kinds[1:4] == ["score.defined"] * 3
    assert events[0]["case_ids"] == [str(i) for i in range(len(DATA))]
    assert events[0]["scores"] == ["correct", "judged", "pass"]
    assert events[0]["options"]["concurrency"] == 8
    assert kinds.count("case.started") == len(DATA)
    assert kinds.count("case.ended") == len(DATA)
    assert kinds.count("score.recorded") == len(DATA) * 3
    # a case's records come before its case.ended, and after its case.started
    seen: dict[str, list[str]] = {}
    for e in events:
        if "case_id" in e:
            seen.setdefault(e["case_id"], []).append(e["event"])
    for trail in seen.values():
        assert trail == ["case.started", *["score.recorded"] * 3, "case.ended"]
    ended = {e["case_id"]: e for e in events if e["event"] == "case.ended"}
    assert ended["2"]["outcome"] == "errored" and ended["2"]["error_type"] == "RuntimeError"
    assert ended["3"]["outcome"] == "failed" and ended["3"]["error_message"] == "refused"
    assert ended["4"]["output"] is None and "output_kind" not in ended["4"]
    recorded = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "0"]
    assert len(recorded[0].pop("crc")) == 8  # the line's checksum, its last key
    assert recorded[0] == {
        "schema_version": SCHEMA_VERSION,
        "event": "score.recorded",
        "case_id": "0",
        "epoch": 1,
        "score": "correct",
        "derived": False,
        "value": 1.0,
    }
    assert recorded[1]["rationale"] == "<b>fine</b> 很好"
    assert recorded[1]["metadata"] == {"raw": 75, "votes": [70, 80]}
    assert recorded[2]["derived"] is True
    bad = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "6"]
    assert bad[1]["error"]["code"] == "invalid_score" and "'high'" in bad[1]["error"]["message"]
    none = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "4"]
    assert none[1]["unscored"] == {"reason": "no_output"}
    assert events[-1]["status"] == "complete"


def test_log_is_written_as_the_run_goes(tmp_path: Path) -> None:
    seen: list[int] = []

    def task(question: str) -> str:
        folder = next(tmp_path.iterdir())
        text = (folder / "events.jsonl").read_text(encoding="utf-8")
        seen.append(text.count('"event":"case.ended"'))
        return question

    eb.run(DATA, task=task, store=tmp_path, concurrency=1, progress=False)
    assert seen == list(range(len(DATA)))  # every earlier case is on disk before the next runs


# -- save -----------------------------------------------------------------------------------


def test_save_an_in_memoryrun_t(tmp_path: Path) -> None:
    run = run_t(None)
    path = run.save(tmp_path)
    assert run.path == path and path.parent == tmp_path.resolve()
    assert_same(run, eb.load_run(path))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (path / name).unlink()
    assert_same(run, eb.load_run(path))
    assert [r for r in eb.runs(tmp_path)["status"]] == ["complete"]


def test_a_full_disk_does_not_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    calls = {"n": 0}

    def filling_up(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] > 3:  # the run's first events and two cases fit, then the disk is full
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", filling_up)  # how the log is written
    with pytest.warns(RuntimeWarning, match="No space left"):
        run = run_t(tmp_path, concurrency=1)
    monkeypatch.undo()
    assert len(run.cases) == len(DATA) and run.path is not None
    assert not (run.path / "summary.json").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partial = eb.load_run(run.path)
    assert int(partial.cases["outcome"].notna().sum()) < len(DATA)
    run.save()  # disk space is back: complete the folder
    assert_same(run, eb.load_run(run.path))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    assert_same(run, eb.load_run(run.path))


# -- two runs at once -----------------------------------------------------------------------


def test_two_runs_in_one_store_at_once(tmp_path: Path) -> None:
    barrier = threading.Barrier(2, timeout=30)
    out: dict[str, eb.Run] = {}

    def task(question: str) -> str:
        if question == "a":
            barrier.wait()  # both runs are mid-flight at the same time
        return question.upper()

    def go(key: str) -> None:
        out[key] = eb.run(DATA, task=task, name="twin", store=tmp_path, progress=False)

    threads = [threading.Thread(target=go, args=(k,)) for k in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(out) == {"x", "y"} and out["x"].path != out["y"].path
    for run in out.values():
        assert_same(run, eb.load_run(run.path))  # type: ignore[arg-type]
    assert len(eb.runs(tmp_path)) == 2


def test_resuming_a_folder_another_run_writes_is_refused(tmp_path: Path) -> None:
    refused: list[str] = []

    def task(question: str) -> str:
        if question == "b":  # mid-run: try to resume this very folder
            folder = next(tmp_path.iterdir())
            try:
                eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
            except eb.ConfigurationError as exc:
                refused.append(str(exc))
        return question.upper()

    run = eb.run(DATA, task=task, name="busy", store=tmp_path, concurrency=1, progress=False)
    assert len(refused) == 1 and "another run" in refused[0] and "resume=" in refused[0]
    assert run.path is not None and (run.path / "summary.json").exists()
    loaded = eb.load_run(run.path)
    assert loaded.cases["output"].tolist() == [q.upper() for q in DATA["question"]]
    assert len(list(tmp_path.iterdir())) == 1


def test_data_parquet_cannot_hold_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    mixed = pd.DataFrame({"question": ["a", "b"], "extra": [1, "two"]})  # Arrow rejects it
    with pytest.warns(RuntimeWarning, match="could not store the input data"):
        run = eb.run(mixed, task=lambda question: question, store=tmp_path, progress=False)
    assert run.path is not None and not (run.path / "data.parquet").exists()
    loaded = eb.load_run(run.path)
    assert loaded.cases["output"].tolist() == ["a", "b"]


def test_runs_lists_a_run_being_written_as_running(tmp_path: Path) -> None:
    seen: list[str] = []

    def task(question: str) -> str:
        if question == "b":
            seen.extend(eb.runs(tmp_path)["status"])
        return question

    run = eb.run(DATA, task=task, name="live", store=tmp_path, concurrency=1, progress=False)
    assert seen == ["running"]
    assert list(eb.runs(tmp_path)["status"]) == ["complete"]
    assert run.path is not None
