"""The store against faults: a concurrent resume, damaged or hostile files (file-formats.md)."""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import evalbook as eb
from _store_helpers import resealed
from evalbook._store import _door
from evalbook._store._log._file import being_written

DATA = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")


def _cut(folder: Path, keep_cases: int) -> None:
    """Leave the log as a kill would: the head and the first `keep_cases` cases, no end."""
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (folder / name).unlink()
    lines = (folder / "events.jsonl").read_text().splitlines(keepends=True)
    kept: list[str] = []
    ended = 0
    for line in lines:
        if '"run.ended"' in line:
            break
        if ended >= keep_cases and '"case.' in line:
            continue
        kept.append(line)
        ended += '"case.ended"' in line
    (folder / "events.jsonl").write_text("".join(kept))


def _interrupted(tmp_path: Path, keep_cases: int = 1) -> Path:
    run = eb.run(DATA, task=lambda question: question, name="cut", store=tmp_path, progress=False)
    assert run.path is not None
    _cut(run.path, keep_cases)
    return run.path


def test_a_resume_holds_the_log_lock_while_it_reads_the_stored_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _interrupted(tmp_path)
    seen: list[bool] = []
    read = _door.replay  # the one read of the log a resume does

    def spy(path: Any, **kwargs: Any) -> Any:
        seen.append(being_written(folder / "events.jsonl"))
        return read(path, **kwargs)

    monkeypatch.setattr(_door, "replay", spy)
    eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    assert seen == [True]  # another process cannot read the same state and run it too


def test_a_resume_while_another_holds_the_log_is_refused_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _interrupted(tmp_path)
    reads: list[Any] = []
    monkeypatch.setattr(_door, "replay", lambda path, **kw: reads.append(path))
    from evalbook._store._log._file import LogFile

    held = LogFile(folder / "events.jsonl", append=True)
    try:
        with pytest.raises(eb.ConfigurationError, match="another run"):
            eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    finally:
        held.close()
    assert reads == []


def test_a_failed_resume_releases_its_lock_so_a_second_try_runs(tmp_path: Path) -> None:
    folder = _interrupted(tmp_path)

    @eb.scorer
    def other(output: str) -> float:
        return 1.0

    with pytest.raises(eb.ConfigurationError, match="same scores"):
        eb.run(DATA, task=lambda question: question, scorers=[other], resume=folder, progress=False)
    assert not being_written(folder / "events.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        done = eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    assert done.cases["output"].tolist() == ["x", "y", "z"]


@eb.scorer
def half(output: str) -> float:
    """Every case scores 0.5."""
    return 0.5


def _scored(tmp_path: Path) -> Path:
    run = eb.run(
        DATA,
        task=lambda question: question,
        scorers=[half],
        name="vals",
        store=tmp_path,
        progress=False,
    )
    assert run.path is not None
    return run.path


@pytest.mark.parametrize("text", ["8.5", "Infinity", "-0.5", "true", '"1"', "NaN"])
def test_a_value_in_the_log_that_breaks_the_contract_loads_as_invalid_score(
    tmp_path: Path, text: str
) -> None:
    folder = _scored(tmp_path)
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (folder / name).unlink()  # the log decides
    log = folder / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if '"score.recorded"' in line)
    lines[first] = lines[first].replace('"value":0.5', f'"value":{text}')
    log.write_text(resealed("".join(lines)))  # a checksum that holds: the value is checked
    with pytest.warns(RuntimeWarning, match=r"events\.jsonl: 1 stored score value"):
        loaded = eb.load_run(folder)
    scores = loaded.scores
    assert scores["status"].tolist() == ["error", "scored", "scored"]
    assert scores["reason"].iloc[0] == "invalid_score"
    assert np.isnan(scores["value"].iloc[0])
    assert loaded.summary()["mean"].iloc[0] == 0.5


@pytest.mark.parametrize("bad", [8.5, float("inf"), -1.0])
def test_a_value_in_scores_parquet_that_breaks_the_contract_loads_as_invalid_score(
    tmp_path: Path, bad: float
) -> None:
    folder = _scored(tmp_path)
    table = pq.read_table(folder / "scores.parquet")
    values = table.column("value").to_pylist()
    values[1] = bad
    index = table.schema.get_field_index("value")
    table = table.set_column(index, "value", pa.array(values, pa.float64()))
    pq.write_table(table, folder / "scores.parquet")
    (folder / "events.jsonl").unlink()  # with its log, a run whose files disagree loads from it
    with (
        pytest.warns(RuntimeWarning, match="the final files disagree"),
        pytest.warns(RuntimeWarning, match=r"scores\.parquet: 1 stored score value"),
    ):
        loaded = eb.load_run(folder)
    assert loaded.scores["status"].tolist() == ["scored", "error", "scored"]
    assert loaded.scores["reason"].iloc[1] == "invalid_score"
    assert loaded.summary()["mean"].iloc[0] == 0.5


def test_a_text_or_bool_value_column_in_scores_parquet_is_not_converted(tmp_path: Path) -> None:
    folder = _scored(tmp_path)
    table = pq.read_table(folder / "scores.parquet")
    index = table.schema.get_field_index("value")
    table = table.set_column(index, "value", pa.array(["1", "0.5", "true"], pa.string()))
    pq.write_table(table, folder / "scores.parquet")
    (folder / "events.jsonl").unlink()  # with its log, a run whose files disagree loads from it
    with (
        pytest.warns(RuntimeWarning, match="the final files disagree"),
        pytest.warns(RuntimeWarning, match=r"scores\.parquet: 3 stored score value"),
    ):
        loaded = eb.load_run(folder)
    assert loaded.scores["status"].tolist() == ["error", "error", "error"]


def test_loading_a_killed_run_warns_with_its_name_and_how_many_cases_are_missing(
    tmp_path: Path,
) -> None:
    folder = _interrupted(tmp_path, keep_cases=1)
    with pytest.warns(RuntimeWarning, match=r"run 'cut' .* incomplete: 2 of 3 cases"):
        loaded = eb.load_run(folder)
    assert loaded.cases["outcome"].isna().sum() == 2


def test_loading_a_complete_run_does_not_warn(tmp_path: Path) -> None:
    folder = _scored(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eb.load_run(folder)


def _resume_again(folder: Path) -> Any:
    return eb.run(
        DATA, task=lambda question: question, scorers=[half], resume=folder, progress=False
    )


def test_a_garbage_data_parquet_loads_lists_and_resumes_from_the_log(tmp_path: Path) -> None:
    folder = _scored(tmp_path)
    (folder / "data.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.warns(RuntimeWarning, match=r"data\.parquet cannot be read"):
        loaded = eb.load_run(folder)
    assert loaded.scores["value"].tolist() == [0.5, 0.5, 0.5]
    assert eb.runs(tmp_path)["status"].tolist() == ["complete"]
    with pytest.warns(RuntimeWarning, match=r"data\.parquet cannot be read"):
        done = _resume_again(folder)
    assert done.scores["value"].tolist() == [0.5, 0.5, 0.5]


def test_a_truncated_summary_json_loads_lists_and_resumes_from_the_log(tmp_path: Path) -> None:
    folder = _scored(tmp_path)
    text = (folder / "summary.json").read_text()
    (folder / "summary.json").write_text(text[: len(text) // 2])
    with pytest.warns(RuntimeWarning, match=r"summary\.json"):
        loaded = eb.load_run(folder)
    assert loaded.scores["value"].tolist() == [0.5, 0.5, 0.5]
    with pytest.warns(RuntimeWarning, match=r"summary\.json cannot be read"):
        listed = eb.runs(tmp_path)
    assert listed["name"].tolist() == ["vals"] and listed["status"].tolist() == ["complete"]
    with pytest.warns(RuntimeWarning, match=r"summary\.json"):
        done = _resume_again(folder)
    assert done.scores["value"].tolist() == [0.5, 0.5, 0.5]
    assert eb.load_run(folder).name == "vals"  # the resume wrote a new summary.json


def test_an_output_that_cannot_be_encoded_is_isolated_to_its_case(tmp_path: Path) -> None:
    huge = 10**5000

    def task(question: str) -> Any:
        return {"x": huge, "y": [huge], "z": 3}[question]

    data = pd.DataFrame({"id": ["a", "b", "c"], "question": ["x", "y", "z"]}).set_index("id")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the log is not turned off
        run = eb.run(data, task=task, name="huge", store=tmp_path, progress=False)
    assert run.path is not None and (run.path / "summary.json").exists()
    loaded = eb.load_run(run.path)
    outputs = loaded.cases["output"].tolist()
    assert outputs[0].startswith("<int too long to write in decimal: 0x")
    assert outputs[1] == "<list object with a failing __repr__>"
    assert outputs[2] == 3
    assert loaded.cases["outcome"].tolist() == ["passed"] * 3
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    assert eb.load_run(run.path).cases["output"].tolist() == outputs  # the log holds them
    run.save()  # and it can be stored again


def _in_thread(call: Any) -> list[Any]:
    """Run `call` in a daemon thread; what it returned or raised (empty: it hung)."""
    out: list[Any] = []

    def target() -> None:
        try:
            out.append(call())
        except BaseException as exc:
            out.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout=60)  # a FIFO blocks its open for ever: the thread would never end
    return out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_named_events_jsonl_does_not_hang_load_runs_or_resume(tmp_path: Path) -> None:
    folder = _interrupted(tmp_path)
    (folder / "events.jsonl").unlink()
    os.mkfifo(folder / "events.jsonl")
    (loaded,) = _in_thread(lambda: eb.load_run(folder))
    assert isinstance(loaded, ValueError) and "not a regular file" in str(loaded)
    with pytest.warns(RuntimeWarning, match="skipping"):
        (listed,) = _in_thread(lambda: eb.runs(tmp_path))
    assert isinstance(listed, pd.DataFrame) and listed.empty
    (resumed,) = _in_thread(
        lambda: eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    )
    assert isinstance(resumed, eb.ConfigurationError)


def test_a_log_symlinked_out_of_its_folder_is_neither_read_nor_appended_to(
    tmp_path: Path,
) -> None:
    other = _interrupted(tmp_path / "a")
    folder = _interrupted(tmp_path / "b")
    before = (other / "events.jsonl").read_bytes()
    (folder / "events.jsonl").unlink()
    (folder / "events.jsonl").symlink_to(other / "events.jsonl")
    with pytest.raises(ValueError, match="outside its run folder"):
        eb.load_run(folder)
    with pytest.raises(eb.ConfigurationError):
        eb.run(DATA, task=lambda question: question, resume=folder, progress=False)
    assert (other / "events.jsonl").read_bytes() == before


class _Thing:
    def __repr__(self) -> str:
        return "Thing()"


def test_a_resume_keeps_the_repr_kind_of_every_kept_case(tmp_path: Path) -> None:
    run = eb.run(DATA, task=lambda question: _Thing(), name="k", store=tmp_path, progress=False)
    assert run.path is not None
    _cut(run.path, keep_cases=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eb.run(DATA, task=lambda question: _Thing(), resume=run.path, progress=False)
    kinds = pq.read_table(run.path / "cases.parquet").column("output_kind").to_pylist()
    assert kinds == ["repr", "repr", "repr"]
    loaded = eb.load_run(run.path)
    assert loaded.cases["output"].tolist() == ["Thing()"] * 3
    loaded.path = None  # as if held only in memory: resumed into a new folder
    moved = eb.run(
        DATA,
        task=lambda question: _Thing(),
        resume=loaded,
        store=tmp_path / "elsewhere",
        progress=False,
    )
    assert moved.path is not None and moved.path != run.path
    kinds = pq.read_table(moved.path / "cases.parquet").column("output_kind").to_pylist()
    assert kinds == ["repr", "repr", "repr"]
