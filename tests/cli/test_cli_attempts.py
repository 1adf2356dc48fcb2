"""`evalbook show RUN --attempts`: the retried samples' attempts, escaped (docs/cli.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _attempts_helpers import run_flaky
from _cli_helpers import assert_user_error, cli, in_process

SHOWN = 200  # retried samples `show --attempts` lists; the rest are counted (docs/cli.md)


def flaky_store(tmp_path: Path) -> Path:
    run_flaky(store=tmp_path / "runs", name="flaky")
    return tmp_path / "runs"


def test_attempts_lists_the_retried_samples_and_counts_the_rest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = flaky_store(tmp_path)
    code, out, err = in_process(capsys, "show", "flaky", "--attempts", "--store", str(store))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("flaky · attempts · id ")
    header = ["case_id", "epoch", "attempt", "outcome", "start", "duration", "error"]
    assert lines[2].split() == header
    rows = [line.split()[:4] for line in lines[4:9]]
    assert rows == [
        ["f", "1", "1", "errored"],
        ["f", "1", "2", "errored"],
        ["f", "1", "3", "passed"],
        ["f", "2", "1", "errored"],
        ["f", "2", "2", "errored"],
    ]
    assert lines[4].endswith("ConnectionError: reset #1")
    assert "TimeoutError: the task took longer than 0.2s" in out
    assert re.search(r"\+0\.0ms", lines[4]) and re.search(r"\d+\.\d(ms|s)", lines[4])
    assert "3 of 6 samples had more than one attempt (8 attempts); the other 3 had one" in out
    assert " t " not in out  # the samples with one attempt are counted, not listed


def test_a_run_without_retries_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    eb.run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x, store=tmp_path, name="calm")
    code, out, _ = in_process(capsys, "show", "calm", "--attempts", "--store", str(tmp_path))
    assert code == 0
    assert out.splitlines()[1] == "no sample was retried: each of the 2 cases had one attempt"


HOSTILE = [
    "\x1b[31mred\x1b[0m",
    "line\nbreak",
    "<script>alert(1)</script>",
    "\u202eevil",
    "x" * 5000,
    "\x00nul",
    "tab\there",
]


def test_hostile_text_is_shown_escaped_and_short(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], record_property: pytest.RecordProperty
) -> None:
    calls: dict[str, int] = {}

    def task(q: str, case_id: str) -> str:
        calls[case_id] = calls.get(case_id, 0) + 1
        if calls[case_id] == 1:
            raise RuntimeError(q)
        return q

    data = pd.DataFrame({"q": HOSTILE}, index=[f"{h[:20]}-{i}" for i, h in enumerate(HOSTILE)])
    eb.run(data, task=task, attempts=2, store=tmp_path, name="hostile", progress=False)
    code, out, _ = in_process(capsys, "show", "hostile", "--attempts", "--store", str(tmp_path))
    assert code == 0
    controls = [ch for ch in out if (ord(ch) < 32 and ch != "\n") or "\x7f" <= ch <= "\x9f"]
    controls += [ch for ch in out if ch == "\u202e"]
    lines = out.splitlines()
    n_rows = sum(1 for line in lines if "RuntimeError" in line)
    longest = max(len(line) for line in lines)
    print(f"hostile text: {len(HOSTILE)} tried, {len(controls)} raw control characters shown")
    record_property("hostile", f"{len(HOSTILE)} tried, {len(controls)} raw controls shown")
    assert controls == []
    assert n_rows == len(HOSTILE)  # a newline in a message never splits a row
    assert longest < 200  # the 5000-character message is cut
    assert "\\x1b[31mred" in out and "line\\nbreak" in out
    assert "<script>alert(1)</script>" in out  # plain text in a terminal: nothing runs it


def test_more_retried_samples_than_shown_are_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # 101 cases x 2 epochs, every sample retried once: the last case's 2 samples are not shown
    calls: dict[tuple[str, int], int] = {}

    def task(q: str, epoch: int) -> str:
        calls[q, epoch] = calls.get((q, epoch), 0) + 1
        if calls[q, epoch] == 1:
            raise ConnectionError("late" if q == "c100" else "reset")
        return q

    data = pd.DataFrame({"q": [f"c{i:03d}" for i in range(101)]})
    eb.run(data, task=task, attempts=2, epochs=2, store=tmp_path, name="many", progress=False)
    code, out, _ = in_process(capsys, "show", "many", "--attempts", "--store", str(tmp_path))
    assert code == 0
    assert "… 2 more retried samples: see run.attempts()" in out
    assert sum("ConnectionError: reset" in line for line in out.splitlines()) == SHOWN
    assert "late" not in out  # the last case's samples, beyond the first SHOWN, are not listed
    assert "202 of 202 samples had more than one attempt (404 attempts); the other 0 had one" in out


def test_attempts_of_an_old_log_mark_what_is_not_known(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from _store_helpers import drop_final_files, resealed

    store = flaky_store(tmp_path)
    (folder,) = store.iterdir()
    drop_final_files(folder)
    log = folder / "events.jsonl"
    text = re.sub(r',"tries":\[.*?\](?=,"crc")', "", log.read_text(encoding="utf-8"))
    log.write_text(resealed(text), encoding="utf-8")
    code, out, _ = in_process(capsys, "show", str(folder), "--attempts")
    assert code == 0
    assert out.splitlines()[4].split()[:5] == ["f", "1", "1", "—", "+0.0ms"]
    assert "—: not known (a log written before evalbook logged each attempt" in out


def test_attempts_with_pool_or_by_is_a_usage_error(tmp_path: Path) -> None:
    store = flaky_store(tmp_path)
    proc = cli("show", "flaky", "--attempts", "--by", "q", "--store", str(store), cwd=tmp_path)
    assert_user_error(proc, "--by does not apply with --attempts")
    proc = cli(
        "show", "flaky", "flaky", "--pool", "--attempts", "--store", str(store), cwd=tmp_path
    )
    assert_user_error(proc, "--pool does not apply with --attempts")
    proc = cli("show", "flaky", "--attempts", "--store", str(store), cwd=tmp_path)
    assert proc.returncode == 0 and "ConnectionError: reset #1" in proc.stdout
