"""Subprocess helpers for the fault tests: one workload, and a stored run killed with SIGKILL.

Imported, this module gives tests/faults (and tools/faults_kill.py) the workload and the
counted kill trials; run as a script (``python _fault_procs.py kill CONFIG_JSON``) it is the
child process that a trial kills. _fault_pairs.py builds the two-resumes race on it. The
parent and the child call the very same task and scorers, so a resume in the parent
continues exactly what the child began. Every task call appends its case id to a side file
opened with O_APPEND (one ``os.write`` per call, nothing buffered), so after a SIGKILL the
parent still knows every call that was made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

import evalbook as eb

N_CASES = 60
IDS = [f"c{i:02d}" for i in range(N_CASES)]
ENV = {**os.environ, "EVALBOOK_PROGRESS": "0"}
HARD_TIMEOUT = 120.0  # a child that takes longer is stuck: the trial fails instead of hanging CI
HOLD_S = 30.0  # the longest a held task waits for its file (`Workload.hold`)
CASE_COLUMNS = ["case_id", "outcome", "attempts", "output", "error_type", "error_message"]
SCORE_COLUMNS = ["case_id", "score", "status", "value", "reason", "rationale"]
USAGE_COLUMNS = ["case_id", "epoch", "source", "calls", "input_tokens", "output_tokens", "cost"]
USAGE_COLUMNS += ["invalid"]
RUN_FILES = {"events.jsonl", "data.parquet", "cases.parquet", "scores.parquet", "summary.json"}


def workload_data() -> pd.DataFrame:
    """The cases every trial runs: 60 questions with ids c00..c59."""
    return pd.DataFrame({"id": IDS, "question": [f"q{i}" for i in range(N_CASES)]})


@dataclass(frozen=True)
class Workload:
    """One trial's run: sync or async task, concurrency, attempts, and where calls are noted."""

    seed: int
    is_async: bool
    concurrency: int
    attempts: int
    calls: str
    max_sleep: float = 0.02
    self_kill_at: str | None = None  # the task SIGKILLs its own process at this case
    usage: bool = False  # each task call records usage (tests/faults/test_usage_faults.py)
    hold: str | None = None  # each task call first waits for this file (_fault_pairs.py)

    @classmethod
    def draw(cls, rng: random.Random, calls: Path, usage: bool = False) -> Workload:
        """A random workload (concurrency 1..8, async or sync, attempts 1 or 2)."""
        return cls(
            seed=rng.randrange(2**31),
            is_async=rng.random() < 0.5,
            concurrency=rng.randint(1, 8),
            attempts=rng.choice([1, 2]),
            calls=str(calls),
            usage=usage,
        )

    def kind(self, case_id: str) -> str:
        """What the case does: ok, wrong (scores 0), broken (raises), flaky, failing (asserts)."""
        # fixed per seed, so the parent's resume and the reference run agree with the child
        return random.Random(f"{self.seed}:{case_id}").choices(
            ["ok", "wrong", "broken", "flaky", "failing"], weights=[12, 3, 1, 2, 1]
        )[0]


def note_call(path: str, case_id: str) -> None:
    """Append one line to the side file: a single unbuffered write, whole even after a kill."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{case_id}\n".encode())
    finally:
        os.close(fd)


def _answer(w: Workload, question: str, case_id: str, attempt: int) -> str:
    kind = w.kind(case_id)
    if kind == "broken" or (kind == "flaky" and attempt == 1):
        raise ValueError(f"{kind} case {case_id}")
    assert kind != "failing", f"case {case_id} fails"
    return question if kind == "wrong" else question.upper()


def record_usage(w: Workload, case_id: str, ctx: Any) -> None:
    """The call's usage, fixed per seed and case: tokens, a cost or none, as a dict or not."""
    rng = random.Random(f"{w.seed}:{case_id}:{ctx.attempt}:usage")
    tokens = {"prompt_tokens": rng.randint(1, 2000), "completion_tokens": rng.randint(0, 300)}
    if rng.random() < 0.5:
        ctx.record_usage(tokens, cost=rng.randint(0, 64) / 64 if rng.random() < 0.8 else None)
    else:
        ctx.record_usage(input_tokens=tokens["prompt_tokens"], cost=rng.choice([0.5, -1.0]))


def make_task(w: Workload) -> Callable[..., Any]:
    """The workload's task (sync or async): note the call, wait for the `hold` file if there
    is one, sleep a little, answer."""

    def prologue(case_id: str, ctx: Any) -> float:
        note_call(w.calls, case_id)
        if case_id == w.self_kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        if w.usage:
            record_usage(w, case_id, ctx)
        return random.Random(f"{w.seed}:{case_id}:{ctx.attempt}").uniform(0, w.max_sleep)

    def sync_task(question: str, case_id: str, ctx: Any) -> str:
        pause = prologue(case_id, ctx)
        if w.hold is not None:
            wait_for_file(Path(w.hold))
        time.sleep(pause)
        return _answer(w, question, case_id, ctx.attempt)

    async def async_task(question: str, case_id: str, ctx: Any) -> str:
        pause = prologue(case_id, ctx)
        if w.hold is not None:  # in a thread: the event loop is not blocked meanwhile
            await asyncio.to_thread(wait_for_file, Path(w.hold))
        await asyncio.sleep(pause)
        return _answer(w, question, case_id, ctx.attempt)

    return async_task if w.is_async else sync_task


def wait_for_file(path: Path) -> None:
    """Wait until `path` exists, at most `HOLD_S` (then make it: later calls need not wait)."""
    give_up = time.monotonic() + HOLD_S
    while not path.exists():
        if time.monotonic() > give_up:
            path.touch()
            return
        time.sleep(0.005)


@eb.scorer
def exact(output: str, question: str) -> float:
    """1 when the answer is the question in capitals."""
    return 1.0 if output == question.upper() else 0.0


@eb.scorer
async def length(output: str) -> eb.Score:
    """An async scorer with a rationale: a quarter per character (outputs have 2 or 3)."""
    await asyncio.sleep(0)
    return eb.Score(len(output) / 4, rationale=f"{len(output)} chars")


SCORERS = [exact, length]


def run_workload(w: Workload, **kwargs: Any) -> eb.Run:
    """`eb.run` of the workload (store, name or resume in `kwargs`)."""
    return eb.run(
        workload_data(),
        task=make_task(w),
        scorers=SCORERS,
        concurrency=w.concurrency,
        attempts=w.attempts,
        progress=False,
        **kwargs,
    )


# -- reading what a kill left ----------------------------------------------------------------


def read_calls(path: Path) -> Counter[str]:
    """Task calls per case, as the side file says."""
    if not path.exists():
        return Counter()
    return Counter(path.read_text(encoding="utf-8").split())


def logged_ends(folder: Path) -> tuple[bool, Counter[str]]:
    """Whether the log has a whole `run.started` line, and the whole `case.ended` lines per case.

    Only a line ending in a newline counts: a line cut by the kill is not logged.
    """
    log = folder / "events.jsonl"
    if not log.is_file():
        return False, Counter()
    started, ends = False, Counter[str]()
    for line in log.read_bytes().split(b"\n")[:-1]:  # what follows the last newline is cut
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        started = started or event.get("event") == "run.started"
        if event.get("event") == "case.ended":
            ends[str(event.get("case_id"))] += 1
    return started, ends


def _table(frame: pd.DataFrame, columns: list[str]) -> list[tuple[Any, ...]]:
    rows = frame[columns].astype(object).itertuples(index=False)
    return [tuple(None if pd.isna(v) else v for v in row) for row in rows]  # NaN == NaN here


def same_result(a: eb.Run, b: eb.Run) -> bool:
    """Whether two runs have the same outcomes, outputs and records (times aside)."""
    tables = (("cases", CASE_COLUMNS), ("scores", SCORE_COLUMNS))
    return all(_table(getattr(a, t), c) == _table(getattr(b, t), c) for t, c in tables)


def same_usage(a: eb.Run, b: eb.Run) -> bool:
    """Whether two runs have the same `usage()` rows (the order of samples aside)."""
    rows = [sorted(_table(r.usage(), USAGE_COLUMNS), key=str) for r in (a, b)]
    return rows[0] == rows[1]


def quiet(call: Callable[[], Any]) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a cut last line, an incomplete run: expected here
        return call()


# -- kill -9 at a random moment, then resume ------------------------------------------------


@dataclass
class KillTally:
    """The figures of a series of kill trials."""

    trials: int = 0
    no_folder: int = 0  # killed before eb.run created its folder: nothing to resume
    startup: int = 0  # a folder without a loadable run (no whole run.started line)
    startup_refused: int = 0  # ... whose resume raised ConfigurationError
    mid_run: int = 0  # killed with a loadable, incomplete log
    after_end: int = 0  # the log had run.ended (killed in the final writes, or exited)
    exited: int = 0  # ... of which the child had exited before the kill
    lost: int = 0  # cases without exactly one final outcome after the resume
    twice_run: int = 0  # cases run again although their case.ended was logged
    duplicate_ends: int = 0  # case.ended lines beyond one per case
    different: int = 0  # resumed runs whose tables differ from an uninterrupted run's
    usage_different: int = 0  # resumed runs whose usage() differs from an uninterrupted run's
    leftovers: int = 0  # files in a resumed folder other than the run's five (.tmp files)
    startup_messages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The figures in one line."""
        return (
            f"kill -9 trials: {self.trials}, lost {self.lost}, twice-run {self.twice_run}, "
            f"duplicate case.ended {self.duplicate_ends}, different from an uninterrupted run "
            f"{self.different}, usage different {self.usage_different}, files left over "
            f"{self.leftovers}; kills before the folder "
            f"{self.no_folder}, start-up kills {self.startup} (resume: ConfigurationError "
            f"{self.startup_refused}), mid-run "
            f"{self.mid_run}, after run.ended {self.after_end} (exited before the kill "
            f"{self.exited}); problems {len(self.problems)}"
        )


def spawn(
    script: str, mode: str, config: dict[str, Any], stdout: Any, stderr: Path
) -> subprocess.Popen[str]:
    """Start `script` (this file or _fault_pairs.py) as a child: `mode`, then the config."""
    return subprocess.Popen(
        [sys.executable, script, mode, json.dumps(config)],
        stdout=stdout,
        stderr=stderr.open("w"),
        text=True,
        env=ENV,
    )


def child_run(w: Workload, store: Path, kill_after: float | None) -> tuple[float, int]:
    """Start the child, wait for its "go" (just before eb.run), kill it after `kill_after` s.

    Returns the seconds from "go" to the child's end and its return code.
    """
    config = {"workload": dataclasses.asdict(w), "store": str(store)}
    child = spawn(__file__, "kill", config, subprocess.PIPE, store.parent / "child-stderr.txt")
    assert child.stdout is not None
    try:
        if child.stdout.readline().strip() != "go":
            child.wait(HARD_TIMEOUT)
            err = (store.parent / "child-stderr.txt").read_text()
            raise RuntimeError(f"the child did not start its run: {err[-2000:]}")
        go = time.monotonic()
        if kill_after is not None:
            time.sleep(kill_after)
            child.send_signal(signal.SIGKILL)  # a no-op if it has already ended
        code = child.wait(HARD_TIMEOUT)
        return time.monotonic() - go, code
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        child.stdout.close()


def calibrate(root: Path, seed: int, children: int = 3) -> float:
    """Seconds a child needs beyond an in-process run of the same workload (start-up, exit).

    The median of a few children, so that one slow start does not skew every kill time.
    """
    rng = random.Random(seed)
    extra = []
    for i in range(children):
        w = Workload.draw(rng, root / f"cal-calls-{i}.txt")
        begin = time.monotonic()
        run_workload(w, store=root / f"cal-ref-{i}", name="ref")
        in_process = time.monotonic() - begin
        (root / f"cal-{i}").mkdir()
        child, code = child_run(w, root / f"cal-{i}" / "store", None)
        if code != 0:
            raise RuntimeError(f"calibration child exited with {code}")
        extra.append(child - in_process)
    return sorted(extra)[len(extra) // 2]


def kill_trial(
    root: Path, seed: int, overhead: float, tally: KillTally, usage: bool = False
) -> None:
    """One trial: run the workload in a child, SIGKILL it at a random moment, resume, check."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    w = Workload.draw(rng, root / "calls.txt", usage)
    begin = time.monotonic()
    uninterrupted = dataclasses.replace(w, calls=str(root / "ref-calls.txt"))
    reference = run_workload(uninterrupted, store=root / "ref", name="ref")
    expected = time.monotonic() - begin + overhead  # start-up and final writes included
    kill_after = rng.uniform(0, expected)
    store = root / "store"
    _, code = child_run(w, store, kill_after)
    tally.trials += 1
    tally.exited += code == 0
    where = f"trial seed {seed} ({w}, kill after {kill_after:.3f}s of {expected:.3f}s)"
    if code not in (0, -signal.SIGKILL):
        tally.problems.append(f"{where}: the child exited with {code}")
        return
    folders = sorted(store.iterdir()) if store.exists() else []
    before = read_calls(root / "calls.txt")
    if not folders:
        tally.no_folder += 1
        if before:
            tally.problems.append(f"{where}: no folder, yet {sum(before.values())} task calls")
        return
    (folder,) = folders
    started, ended_before = logged_ends(folder)
    log = folder / "events.jsonl"
    if log.is_file() and b'"run.ended"' in log.read_bytes():
        tally.after_end += 1
    elif started:
        tally.mid_run += 1
    again = dataclasses.replace(w, concurrency=rng.randint(1, 8))
    if not started:  # killed in eb.run's start-up: there is no run to continue
        _resume_start_up(folder, again, tally, where)
        return
    try:
        resumed = quiet(lambda: run_workload(again, resume=folder))
    except Exception as exc:
        tally.problems.append(f"{where}: resume raised {type(exc).__name__}: {exc}")
        return
    _check_resumed(folder, resumed, reference, ended_before, before, root, tally, where)


def _resume_start_up(folder: Path, w: Workload, tally: KillTally, where: str) -> None:
    """Resume a folder without a whole run.started line: it must be refused, running nothing."""
    tally.startup += 1
    before = read_calls(Path(w.calls))
    try:
        quiet(lambda: run_workload(w, resume=folder))
    except eb.ConfigurationError as exc:
        tally.startup_refused += 1
        tally.startup_messages.append(f"ConfigurationError: {exc}")
    except Exception as exc:
        tally.problems.append(f"{where}: resume raised {type(exc).__name__}: {exc}")
    else:
        tally.problems.append(f"{where}: a folder without run.started was resumed")
    if read_calls(Path(w.calls)) != before:
        tally.problems.append(f"{where}: the refused resume called the task")


def _check_resumed(
    folder: Path,
    resumed: eb.Run,
    reference: eb.Run,
    ended_before: Counter[str],
    before: Counter[str],
    root: Path,
    tally: KillTally,
    where: str,
) -> None:
    after = read_calls(root / "calls.txt")
    twice = sorted(c for c in ended_before if after[c] > before[c])
    tally.twice_run += len(twice)
    if not set(ended_before) <= set(before):
        tally.problems.append(f"{where}: cases logged as ended were never called")
    _, ended_after = logged_ends(folder)
    tally.duplicate_ends += sum(n - 1 for n in ended_after.values() if n > 1)
    loaded = eb.load_run(folder)  # a complete run: loads without a warning
    final = loaded.cases.set_index("case_id")["outcome"]
    lost = {c for c in IDS if ended_after[c] == 0 or c not in final or pd.isna(final[c])}
    lost |= {c for c in IDS if resumed.cases["case_id"].tolist().count(c) != 1}
    tally.lost += len(lost)
    if not (same_result(resumed, reference) and same_result(loaded, reference)):
        tally.different += 1
        tally.problems.append(f"{where}: the resumed run differs from an uninterrupted one")
    if not (same_usage(resumed, reference) and same_usage(loaded, reference)):
        tally.usage_different += 1  # a sample's usage lost, counted twice or changed
        tally.problems.append(f"{where}: the resumed run's usage differs from an uninterrupted one")
    files = {p.name for p in folder.iterdir()}
    tally.leftovers += len(files - RUN_FILES)
    if twice or lost or files != RUN_FILES:
        tally.problems.append(
            f"{where}: twice-run {twice}, lost {sorted(lost)}, files {sorted(files)}"
        )


def kill_trials(root: Path, trials: int, seed: int, usage: bool = False) -> KillTally:
    """`trials` seeded kill trials, one after the other, under `root` (`usage`: the task
    records usage, and the resumed run's `usage()` must equal an uninterrupted run's)."""
    master = random.Random(seed)
    overhead = calibrate(root, master.randrange(2**31))
    tally = KillTally()
    for i in range(trials):
        kill_trial(root / f"t{i:04d}", master.randrange(2**31), overhead, tally, usage)
    return tally


# -- the child process ------------------------------------------------------------------------


def _main(argv: list[str]) -> None:
    mode, config = argv[1], json.loads(argv[2])
    w = Workload(**config["workload"])
    if mode == "kill":
        # evalbook loads its names on first use: load them all before the clock starts, as
        # the in-process reference run has them, so a kill lands in the run, not its imports
        for name in eb.__all__:
            getattr(eb, name)
        print("go", flush=True)  # the parent's clock for the kill starts here
        quiet(lambda: run_workload(w, store=config["store"], name="kill"))
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    _main(sys.argv)
