"""Attempts in the run store: the `tries` of `case.ended` lines (docs/file-formats.md), read
back from the final files' run and from the log alone, from older logs, through a resume."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _attempts_helpers import DATA, check_flaky, flaky_task, run_flaky
from _store_helpers import as_v2, drop_final_files, resealed


def lines_of(folder: Path) -> list[dict[str, Any]]:
    text = (folder / "events.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines()]


def log_only(folder: Path, tmp: Path, text: str | None = None) -> Path:
    """A copy of a run folder with its log (as given) and data only, as after a crash."""
    out = tmp / f"log-{len(list(tmp.iterdir()))}"
    out.mkdir()
    log = (folder / "events.jsonl").read_text(encoding="utf-8") if text is None else text
    (out / "events.jsonl").write_text(log, encoding="utf-8")
    (out / "data.parquet").write_bytes((folder / "data.parquet").read_bytes())
    return out


def test_the_final_files_and_the_log_alone_give_the_same_attempts(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs")
    assert run.path is not None
    stored = eb.load_run(run.path)
    check_flaky(stored.attempts(), stored)
    assert_frame_equal(stored.attempts(), run.attempts())
    crashed = eb.load_run(log_only(run.path, tmp_path))
    assert_frame_equal(crashed.attempts(), run.attempts())
    ended = [e for e in lines_of(run.path) if e["event"] == "case.ended"]
    retried = [e for e in ended if e["attempt"] > 1]
    assert all(len(e["tries"]) == e["attempt"] for e in retried)
    assert not any("tries" in e for e in ended if e["attempt"] == 1)  # only retried samples


def without_tries(text: str) -> str:
    """The log as evalbook wrote it before attempts were logged: no `tries` key."""
    return resealed(re.sub(r',"tries":\[.*?\](?=,"crc")', "", text))


def test_a_log_without_tries_gives_the_start_times_it_has(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs")
    assert run.path is not None
    old = without_tries((run.path / "events.jsonl").read_text(encoding="utf-8"))
    assert '"tries"' not in old
    folder = log_only(run.path, tmp_path, old)
    table = eb.load_run(folder).attempts()
    full = run.attempts()
    assert len(table) == len(full)
    assert table["started_at"].tolist() == full["started_at"].tolist()  # case.started times
    last = table.groupby(["case_id", "epoch"]).cumcount(ascending=False) == 0
    # the final attempt is the sample's; earlier ones have no outcome, error or duration
    assert table["outcome"][~last].isna().all() and table["error_type"][~last].isna().all()
    assert table["duration_s"][~last].isna().all()
    plain = {"outcome": object, "error_type": object}  # categories: of the rows each one has
    assert_frame_equal(
        table[last].astype(plain), full[last].astype(plain), check_exact=False, atol=1e-3
    )
    # version 2 (no epoch: one epoch per case) reads the same way
    v2 = run_flaky(store=tmp_path / "v2", epochs=1)
    assert v2.path is not None
    text = as_v2(without_tries((v2.path / "events.jsonl").read_text(encoding="utf-8")))
    two = eb.load_run(log_only(v2.path, tmp_path, text)).attempts()
    assert two["started_at"].tolist() == v2.attempts()["started_at"].tolist()
    assert two["outcome"].isna().tolist() == [True, True, False, False, False]


def test_final_files_with_an_old_log_give_what_the_log_has(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs")
    assert run.path is not None
    log = run.path / "events.jsonl"
    log.write_text(without_tries(log.read_text(encoding="utf-8")), encoding="utf-8")
    from_files = eb.load_run(run.path).attempts()
    from_log = eb.load_run(log_only(run.path, tmp_path)).attempts()
    assert_frame_equal(from_files, from_log)


def test_final_files_without_a_log_show_retries_as_not_known(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs")
    assert run.path is not None
    (run.path / "events.jsonl").unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no log to read: nothing to warn of
        table = eb.load_run(run.path).attempts()
    assert len(table) == len(run.attempts())
    assert table["outcome"].isna().sum() == 5  # the 5 retried attempts


def test_a_damaged_tries_ends_the_read_at_its_line(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs", concurrency=1)
    assert run.path is not None
    text = (run.path / "events.jsonl").read_text(encoding="utf-8")
    bad = resealed(text.replace('"tries":[{"outcome":"errored"', '"tries":[{"outcome":"lost"', 1))
    folder = log_only(run.path, tmp_path, bad)
    with pytest.warns(RuntimeWarning) as caught:
        loaded = eb.load_run(folder)
    messages = [str(w.message) for w in caught]
    assert any("unknown outcome 'lost' in 'tries'" in m for m in messages), messages
    assert loaded.cases["outcome"].isna().all()  # the first sample's line: nothing after counts


def test_a_resume_keeps_the_attempts_of_the_samples_it_kept(tmp_path: Path) -> None:
    run = run_flaky(store=tmp_path / "runs", concurrency=1)
    assert run.path is not None
    drop_final_files(run.path)
    log = run.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    ended = [i for i, line in enumerate(lines) if '"case.ended"' in line]
    log.write_text("".join(lines[: ended[3] + 1]), encoding="utf-8")  # 4 samples of 6 kept
    with pytest.warns(RuntimeWarning, match="incomplete"):
        kept = eb.load_run(run.path).attempts()
    resumed = eb.run(
        DATA,
        task=flaky_task(),
        scorers=[lambda output: float(output != "")],
        attempts=3,
        epochs=2,
        timeout=0.2,
        resume=run.path,
        progress=False,
    )
    table = resumed.attempts()
    check_flaky(table, resumed)
    assert_frame_equal(table.iloc[: len(kept)], kept)  # the kept samples' rows, unchanged
    assert_frame_equal(eb.load_run(run.path).attempts(), table)


def test_a_rescore_of_a_stored_run_logs_its_attempts(tmp_path: Path) -> None:
    run = eb.load_run(run_flaky(store=tmp_path / "runs").path or "")
    again = run.rescore(scorers=[lambda output: 0.5], progress=False)
    assert again.path is not None and again.path != run.path
    assert_frame_equal(eb.load_run(again.path).attempts(), run.attempts())
    frame = pd.DataFrame(lines_of(again.path))
    assert frame["tries"].notna().sum() == 3  # f's two epochs and s's epoch 2


def test_final_files_with_a_damaged_tries_line_show_those_attempts_as_not_known(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    run = run_flaky(store=tmp_path / "runs", concurrency=1)
    assert run.path is not None
    log = run.path / "events.jsonl"
    text = log.read_text(encoding="utf-8")
    log.write_text(text.replace("reset #1", "reset #9", 1), encoding="utf-8")  # crc now wrong
    loaded = eb.load_run(run.path)  # the final files decide the run; the log only its attempts
    assert_frame_equal(loaded.cases, run.cases)
    table = loaded.attempts()
    unknown = int(table["outcome"].isna().sum())
    print(f"damaged tries line: {len(table)} rows, {unknown} attempts not known, 0 made up")
    record_property("damaged_tries", f"{len(table)} rows, {unknown} not known")
    assert len(table) == len(run.attempts())
    assert "reset #9" not in table["error_message"].tolist()  # never read from a bad line
    assert unknown == 5  # the scan and the replay stop at the first retried sample's line


def test_saving_an_in_memory_run_logs_its_attempts(tmp_path: Path) -> None:
    run = run_flaky()
    folder = run.save(tmp_path / "saved")
    assert_frame_equal(eb.load_run(folder).attempts(), run.attempts())
    assert_frame_equal(eb.load_run(log_only(folder, tmp_path)).attempts(), run.attempts())
