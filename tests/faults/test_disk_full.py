"""A disk that fills, on a real small file system (a tmpfs of 200 KB, mounted for the test).

What was logged stays, the run goes on in memory with one warning, the final files are all
there or none, and a resume on a full disk leaves the stored run exactly as it was
(docs/design.md, "The run store: what is logged survives"). Mounting needs root; elsewhere
the tests skip.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import assert_same
from evalbook._store import _sink  # the fault is injected between the log and the final files

FINAL = ("cases.parquet", "scores.parquet", "summary.json")


def _unmount(point: Path) -> None:
    """Unmount `point`; a file still open (a log's fsync thread closing it) is waited for."""
    for _ in range(50):
        if subprocess.run(["umount", str(point)], capture_output=True).returncode == 0:
            return
        time.sleep(0.1)
    subprocess.run(["umount", "-l", str(point)], capture_output=True)  # detach at least


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Mount a tmpfs of a given size (e.g. "200k") in tmp_path; unmounted in teardown."""
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            pytest.skip("mounting a small tmpfs needs root (a full disk cannot be made here)")
        if shutil.which("mount") is None:
            pytest.skip("no mount command on this machine")
        point = tmp_path / f"fs{len(mounted)}"
        point.mkdir()
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(point)],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")
        mounted.append(point)
        return point

    try:
        yield mount
    finally:
        for point in reversed(mounted):
            _unmount(point)


def _fill(folder: Path, leave: int = 0) -> Path:
    """Take every free byte of the file system `folder` is on but `leave`; the filler file."""
    filler = folder / "filler.bin"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        for chunk in (65536, 4096, 1):
            while True:
                try:
                    if os.write(fd, b"\xff" * chunk) < chunk:
                        break
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    os.truncate(filler, filler.stat().st_size - leave)
    return filler


def _data(n: int) -> pd.DataFrame:
    ids = [f"case-{i:05d}" for i in range(n)]
    return pd.DataFrame({"id": ids, "question": [f"question {i}" for i in range(n)]}).set_index(
        "id"
    )


def task(question: str) -> str:
    return f"the answer to {question} is {len(question) * 7}"


def scorer(output: str) -> float:
    return 1.0 if output.endswith("7") else 0.5


def _run(data: pd.DataFrame, store: Path | None, **kw: Any) -> eb.Run:
    return eb.run(data, task=task, scorers=[scorer], name="full", store=store, progress=False, **kw)


def _bytes_per_case(tmp_path: Path) -> float:
    """How many log bytes one case of these runs takes (measured on a normal disk)."""
    small, large = _run(_data(20), tmp_path / "a"), _run(_data(120), tmp_path / "b")
    assert small.path is not None and large.path is not None
    sizes = [(p.path / "events.jsonl").stat().st_size for p in (small, large)]  # type: ignore[operator]
    return (sizes[1] - sizes[0]) / 100


def _quiet_load(path: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the incomplete-run warning
        return eb.load_run(path)


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _temps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


def test_a_log_of_130_kb_fits_a_200_kb_disk_whole(
    tmp_path: Path, small_fs: Callable[[str], Path], record_property: Any
) -> None:
    n = int(130_000 / _bytes_per_case(tmp_path))
    fs = small_fs("200k")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no reservation ahead, nothing to warn about
        run = _run(_data(n), fs)
    assert run.path is not None
    logged = (run.path / "events.jsonl").stat().st_size
    figure = f"200 KB file system: {n} cases, {logged} log bytes, every file written"
    print(figure)
    record_property("disk_fits", figure)
    assert 110_000 < logged < 150_000
    assert all((run.path / name).exists() for name in FINAL)
    assert_same(run, eb.load_run(run.path))
    for name in FINAL:  # the log alone holds the same run
        (run.path / name).unlink()
    assert_same(run, eb.load_run(run.path))


def test_a_run_larger_than_the_disk_keeps_what_was_logged_and_goes_on_in_memory(
    tmp_path: Path, small_fs: Callable[[str], Path], record_property: Any
) -> None:
    n = int(330_000 / _bytes_per_case(tmp_path))
    fs = small_fs("200k")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = _run(_data(n), fs)
    messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(messages) == 1, messages  # one warning a run, not one a case
    assert run.path is not None
    assert "disk is full" in messages[0] and str(run.path) in messages[0]
    assert "run.save(store)" in messages[0]
    # the run itself is whole: its tables and headline are those of a run kept in memory
    memory = _run(_data(n), None)
    assert run.cases["outcome"].eq("passed").all() and len(run.cases) == n
    timing = ["started_at", "duration_s"]
    assert_frame_equal(run.cases.drop(columns=timing), memory.cases.drop(columns=timing))
    assert_frame_equal(run.scores, memory.scores)
    assert_frame_equal(run.summary(), memory.summary())
    assert run.headline == memory.headline
    # what was logged stays: the final files that could not fit left nothing behind
    assert not [name for name in FINAL if (run.path / name).exists()]
    assert _temps(run.path) == []
    stored = _quiet_load(run.path)
    kept = stored.cases["outcome"].notna().to_numpy()
    logged = (run.path / "events.jsonl").stat().st_size
    figure = f"200 KB file system: {logged} log bytes, {kept.sum()} of {n} cases kept"
    print(figure)
    record_property("disk_full", figure)
    assert 0 < kept.sum() < n
    assert_frame_equal(
        stored.cases[kept].reset_index(drop=True), run.cases[kept].reset_index(drop=True)
    )
    scored = stored.scores["case_id"].isin(stored.cases["case_id"][kept]).to_numpy()
    assert_frame_equal(
        stored.scores[scored].reset_index(drop=True), run.scores[scored].reset_index(drop=True)
    )
    assert stored.scores[~scored]["value"].isna().all()  # not run: no value, no outcome
    # another disk holds it whole
    elsewhere = run.save(tmp_path / "elsewhere")
    assert elsewhere.parent == (tmp_path / "elsewhere").resolve() and run.path == elsewhere
    assert_same(run, eb.load_run(elsewhere))


def test_final_files_that_do_not_fit_leave_none_behind_and_the_log_decides(
    tmp_path: Path, small_fs: Callable[[str], Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    fs = small_fs("200k")
    fillers: list[Path] = []
    real = _sink.finish_files

    def fill_then_finish(run: Any, *args: Any) -> None:
        fillers.append(_fill(run.path))  # the log is complete: now the disk is full
        real(run, *args)

    monkeypatch.setattr(_sink, "finish_files", fill_then_finish)
    with pytest.warns(RuntimeWarning, match="final files") as caught:
        run = _run(_data(40), fs)
    monkeypatch.undo()
    assert len(caught) == 1 and "disk is full" in str(caught[0].message)
    assert run.path is not None
    assert not [name for name in FINAL if (run.path / name).exists()]
    assert _temps(run.path) == []
    assert_same(run, eb.load_run(run.path))  # from the complete log, without a warning
    fillers[0].unlink()
    assert run.save() == run.path  # space again: completed in place
    assert all((run.path / name).exists() for name in FINAL)
    assert_same(run, eb.load_run(run.path))


def test_a_disk_full_before_the_data_is_written_leaves_a_log_that_loads(
    tmp_path: Path, small_fs: Callable[[str], Path]
) -> None:
    fs = small_fs("200k")
    _fill(fs, leave=4096)  # one page: the log's first lines, not the data
    with pytest.warns(RuntimeWarning, match="disk is full") as caught:
        run = _run(_data(40), fs)
    assert len(caught) == 1 and "data.parquet" in str(caught[0].message)
    assert run.path is not None and run.cases["outcome"].eq("passed").all()
    assert sorted(p.name for p in run.path.iterdir()) == ["events.jsonl"]
    with pytest.warns(RuntimeWarning) as loading:
        stored = eb.load_run(run.path)
    said = " ".join(str(w.message) for w in loading)
    assert "data.parquet is missing" in said and "incomplete: 40 of 40" in said
    assert stored.cases["case_id"].tolist() == run.cases["case_id"].tolist()
    assert_same(run, eb.load_run(run.save(tmp_path / "elsewhere")))


def test_a_disk_too_full_for_the_log_stores_nothing_and_the_run_goes_on(
    tmp_path: Path, small_fs: Callable[[str], Path]
) -> None:
    fs = small_fs("200k")
    _fill(fs)
    with pytest.warns(RuntimeWarning, match="disk is full") as caught:
        run = _run(_data(40), fs)
    assert len(caught) == 1 and "nothing of it is stored" in str(caught[0].message)
    assert run.path is not None and run.cases["outcome"].eq("passed").all()
    assert list(run.path.iterdir()) == []  # no empty log, no temporary file
    assert eb.runs(fs)["path"].tolist() == []
    assert_same(run, eb.load_run(run.save(tmp_path / "elsewhere")))


def _interrupted(fs: Path, data: pd.DataFrame, keep: int) -> Path:
    """A stored run as a kill leaves it: its log up to the `keep`-th case's end, no end."""
    run = _run(data, fs)
    assert run.path is not None
    for name in FINAL:
        (run.path / name).unlink()
    lines = (run.path / "events.jsonl").read_bytes().splitlines(keepends=True)
    ends = [i for i, line in enumerate(lines) if b'"case.ended"' in line]
    (run.path / "events.jsonl").write_bytes(b"".join(lines[: ends[keep - 1] + 1]))
    return run.path


@pytest.mark.parametrize("same_data", [True, False], ids=["same data", "new data"])
def test_a_resume_on_a_full_disk_leaves_the_stored_run_as_it_was(
    small_fs: Callable[[str], Path], same_data: bool, record_property: Any
) -> None:
    fs = small_fs("200k")
    data = _data(40)
    folder = _interrupted(fs, data, keep=15)
    again = data if same_data else data.assign(extra=[f"x{i}" for i in range(len(data))])
    filler = _fill(fs)
    before = _snapshot(folder)
    assert "data.parquet" in before
    with pytest.warns(RuntimeWarning, match="disk is full") as caught:
        resumed = eb.run(again, task=task, scorers=[scorer], resume=folder, progress=False)
    assert len(caught) == 1, [str(w.message) for w in caught]
    assert str(folder) in str(caught[0].message)
    assert resumed.cases["outcome"].eq("passed").all()  # the rest ran, in memory
    after = _snapshot(folder)
    changed = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
    log_before, log_after = before["events.jsonl"], after["events.jsonl"]
    added = log_after[len(log_before) :].count(b"\n")
    figure = (
        f"resume on a full disk ({'same' if same_data else 'new'} data): files changed "
        f"{changed}, {added} whole lines appended in the log's last page"
    )
    print(figure)
    record_property("resume_full_disk", figure)
    if same_data:  # nothing to write but the log: it takes what still fits, whole lines
        assert log_after.startswith(log_before) and log_after.endswith(b"\n")
        assert [k for k in changed if k != "events.jsonl"] == []
    else:  # the new data could not be written: nothing stored changed at all
        assert changed == []
        assert "data.parquet" in str(caught[0].message)
    # the lock was released and the stored run is intact: with space, it resumes whole
    filler.unlink()
    done = eb.run(again, task=task, scorers=[scorer], resume=folder, progress=False)
    assert done.cases["outcome"].eq("passed").all()
    assert_same(done, eb.load_run(folder))
    assert_frame_equal(eb.load_run(folder).data, again)
