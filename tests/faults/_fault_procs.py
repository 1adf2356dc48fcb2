"""Subprocess helpers for the fault tests: a stored run killed with SIGKILL, two resumes racing.

Imported, this module gives a test (and tools/faults_kill.py) one workload and the counted trial
loops; run as a script it is the child process of those trials:
``python _fault_procs.py kill|resume CONFIG_JSON``. The parent and the child call the very same
task and scorers, so a resume in the parent continues exactly what the child began. Every task
call appends its case id to a side file opened with O_APPEND (one ``os.write`` per call, nothing
buffered), so after a SIGKILL the parent still knows every call that was made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import random
import shutil
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
CASE_COLUMNS = ["case_id", "outcome", "attempts", "output", "error_type", "error_message"]
SCORE_COLUMNS = ["case_id", "score", "status", "value", "reason", "rationale"]
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

    @classmethod
    def draw(cls, rng: random.Random, calls: Path) -> Workload:
        """A random workload (concurrency 1..8, async or sync, attempts 1 or 2)."""
        return cls(
            seed=rng.randrange(2**31),
            is_async=rng.random() < 0.5,
            concurrency=rng.randint(1, 8),
            attempts=rng.choice([1, 2]),
            calls=str(calls),
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


def make_task(w: Workload) -> Callable[..., Any]:
    """The workload's task (sync or async): note the call, sleep a little, answer."""

    def prologue(case_id: str, attempt: int) -> float:
        note_call(w.calls, case_id)
        if case_id == w.self_kill_at:
            os.kill(os.getpid(), signal.SIGKILL)
        return random.Random(f"{w.seed}:{case_id}:{attempt}").uniform(0, w.max_sleep)

    def sync_task(question: str, case_id: str, ctx: Any) -> str:
        time.sleep(prologue(case_id, ctx.attempt))
        return _answer(w, question, case_id, ctx.attempt)

    async def async_task(question: str, case_id: str, ctx: Any) -> str:
        await asyncio.sleep(prologue(case_id, ctx.attempt))
        return _answer(w, question, case_id, ctx.attempt)

    return async_task if w.is_async else sync_task


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


def _quiet(call: Callable[[], Any]) -> Any:
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
    leftovers: int = 0  # files in a resumed folder other than the run's five (.tmp files)
    startup_messages: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The figures in one line."""
        return (
            f"kill -9 trials: {self.trials}, lost {self.lost}, twice-run {self.twice_run}, "
            f"duplicate case.ended {self.duplicate_ends}, different from an uninterrupted run "
            f"{self.different}, files left over {self.leftovers}; kills before the folder "
            f"{self.no_folder}, start-up kills {self.startup} (resume: ConfigurationError "
            f"{self.startup_refused}), mid-run "
            f"{self.mid_run}, after run.ended {self.after_end} (exited before the kill "
            f"{self.exited}); problems {len(self.problems)}"
        )


def _spawn(mode: str, config: dict[str, Any], stdout: Any, stderr: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, mode, json.dumps(config)],
        stdout=stdout,
        stderr=stderr.open("w"),
        text=True,
        env=ENV,
    )


def _child_run(w: Workload, store: Path, kill_after: float | None) -> tuple[float, int]:
    """Start the child, wait for its "go" (just before eb.run), kill it after `kill_after` s.

    Returns the seconds from "go" to the child's end and its return code.
    """
    config = {"workload": dataclasses.asdict(w), "store": str(store)}
    child = _spawn("kill", config, subprocess.PIPE, store.parent / "child-stderr.txt")
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
        child, code = _child_run(w, root / f"cal-{i}" / "store", None)
        if code != 0:
            raise RuntimeError(f"calibration child exited with {code}")
        extra.append(child - in_process)
    return sorted(extra)[len(extra) // 2]


def kill_trial(root: Path, seed: int, overhead: float, tally: KillTally) -> None:
    """One trial: run the workload in a child, SIGKILL it at a random moment, resume, check."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    w = Workload.draw(rng, root / "calls.txt")
    begin = time.monotonic()
    uninterrupted = dataclasses.replace(w, calls=str(root / "ref-calls.txt"))
    reference = run_workload(uninterrupted, store=root / "ref", name="ref")
    expected = time.monotonic() - begin + overhead  # start-up and final writes included
    kill_after = rng.uniform(0, expected)
    store = root / "store"
    _, code = _child_run(w, store, kill_after)
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
        resumed = _quiet(lambda: run_workload(again, resume=folder))
    except Exception as exc:
        tally.problems.append(f"{where}: resume raised {type(exc).__name__}: {exc}")
        return
    _check_resumed(folder, resumed, reference, ended_before, before, root, tally, where)


def _resume_start_up(folder: Path, w: Workload, tally: KillTally, where: str) -> None:
    """Resume a folder without a whole run.started line: it must be refused, running nothing."""
    tally.startup += 1
    before = read_calls(Path(w.calls))
    try:
        _quiet(lambda: run_workload(w, resume=folder))
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
    files = {p.name for p in folder.iterdir()}
    tally.leftovers += len(files - RUN_FILES)
    if twice or lost or files != RUN_FILES:
        tally.problems.append(
            f"{where}: twice-run {twice}, lost {sorted(lost)}, files {sorted(files)}"
        )


def kill_trials(root: Path, trials: int, seed: int) -> KillTally:
    """`trials` seeded kill trials, one after the other, under `root`."""
    master = random.Random(seed)
    overhead = calibrate(root, master.randrange(2**31))
    tally = KillTally()
    for i in range(trials):
        kill_trial(root / f"t{i:04d}", master.randrange(2**31), overhead, tally)
    return tally


# -- two resumes of one killed run at the same moment ---------------------------------------


@dataclass
class PairTally:
    """The figures of a series of simultaneous resume pairs."""

    pairs: int = 0
    refused: int = 0  # one proceeded, the other got a ConfigurationError
    sequential: int = 0  # the second came after the first had ended: it found nothing to run
    both_ran: int = 0  # both processes called the task
    none_ran: int = 0
    loser_calls: int = 0  # task calls made by a process that was refused
    duplicate_ends: int = 0
    paid_twice: int = 0  # cases called again although ended, or called by both processes
    problems: list[str] = field(default_factory=list)

    def line(self) -> str:
        """The figures in one line."""
        return (
            f"simultaneous resume pairs: {self.pairs}, both ran {self.both_ran}, one refused "
            f"{self.refused}, second found the run complete {self.sequential}, none ran "
            f"{self.none_ran}, calls by the refused process {self.loser_calls}, duplicate "
            f"case.ended {self.duplicate_ends}, paid twice {self.paid_twice}; problems "
            f"{len(self.problems)}"
        )


def killed_run(root: Path, seed: int) -> tuple[Workload, Path]:
    """A stored run whose process SIGKILLed itself mid-run (at a seeded case)."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    w = dataclasses.replace(
        Workload.draw(rng, root / "calls.txt"),
        concurrency=rng.randint(1, 4),
        self_kill_at=IDS[rng.randrange(10, 40)],
    )
    _, code = _child_run(w, root / "store", None)
    if code != -signal.SIGKILL:
        raise RuntimeError(f"the child was to kill itself, it exited with {code}")
    (folder,) = list((root / "store").iterdir())
    return dataclasses.replace(w, self_kill_at=None), folder


def resume_pair(source: Path, w: Workload, root: Path, seed: int, tally: PairTally) -> None:
    """Copy the killed run, start two resumes of it at one moment, check that one proceeded.

    The resumes' task sleeps (none, or up to 30 or 60 ms a call) and concurrency (1..4) are
    drawn per pair. With sleeps, the rest of the run outlasts the lock's retries (about 0.1 s,
    for readers), so the second process tries while the first holds the log. Without, the
    first may end before the second takes the lock: then the second finds the run complete
    and runs nothing (counted as `sequential`), unless it read the state before it locked.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True)
    folder = root / source.name
    shutil.copytree(source, folder)
    _, ended_before = logged_ends(folder)
    w = dataclasses.replace(
        w, max_sleep=rng.choice([0.0, 0.03, 0.06]), concurrency=rng.randint(1, 4)
    )
    barrier = root / "go"
    children, configs = [], []
    for me in (0, 1):
        mine = dataclasses.replace(w, calls=str(root / f"calls-{me}.txt"))
        config = {
            "workload": dataclasses.asdict(mine),
            "folder": str(folder),
            "ready": str(root / f"ready-{me}"),
            "barrier": str(barrier),
        }
        configs.append(config)
        children.append(_spawn("resume", config, subprocess.PIPE, root / f"stderr-{me}.txt"))
    give_up = time.monotonic() + HARD_TIMEOUT
    while not all(Path(c["ready"]).exists() for c in configs) and time.monotonic() < give_up:
        if any(child.poll() is not None for child in children):
            break
        time.sleep(0.005)
    barrier.write_text("go")
    outs = [child.communicate(timeout=HARD_TIMEOUT)[0] for child in children]
    codes = [child.returncode for child in children]
    tally.pairs += 1
    where = f"pair {root.name} ({w})"
    if codes != [0, 0]:
        errs = [(root / f"stderr-{i}.txt").read_text()[-1500:] for i in (0, 1)]
        tally.problems.append(f"{where}: children exited with {codes}: {errs}")
        return
    results = [json.loads(out) for out in outs]
    calls = [read_calls(root / f"calls-{i}.txt") for i in (0, 1)]
    ran = [r["status"] == "ran" for r in results]
    tally.none_ran += not any(ran)
    if all(ran):
        if calls[0] and calls[1]:
            tally.both_ran += 1
        else:
            tally.sequential += 1
    elif any(ran):
        tally.refused += 1
    for r, c in zip(results, calls, strict=True):
        if r["status"] != "ran":
            tally.loser_calls += sum(c.values())
            if "another run" not in r["error"]:
                tally.problems.append(f"{where}: refused for another reason: {r['error']}")
    _, ended_after = logged_ends(folder)
    tally.duplicate_ends += sum(n - 1 for n in ended_after.values() if n > 1)
    paid = {c for c in ended_before if calls[0][c] or calls[1][c]} | (set(calls[0]) & set(calls[1]))
    tally.paid_twice += len(paid)
    if sorted(ended_after) != IDS:
        tally.problems.append(f"{where}: after the pair, cases without case.ended remain")


def resume_pairs(root: Path, pairs: int, seed: int) -> PairTally:
    """`pairs` simultaneous resume pairs, each of a copy of one killed run."""
    master = random.Random(seed)
    w, source = killed_run(root / "source", master.randrange(2**31))
    tally = PairTally()
    for i in range(pairs):
        resume_pair(source, w, root / f"p{i:03d}", master.randrange(2**31), tally)
    return tally


# -- the child process ------------------------------------------------------------------------


def _resume_child(config: dict[str, Any], w: Workload) -> None:
    Path(config["ready"]).write_text("x")
    barrier, give_up = Path(config["barrier"]), time.monotonic() + HARD_TIMEOUT
    while not barrier.exists() and time.monotonic() < give_up:
        time.sleep(0.0005)  # both processes leave this loop within a millisecond
    try:
        _quiet(lambda: run_workload(w, resume=config["folder"]))
        result = {"status": "ran"}
    except eb.ConfigurationError as exc:
        result = {"status": "refused", "error": str(exc)}
    print(json.dumps(result))


def _main(argv: list[str]) -> None:
    mode, config = argv[1], json.loads(argv[2])
    w = Workload(**config["workload"])
    if mode == "kill":
        print("go", flush=True)  # the parent's clock for the kill starts here
        _quiet(lambda: run_workload(w, store=config["store"], name="kill"))
    elif mode == "resume":
        _resume_child(config, w)
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    _main(sys.argv)
