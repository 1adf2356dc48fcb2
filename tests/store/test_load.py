"""Reading the run store: eb.load_run (from files or the log alone), versions, eb.runs()."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import (
    DATA,
    SCHEMA_VERSION,
    assert_same,
    exact,
    run_t,
)

# -- load_run -------------------------------------------------------------------------------


def test_load_from_parquet_is_identical(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    loaded = eb.load_run(run.path)
    assert_same(run, loaded)
    assert loaded.path == run.path
    assert loaded.options == run.options
    assert list(loaded.data["question"]) == list(DATA["question"])


def test_load_keeps_the_summary_it_checked_summary_json_against(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    loaded = eb.load_run(run.path)
    # computed once, by the check: a million-sample run's headline does not compute it again
    assert "_summary" in vars(loaded)
    pd.testing.assert_frame_equal(loaded.summary(cluster=False), run.summary())
    first = loaded.summary(cluster=False)
    first.loc[0, "mean"] = -1.0  # a copy each time: the kept one is not changed
    assert loaded.summary()["mean"].iloc[0] == run.summary()["mean"].iloc[0]


def test_load_from_the_log_alone_is_identical(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    assert_same(run, eb.load_run(run.path))


def test_unreadable_final_files_fall_back_to_the_log(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    (run.path / "scores.parquet").write_bytes(b"")  # e.g. a power cut before writeback
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        loaded = eb.load_run(run.path)
    assert_same(run, loaded)


def test_an_interrupted_run_can_be_resumed(tmp_path: Path) -> None:
    def task(question: str) -> str:
        if question == "none":
            raise KeyboardInterrupt
        return question.upper()

    with pytest.raises(KeyboardInterrupt):
        eb.run(DATA, task=task, scorers=[exact], store=tmp_path, concurrency=1, progress=False)
    (folder,) = list(tmp_path.iterdir())
    assert eb.runs(tmp_path)["status"].tolist() == ["incomplete"]
    with pytest.warns(RuntimeWarning, match="is incomplete: 4 of 8 cases have no final"):
        partial = eb.load_run(folder)
    assert partial.cases["outcome"].notna().sum() == 4  # a, b, err, fail
    calls: list[str] = []

    def again(question: str) -> str:
        calls.append(question)
        return question.upper()

    done = eb.run(DATA, task=again, scorers=[exact], resume=folder, progress=False)
    assert calls == ["none", "boom", "bad", "c"]
    assert done.cases["outcome"].notna().all()
    assert eb.runs(tmp_path)["status"].tolist() == ["complete"]


def test_load_accepts_a_file_of_the_folder(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    assert_same(run, eb.load_run(run.path / "summary.json"))


def test_load_missing_or_not_arun_t(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no run folder"):
        eb.load_run(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="not a stored run"):
        eb.load_run(tmp_path)


def test_truncated_last_line_is_tolerated(tmp_path: Path) -> None:
    run = run_t(tmp_path, concurrency=1)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    last_case = max(i for i, line in enumerate(lines) if b'"case.ended"' in line)
    # the crash happened while the last case's case.ended line was being written
    log.write_bytes(b"".join(lines[:last_case]) + lines[last_case][:25])
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    with pytest.warns(RuntimeWarning, match="truncated"):
        loaded = eb.load_run(run.path)
    n = len(DATA)
    assert loaded.cases["outcome"].isna().tolist() == [False] * (n - 1) + [True]
    assert_frame_equal(loaded.cases.iloc[: n - 1], run.cases.iloc[: n - 1])
    assert loaded.headline.completion is not None and "1 not run" in loaded.headline.text


def test_a_damaged_middle_line_is_an_error(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = "{not json\n"
    log.write_text("".join(lines), encoding="utf-8")
    (run.path / "summary.json").unlink()
    # the read recovers up to the damaged line (it used to raise), naming file and line
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(RuntimeWarning, match=r"events\.jsonl, line 6: not a JSON line"),
    ):
        loaded = eb.load_run(run.path)
    assert loaded.cases["outcome"].isna().all()  # line 6 is the first case's: none loads


def _bump_json(path: Path, line: int | None = None) -> None:
    if line is None:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["schema_version"] = 99
        path.write_text(json.dumps(data), encoding="utf-8")
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    event = json.loads(lines[line])
    event["schema_version"] = 99
    lines[line] = json.dumps(event) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_schema_version_mismatch_names_both_versions(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    _bump_json(run.path / "summary.json")
    with pytest.raises(
        ValueError,
        match=rf"summary\.json has schema_version 99.*reads schema_version {SCHEMA_VERSION}",
    ):
        eb.load_run(run.path)
    (run.path / "summary.json").unlink()
    _bump_json(run.path / "events.jsonl", line=7)
    with pytest.raises(
        ValueError, match=rf"line 8\) has schema_version 99.*schema_version {SCHEMA_VERSION}"
    ):
        eb.load_run(run.path)


def test_parquet_schema_version_is_checked(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run = run_t(tmp_path)
    assert run.path is not None
    path = run.path / "scores.parquet"
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    assert json.loads(meta[b"evalbook"])["schema_version"] == SCHEMA_VERSION
    meta[b"evalbook"] = json.dumps({"schema_version": 7, "table": "scores"}).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(ValueError, match=r"scores\.parquet has schema_version 7"):
        eb.load_run(run.path)


def test_summary_json_content(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    summary = json.loads((run.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["schema_version"] == SCHEMA_VERSION
    assert summary["status"] == "complete" and summary["n_cases"] == len(DATA)
    assert summary["headline"]["text"] == run.headline.text
    assert summary["headline"]["score"] == "pass"
    assert [d["name"] for d in summary["definitions"]] == ["correct", "judged", "pass"]
    assert [row["score"] for row in summary["summary"]] == ["correct", "judged", "pass"]


def test_value_column_stays_float64_and_names_categorical(tmp_path: Path) -> None:
    run = run_t(tmp_path)
    assert run.path is not None
    scores = pd.read_parquet(run.path / "scores.parquet")
    assert scores["value"].dtype == np.float64
    assert isinstance(scores["score"].dtype, pd.CategoricalDtype)
    assert isinstance(scores["status"].dtype, pd.CategoricalDtype)


# -- runs() ---------------------------------------------------------------------------------


def test_runs_lists_complete_and_incomplete_and_ignores_the_rest(tmp_path: Path) -> None:
    first = run_t(tmp_path, name="first")
    second = run_t(tmp_path, name="second")
    assert second.path is not None
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (second.path / name).unlink()
    log = second.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:-6]), encoding="utf-8")  # cut the end off: a crash
    (tmp_path / "notes.txt").write_text("not a run")
    (tmp_path / "empty-folder").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "events.jsonl").write_text(
        f'{{"schema_version": {SCHEMA_VERSION}, "event": "x"}}\n'
    )
    with pytest.warns(RuntimeWarning, match=r"skipping .*junk.*line 1: no checksum"):
        table = eb.runs(tmp_path)
    assert list(table.columns) == [
        "name",
        "id",
        "path",
        "started_at",
        "status",
        "n_cases",
        "completion",
        "headline",
    ]
    assert table["name"].tolist() == ["first", "second"]
    assert table["id"].tolist() == [first.id, second.id]
    assert table["status"].tolist() == ["complete", "incomplete"]
    assert table["path"].tolist() == [str(first.path), str(second.path)]
    assert all(Path(p).is_absolute() for p in table["path"])
    assert table["n_cases"].tolist() == [len(DATA), len(DATA)]
    assert table["headline"][0] == first.headline.text
    assert table["completion"][0] == first.headline.completion
    assert table["completion"][1] < table["completion"][0]
    assert isinstance(table["started_at"].dtype, pd.DatetimeTZDtype)


def test_runs_of_a_missing_store_is_an_error_naming_it(tmp_path: Path) -> None:
    # as `evalbook runs` does: an empty frame would hide a typo in the folder name
    with pytest.raises(FileNotFoundError, match=f"no run store at {tmp_path / 'none'}"):
        eb.runs(tmp_path / "none")
    (tmp_path / "empty").mkdir()
    table = eb.runs(tmp_path / "empty")
    assert table.empty and "headline" in table.columns
