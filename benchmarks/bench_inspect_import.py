"""Importing a large Inspect AI log: evalbook against Inspect's own readers, same file.

The log (`make_inspect_log.py`, written by Inspect's recorder, cached in /tmp) has N samples of
an agent with tool calls (10 to 30 messages each, a model event per reply, a tool event per
call). Each reader runs in a fresh process, one after the other; the time is its read (Python
and both libraries already imported), wall and CPU (user + system, its worker processes'
included), the peak RSS the whole process's (`wait4`'s `ru_maxrss`), or, where it starts worker
processes, the highest sum of its and their RSS seen (sampled every 0.2 s). A reader whose RSS
passes `--cap-gb` is stopped and reported so.

- evalbook: `eb.import_results(path, format="inspect")`, then `run.cases`, `run.scores`,
  `run.steps()` (one row per message); a log of 4,000 samples or more is read by one worker
  process a core (`--workers N` sets `EVALBOOK_IMPORT_WORKERS`; 1: in the one process).
- Inspect: `inspect_ai.log.read_eval_log(path)` (the whole log, as Inspect reads it) and
  `inspect_ai.analysis.samples_df(path)` (one row per sample, read from the log's sample
  summaries only: no messages, no events, so not the same work).

Target (issue 31): N = 200,000 in ≤ 60 s and ≤ 4 GB.

    python benchmarks/bench_inspect_import.py [--n 20000 200000] [--workers 1] [--quick]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from make_inspect_log import make

READERS = ("evalbook", "read_eval_log", "samples_df")


def _read(reader: str, path: str) -> dict[str, Any]:
    """In the child: read `path` with `reader`; what it took and what it made."""
    import warnings

    import inspect_ai.analysis
    import inspect_ai.log

    import evalbook as eb

    warnings.simplefilter("ignore")
    t, cpu = time.perf_counter(), _cpu()
    if reader == "evalbook":
        run = eb.import_results(path, format="inspect")
        rows = {"cases": len(run.cases), "scores": len(run.scores), "steps": len(run.steps())}
    elif reader == "read_eval_log":
        log = inspect_ai.log.read_eval_log(path)
        rows = {"samples": len(log.samples or [])}
    elif reader == "samples_df":
        rows = {"samples": len(inspect_ai.analysis.samples_df(path, quiet=True))}
    else:
        raise ValueError(reader)
    return {"seconds": time.perf_counter() - t, "cpu_s": _cpu() - cpu, "rows": rows}


def _rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _tree_rss_kb(pid: int) -> int:
    """The RSS of `pid` and of its children (a reader's worker processes), added up."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    return _rss_kb(pid) + sum(_tree_rss_kb(int(c)) for c in children)


def measure(reader: str, path: Path, cap_gb: float, workers: int | None = None) -> dict[str, Any]:
    """One reader in a fresh process: its time, peak RSS, rows; or that it passed the cap."""
    env = {**os.environ, "EVALBOOK_PROGRESS": "0"}
    if workers is not None:
        env["EVALBOOK_IMPORT_WORKERS"] = str(workers)
    cmd = [sys.executable, __file__, "--child", reader, str(path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    capped, done = threading.Event(), threading.Event()
    tree_peak = [0]

    def watch() -> None:  # never reaps the child: wait4 below does, to get its rusage
        while not done.wait(0.2):
            rss = _tree_rss_kb(proc.pid)
            tree_peak[0] = max(tree_peak[0], rss)
            if rss > cap_gb * 1e6:
                capped.set()
                proc.kill()
                return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    started = time.perf_counter()
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    done.set()
    proc.returncode = os.waitstatus_to_exitcode(status)
    watcher.join()
    peak_gb = max(usage.ru_maxrss, tree_peak[0]) / 1e6
    if capped.is_set():
        return {"capped": True, "after_s": time.perf_counter() - started, "peak_gb": peak_gb}
    if proc.returncode != 0:
        raise RuntimeError(f"{reader} failed: {err.decode()[-2000:]}")
    found = json.loads(out.decode().strip().splitlines()[-1])
    return {**found, "peak_gb": peak_gb, "capped": False}


def _cpu() -> float:
    """This process's CPU seconds so far (user + system), its ended worker processes' too."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    workers = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + workers.ru_utime + workers.ru_stime


def _cell(m: dict[str, Any], cap_gb: float) -> tuple[str, str, str]:
    if m["capped"]:
        return f"stopped at {m['after_s']:.0f} s", "-", f"> {cap_gb:g} GB"
    return f"{m['seconds']:.1f} s", f"{m['cpu_s']:.1f} s", f"{m['peak_gb']:.2f} GB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, nargs="+", default=[20000, 200000])
    parser.add_argument("--cap-gb", type=float, default=8.0)
    parser.add_argument("--readers", nargs="+", default=list(READERS), choices=READERS)
    parser.add_argument("--workers", type=int, default=None, help="evalbook's worker processes")
    parser.add_argument("--quick", action="store_true", help="N = 300, a smoke run")
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_read(*args.child)))
        return
    sizes = [300] if args.quick else args.n
    print("## Inspect AI log import\n")
    if importlib.util.find_spec("inspect_ai") is None:
        print("inspect-ai is not installed here (the extra evalbook[inspect]): not measured.")
        return
    print(
        "| samples | log | reader | time | CPU time | peak RSS | rows | CPU time vs evalbook "
        "| RSS vs evalbook |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        path = make(n)
        size = f"{path.stat().st_size / 1e6:.0f} MB"
        ours: dict[str, Any] | None = None
        for reader in args.readers:  # each row as it is measured
            m = measure(reader, path, args.cap_gb, args.workers if reader == "evalbook" else None)
            if reader == "evalbook":
                ours = m
            took, cpu, rss = _cell(m, args.cap_gb)
            rows = ", ".join(f"{v:,} {k}" for k, v in m.get("rows", {}).items()) or "-"
            ratio_t = ratio_m = "-"
            if ours is not None and not ours["capped"] and reader != "evalbook":
                if not m["capped"]:
                    ratio_t = f"{m['cpu_s'] / ours['cpu_s']:.2f}×"
                    ratio_m = f"{m['peak_gb'] / ours['peak_gb']:.2f}×"
                else:
                    ratio_t = f"> {m['after_s'] / ours['seconds']:.2f}×"
                    ratio_m = f"> {args.cap_gb / ours['peak_gb']:.2f}×"
            cells = [f"{n:,}", size, reader, took, cpu, rss, rows, ratio_t, ratio_m]
            print("| " + " | ".join(cells) + " |", flush=True)
    print(
        "\nRatios are Inspect's reader over evalbook's (above 1×: evalbook is faster / smaller); "
        "the time ratio is of CPU time (user + system), which a shared machine disturbs less "
        "than wall time. Target: 200,000 samples in ≤ 60 s and ≤ 4 GB."
    )


if __name__ == "__main__":
    main()
