"""Transcripts in the run store: transcripts.jsonl, read on first use, kept by resume and save."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _public import STEP_COLUMNS, STEP_COUNT_COLUMNS, TOOL_CALL_COLUMNS

AGENT = """
import time
import evalbook as eb

SCORE = eb.define_score("ok", primary=True)


@eb.scorer(SCORE)
def ok(output):
    return 1.0


def task(question, case_id, epoch, ctx):
    n = int(case_id[1:])
    ctx.step(role="user", content=question + " <script>alert(1)</script>")
    for k in range(n % 4):
        ctx.step(role="assistant", tool_calls=[
            {"id": f"t{k}", "function": {"name": "search", "arguments": {"q": k}}}])
        ctx.step(role="tool", tool_call_id=f"t{k}", content=f"found {k}\\u00e9",
                 error="boom" if (n + k) % 5 == 0 else None, latency_s=0.01 * k)
    time.sleep(float(__import__("os").environ.get("AGENT_SLEEP", "0")))
    ctx.step(role="assistant", content=f"answer {n}", model="m", input_tokens=3, output_tokens=1)
    return f"answer {n}"
"""


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    (tmp_path / "agent_mod.py").write_text(AGENT)
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    import agent_mod

    return importlib.reload(agent_mod)


def frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {"id": [f"c{i}" for i in range(n)], "question": [f"q{i}" for i in range(n)]}
    )


def run_agent(agent: Any, n: int, store: Path | None, **kw: Any) -> eb.Run:
    return eb.run(frame(n), task=agent.task, scores=[agent.SCORE], scorers=[agent.ok],
                  store=store, progress=False, **kw)  # fmt: skip


def test_a_stored_run_gives_the_same_tables_and_loads_without_reading_them(
    agent: Any, tmp_path: Path
) -> None:
    run = run_agent(agent, 12, tmp_path / "runs", epochs=2)
    assert list(run.steps().columns) == STEP_COLUMNS
    assert list(run.tool_calls().columns) == TOOL_CALL_COLUMNS
    assert list(run.cases.columns[-3:]) == STEP_COUNT_COLUMNS
    assert run.path is not None
    (run.path / "transcripts.jsonl").rename(run.path / "aside")  # loading must not need it
    loaded = eb.load_run(run.path)
    pd.testing.assert_frame_equal(loaded.cases, run.cases)
    loaded.summary()
    loaded.headline  # noqa: B018
    loaded.scores  # noqa: B018
    assert loaded.results.transcripts is None  # nothing read them
    (run.path / "aside").rename(run.path / "transcripts.jsonl")
    pd.testing.assert_frame_equal(loaded.steps(), run.steps())
    pd.testing.assert_frame_equal(loaded.tool_calls(), run.tool_calls())
    # the log holds counts and ties, never message text
    log = (run.path / "events.jsonl").read_text()
    assert "<script>" not in log and "found" not in log
    lines = (run.path / "transcripts.jsonl").read_text().splitlines()
    assert len(lines) == 24
    steps_file = pd.read_parquet(run.path / "steps.parquet")
    assert len(steps_file) == len(run.steps())


def test_a_run_without_transcripts_has_no_file_and_no_columns(tmp_path: Path) -> None:
    score = eb.define_score("s", primary=True)
    run = eb.run(frame(3), task=lambda question: question, scores=[score], scorers=[],
                 store=tmp_path, progress=False)  # fmt: skip
    assert run.path is not None
    assert not (run.path / "transcripts.jsonl").exists()
    assert not (run.path / "steps.parquet").exists()
    assert "n_steps" not in eb.load_run(run.path).cases.columns
    assert len(eb.load_run(run.path).steps()) == 0


def test_a_damaged_line_is_reported_with_file_and_line_and_never_read(
    agent: Any, tmp_path: Path
) -> None:
    run = run_agent(agent, 6, tmp_path)
    assert run.path is not None
    path = run.path / "transcripts.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "answer 2" in line)
    lines[at] = lines[at].replace("answer 2", "answer 9")  # a changed byte: checksum mismatch
    path.write_text("".join(lines))
    where = rf"transcripts\.jsonl, line {at + 1}: checksum mismatch"
    with pytest.warns(RuntimeWarning, match=where):
        calls = eb.load_run(run.path).tool_calls()
    assert "c2" not in set(calls["case_id"].astype(str))
    (run.path / "summary.json").unlink()  # from the log alone: no final steps table either
    loaded = eb.load_run(run.path)
    with pytest.warns(RuntimeWarning, match=where):
        steps = loaded.steps()
    assert "answer 9" not in set(steps["content"])
    assert "c2" not in set(steps["case_id"].astype(str))  # no steps rather than other steps
    assert set(steps["case_id"].astype(str)) == {"c0", "c1", "c3", "c4", "c5"}
    assert pd.isna(loaded.cases["n_steps"].iloc[2])


def test_a_line_no_case_ended_names_is_never_read(agent: Any, tmp_path: Path) -> None:
    run = run_agent(agent, 3, tmp_path)
    assert run.path is not None
    path = run.path / "transcripts.jsonl"
    first = path.read_text().splitlines(keepends=True)[0]
    # a later attempt's line for c0 that never ended: same sample, other content, sealed
    event = json.loads(first)
    del event["crc"]
    event["messages"] = [{"role": "user", "content": "an attempt that never ended"}]
    body = json.dumps(event, separators=(",", ":"))
    import zlib

    line = f'{body[:-1]},"crc":"{zlib.crc32(body.encode()):08x}"}}\n'
    with path.open("a") as f:
        f.write(line)
    loaded = eb.load_run(run.path)
    pd.testing.assert_frame_equal(loaded.steps(), run.steps())


def test_save_elsewhere_and_rescore_keep_the_transcripts(agent: Any, tmp_path: Path) -> None:
    run = run_agent(agent, 5, tmp_path / "a")
    assert run.path is not None
    copy = eb.load_run(eb.load_run(run.path).save(tmp_path / "b"))
    pd.testing.assert_frame_equal(copy.steps(), run.steps())
    memory = run_agent(agent, 5, None)
    saved = eb.load_run(memory.save(tmp_path / "c"))
    pd.testing.assert_frame_equal(saved.steps(), memory.steps())
    rescored = eb.load_run(run.path).rescore(scorers=[agent.ok], scores=[agent.SCORE])
    pd.testing.assert_frame_equal(rescored.steps(), run.steps())


CHILD = """
import sys, evalbook as eb, pandas as pd
sys.path.insert(0, sys.argv[1])
import agent_mod
frame = pd.DataFrame({"id": [f"c{i}" for i in range(40)], "question": [f"q{i}" for i in range(40)]})
print("go", flush=True)
eb.run(frame, task=agent_mod.task, scores=[agent_mod.SCORE], scorers=[agent_mod.ok],
       store=sys.argv[2], progress=False, concurrency=4)
"""


def test_kill_9_then_resume_keeps_every_transcript(
    agent: Any, tmp_path: Path, record_property: Any
) -> None:
    store = tmp_path / "runs"
    env = {**os.environ, "AGENT_SLEEP": "0.05", "EVALBOOK_PROGRESS": "0"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), str(store)], env=env, stdout=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdout.readline().strip() == b"go"
    deadline = time.monotonic() + 60
    log: Path | None = None
    while time.monotonic() < deadline:  # kill once some samples have ended, not all
        found = list(store.glob("*/events.jsonl"))
        if found and found[0].read_text().count("case.ended") >= 8:
            log = found[0]
            break
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert log is not None
    ended = log.read_text().count("case.ended")
    record_property("samples_logged_at_kill", ended)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        resumed = eb.run(frame(40), task=agent.task, scores=[agent.SCORE], scorers=[agent.ok],
                         resume=log.parent, progress=False)  # fmt: skip
    clean = run_agent(agent, 40, None)
    pd.testing.assert_frame_equal(resumed.steps(), clean.steps())
    pd.testing.assert_frame_equal(eb.load_run(log.parent).steps(), clean.steps())
    assert ended < 40


def test_a_retry_of_errors_keeps_the_kept_transcripts_and_records_the_new(
    agent: Any, tmp_path: Path
) -> None:
    from evalbook._runner._resume import RetryErrors  # what --retry-errors is built on

    flaky = {"c1", "c3"}

    def task(question: str, case_id: str, epoch: int, ctx: Any) -> str:
        if case_id in flaky:
            ctx.step(role="user", content="a failed attempt")
            raise RuntimeError("flaky")
        return str(agent.task(question, case_id, epoch, ctx))

    first = eb.run(frame(5), task=task, scores=[agent.SCORE], scorers=[agent.ok],
                   store=tmp_path, progress=False)  # fmt: skip
    assert first.cases["outcome"].tolist().count("errored") == 2
    flaky.clear()
    source = eb.load_run(first.path)  # type: ignore[arg-type]
    again = eb.run(frame(5), task=task, scores=[agent.SCORE], scorers=[agent.ok],
                   resume=RetryErrors(source, "again"), store=tmp_path, progress=False)  # fmt: skip
    clean = run_agent(agent, 5, None)
    pd.testing.assert_frame_equal(again.steps(), clean.steps())
    assert again.path is not None
    pd.testing.assert_frame_equal(eb.load_run(again.path).steps(), clean.steps())
    assert "a failed attempt" not in set(again.steps()["content"])
