"""Two processes resume one killed run at the same moment: the helpers of that fault test.

Imported by tests/faults/test_resume_races.py and tools/faults_kill.py; run as a script it is
one of the two resuming processes (``python _fault_pairs.py resume CONFIG_JSON``): it waits
for the barrier file, resumes, and prints whether it ran or was refused. The workload is the
kill trials' (_fault_procs.py).

Whether the two resumes overlap depends on when each process gets to run, which a loaded
machine moves. So every third pair is held: there the resume that proceeds waits in its task
(holding the log) until the other process has tried, and that pair overlaps for sure.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _fault_procs import (
    HARD_TIMEOUT,
    IDS,
    Workload,
    child_run,
    logged_ends,
    quiet,
    read_calls,
    run_workload,
    spawn,
)

import evalbook as eb


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
    _, code = child_run(w, root / "store", None)
    if code != -signal.SIGKILL:
        raise RuntimeError(f"the child was to kill itself, it exited with {code}")
    (folder,) = list((root / "store").iterdir())
    return dataclasses.replace(w, self_kill_at=None), folder


def resume_pair(
    source: Path, w: Workload, root: Path, seed: int, tally: PairTally, hold: bool = False
) -> None:
    """Copy the killed run, start two resumes of it at one moment, check that one proceeded.

    The resumes' task sleeps (none, or up to 30 or 60 ms a call) and concurrency (1..4) are
    drawn per pair. With sleeps, the rest of the run outlasts the lock's retries (about 0.1 s,
    for readers), so the second process usually tries while the first holds the log. Without,
    the first may end before the second takes the lock: then the second finds the run complete
    and runs nothing (counted as `sequential`), unless it read the state before it locked.
    With `hold`, every task call first waits for a file that each process writes once its
    resume has returned or been refused (at most `_fault_procs.HOLD_S`): the process that
    proceeds holds the log until the other has tried, so the other must be refused, however
    loaded the machine.
    """
    rng = random.Random(seed)
    root.mkdir(parents=True)
    folder = root / source.name
    shutil.copytree(source, folder)
    _, ended_before = logged_ends(folder)
    w = dataclasses.replace(
        w,
        max_sleep=rng.choice([0.0, 0.03, 0.06]),
        concurrency=rng.randint(1, 4),
        hold=str(root / "tried") if hold else None,
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
        children.append(
            spawn(__file__, "resume", config, subprocess.PIPE, root / f"stderr-{me}.txt")
        )
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
    """`pairs` simultaneous resume pairs, each of a copy of one killed run (every third held:
    see `resume_pair`)."""
    master = random.Random(seed)
    w, source = killed_run(root / "source", master.randrange(2**31))
    tally = PairTally()
    for i in range(pairs):
        seed_i = master.randrange(2**31)
        resume_pair(source, w, root / f"p{i:03d}", seed_i, tally, hold=i % 3 == 0)
    return tally


# -- the child process ------------------------------------------------------------------------


def _resume_child(config: dict[str, Any], w: Workload) -> None:
    Path(config["ready"]).write_text("x")
    barrier, give_up = Path(config["barrier"]), time.monotonic() + HARD_TIMEOUT
    while not barrier.exists() and time.monotonic() < give_up:
        time.sleep(0.0005)  # on an idle machine both leave this loop within a millisecond
    try:
        quiet(lambda: run_workload(w, resume=config["folder"]))
        result = {"status": "ran"}
    except eb.ConfigurationError as exc:
        result = {"status": "refused", "error": str(exc)}
    finally:
        if w.hold is not None:  # this process has tried: the other's held calls may go on
            Path(w.hold).touch()
    print(json.dumps(result))


if __name__ == "__main__":
    _config = json.loads(sys.argv[2])
    _resume_child(_config, Workload(**_config["workload"]))
