"""Run every benchmark and write RESULTS.md (machine, date, tables).

Run: python benchmarks/run_all.py [--quick]
Each benchmark runs as its own process; their Markdown tables are collected in order.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import os
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

FULL = [
    [
        "bench_core.py",
        "--n",
        "1000",
        "10000",
        "100000",
        "--repeats",
        "3",
        "--latency-n",
        "2000",
        "10000",
    ],
    ["bench_store.py"],
    ["bench_store.py", "--sleep-ms", "1"],
    ["bench_scale.py"],
    ["bench_epochs.py"],
    ["bench_slices.py"],
    ["bench_compare_slices.py"],
    ["bench_import.py"],
    ["bench_cache.py"],
    ["bench_usage.py"],
    ["bench_transcripts.py"],
    ["bench_view.py"],
    ["bench_inspect_import.py"],
    ["bench_case_table.py"],
    ["bench_view_browser.py"],  # the same 1M run, in Chromium (needs /usr/bin/chromium)
]
QUICK = [
    ["bench_core.py", "--quick"],
    ["bench_store.py", "--cases", "200", "--rounds", "1"],
    ["bench_scale.py", "--cases", "2000", "--scores", "3"],
    ["bench_epochs.py", "--n", "100", "--rounds", "1", "--cases", "2000"],
    ["bench_slices.py", "--cases", "2000", "--scores", "3", "--slices", "5", "--repeats", "1"],
    [
        "bench_compare_slices.py",
        "--cases",
        "2000",
        "--scores",
        "3",
        "--slices",
        "4",
        "--repeats",
        "1",
    ],
    ["bench_import.py", "--repeats", "1"],
    ["bench_cache.py", "--entries", "50", "--rounds", "1"],
    ["bench_usage.py", "--n", "200", "--rounds", "1"],
    [
        "bench_transcripts.py",
        "--cases",
        "200",
        "--steps",
        "6",
        "--rounds",
        "1",
        "--capture-cases",
        "100",
        "--latency-ms",
        "5",
    ],
    ["bench_view.py", "--cases", "2000", "--repeats", "2"],
    ["bench_inspect_import.py", "--quick"],
    ["bench_case_table.py", "--cases", "2000"],
]
PEERS = ("inspect_ai", "braintrust", "deepeval")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny runs, no RESULTS.md")
    args = parser.parse_args()
    env = {**os.environ, "EVALBOOK_PROGRESS": "0"}
    sections = []
    for cmd in QUICK if args.quick else FULL:
        out = subprocess.run(
            [sys.executable, str(HERE / cmd[0]), *cmd[1:]],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        sections.append(f"`python benchmarks/{' '.join(cmd)}`\n\n{out.stdout.strip()}\n")
        print(sections[-1], flush=True)
    peers = [p for p in PEERS if importlib.util.find_spec(p) is not None]
    note = (
        f"Peers importable here: {', '.join(peers)}."
        if peers
        else "No peer framework (inspect-ai, braintrust, deepeval) is installed here, so no peer "
        "ratio was measured in this run; they are never dependencies of evalbook."
    )
    print(note)
    if args.quick:
        return
    header = (
        "# Benchmark results\n\n"
        f"Measured {dt.date.today().isoformat()} on {platform.platform()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        "by `python benchmarks/run_all.py`. Ratios are what matter: the machine is shared.\n"
    )
    results = HERE / "RESULTS.md"
    kept = _kept_notes(results)
    results.write_text(header + "\n" + "\n".join(sections) + "\n" + note + "\n" + kept)


CHANGES = "## What was changed to get here"


def _kept_notes(path: Path) -> str:
    """The hand-written section of RESULTS.md (before/after notes), kept across runs."""
    if not path.exists():
        return ""
    text = path.read_text()
    at = text.find(CHANGES)
    return "" if at < 0 else "\n" + text[at:]


if __name__ == "__main__":
    main()
