"""Runs with epochs in the run store: round trips, resume by sample, old logs (docs/repeats.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import seal

FIXTURES = Path(__file__).parent / "fixtures"
DATA = pd.DataFrame({"q": [f"q{i}" for i in range(6)], "target": [f"q{i}" for i in range(6)]})


def task(q: str, epoch: int) -> str:
    return q if (int(q[1:]) + epoch) % 3 else "wrong"


def exact(output: str, target: str) -> float:
    return float(output == target)


def _run(store: Path, **options: object) -> eb.Run:
    return eb.run(DATA, task, scorers=[exact], epochs=3, store=store, progress=False, **options)


def _same(a: eb.Run, b: eb.Run) -> None:
    assert_frame_equal(a.cases, b.cases)
    assert_frame_equal(a.scores, b.scores)
    assert_frame_equal(a.summary(), b.summary())
    assert_frame_equal(a.reduced(), b.reduced())


def test_a_run_with_epochs_loads_back_equal_from_its_files_and_from_its_log(
    tmp_path: Path,
) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    _same(eb.load_run(run.path), run)
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    _same(eb.load_run(run.path), run)  # the log alone
    lines = [json.loads(x) for x in (run.path / "events.jsonl").read_text().splitlines()]
    ended = [(e["case_id"], e["epoch"]) for e in lines if e["event"] == "case.ended"]
    assert sorted(ended) == sorted((str(i), e) for i in range(6) for e in (1, 2, 3))


def test_a_resume_with_other_epochs_is_refused_before_anything_runs(tmp_path: Path) -> None:
    run = _run(tmp_path)
    calls: list[str] = []
    with pytest.raises(eb.ConfigurationError, match=r"same epochs .* epochs=3; now: epochs=2"):
        eb.run(
            DATA,
            lambda q: calls.append(q) or q,
            scorers=[exact],
            epochs=2,
            resume=run.path,
            progress=False,
        )
    assert calls == []


def test_a_log_line_with_an_epoch_above_the_runs_is_damage_at_that_line(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    at = next(i for i, x in enumerate(lines) if '"case.ended"' in x and '"epoch":3' in x)
    body = json.loads(lines[at])
    body["epoch"] = 4
    del body["crc"]
    text = json.dumps(body, separators=(",", ":"))
    lines[at] = seal(text)
    log.write_text("".join(lines))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    with (
        pytest.warns(RuntimeWarning, match="incomplete"),
        pytest.warns(RuntimeWarning, match=rf"line {at + 1}: .*epoch 4"),
    ):
        loaded = eb.load_run(run.path)
    assert loaded.cases["outcome"].isna().sum() >= 1  # recovered up to the damaged line


def test_a_version_2_log_reads_as_one_epoch_per_case(tmp_path: Path) -> None:
    folder = tmp_path / "v2"
    shutil.copytree(FIXTURES / "v2-log", folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an old fixture may lack its data file
        run = eb.load_run(folder)
    assert set(run.cases["epoch"]) == {1}
    assert run.summary()["epochs"].tolist() == [1] * len(run.definitions)
    assert len(run.reduced()) == len(run.cases) * len(run.definitions)


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import pandas as pd
    import evalbook as eb

    store, calls = sys.argv[1], sys.argv[2]
    data = pd.DataFrame({"q": [f"q{i}" for i in range(6)], "target": [f"q{i}" for i in range(6)]})

    def task(q, epoch, case_id):
        with open(calls, "a") as f:
            f.write(f"{case_id} {epoch}\\n")
        if case_id == "3" and epoch == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return q if (int(q[1:]) + epoch) % 3 else "wrong"

    def exact(output, target):
        return float(output == target)

    eb.run(data, task, scorers=[exact], epochs=3, store=store, concurrency=1, progress=False)
    """
)


def test_kill_mid_epochs_then_resume_runs_each_missing_sample_once(tmp_path: Path) -> None:
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "EVALBOOK_PROGRESS": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "runs"), str(calls)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    before = calls.read_text().splitlines()
    (folder,) = (tmp_path / "runs").iterdir()
    with pytest.warns(RuntimeWarning, match="incomplete"):
        partial = eb.load_run(folder)
    done = partial.cases.dropna(subset=["outcome"])
    logged = set(zip(done["case_id"], done["epoch"], strict=True))
    assert ("3", 2) not in logged and ("3", 1) in logged

    seen: list[tuple[str, int]] = []

    def again(q: str, epoch: int, case_id: str) -> str:
        seen.append((case_id, epoch))
        return task(q, epoch)

    resumed = eb.run(
        DATA, again, scorers=[exact], epochs=3, resume=folder, progress=False, concurrency=1
    )
    everything = {(str(i), e) for i in range(6) for e in (1, 2, 3)}
    assert set(seen) == everything - logged and len(seen) == len(set(seen))
    assert not logged & set(seen)  # nothing whose end was logged ran again
    assert len(before) == len(logged) + 1  # the killed sample was the only one in flight
    fresh = eb.run(DATA, task, scorers=[exact], epochs=3, store=None, progress=False)
    assert_frame_equal(resumed.scores, fresh.scores)
    assert_frame_equal(eb.load_run(folder).reduced(), fresh.reduced())
    print(f"kill mid-epochs: {len(logged)} samples kept, {len(seen)} run on resume, 0 twice")


def test_a_version_2_run_folder_loads_from_its_files_as_from_its_log(tmp_path: Path) -> None:
    """Parquet files and summary.json of schema_version 2 (no epoch column; written by the
    evalbook of commit 3af200a) load, one epoch per case, equal to the log's replay."""
    folder = tmp_path / "v2"
    shutil.copytree(FIXTURES / "v2-files", folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no disagreement
        run = eb.load_run(folder)
    assert run.cases["epoch"].tolist() == [1, 1, 1, 1]
    assert run.cases["outcome"].astype(str).tolist() == ["passed"] * 3 + ["errored"]
    assert run.headline.text == "exact 67% over 3 of 4 cases · completed 75% (1 errored)"
    log_only = tmp_path / "log"
    log_only.mkdir()
    shutil.copy(folder / "events.jsonl", log_only / "events.jsonl")
    shutil.copy(folder / "data.parquet", log_only / "data.parquet")
    _same(eb.load_run(log_only), run)
