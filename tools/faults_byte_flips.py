"""The long form of the byte-flip and truncation fault test (tests/faults/test_byte_flips.py).

    python tools/faults_byte_flips.py --trials 200 --seed 1 [--final 200] [--usage]

Flips one random byte of a stored run's events.jsonl `--trials` times (and cuts the log at
`--trials` random offsets), loads each damaged log and prints how many results were identical,
detected (a warning naming file and line; the tables of the lines before it), raised (a clear
error naming the file), wrong recoveries, raw exceptions and silently different results. Exits
1 if any result was a wrong recovery, a raw exception or silently different. `--final N` also
flips N bytes in each of cases.parquet, scores.parquet, summary.json and data.parquet (the log
intact) and prints the same counts per file. `--usage` runs the usage form instead
(tests/faults/test_usage_faults.py): a run whose task and judge record usage, each flip inside
a `"usage":` part of the log, `run.usage()` and `run.usage_summary()` compared too; with
`--final N`, N flips in cases.parquet and summary.json and the well-formed usage edits.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# the trial machinery lives with the test, so that both run the very same workload
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "faults"))

from test_byte_flips import BAD, final_file_flips, line, run_trials
from test_usage_faults import final_usage_faults, usage_log_trials


def _usage(trials: int, final: int, seed: int) -> int:
    """The usage form: the figures printed; how many results were bad."""
    begin = time.monotonic()
    flipped, cut = usage_log_trials(trials, trials, seed)
    print(f"{line('usage log byte flips', flipped)} [seed {seed}]")
    print(f"{line('usage log truncations', cut)} [{time.monotonic() - begin:.0f} s]")
    bad = sum(flipped[k] + cut[k] for k in BAD)
    if final > 0:
        for kind, counts in final_usage_faults(final, seed).items():
            print(line(kind, counts))
            bad += sum(counts[k] for k in BAD)
    return bad


def main(argv: list[str] | None = None) -> int:
    """Run the trials; 0 when no result was silently different or a raw exception."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="byte flips, and as many cuts")
    parser.add_argument("--final", type=int, default=0, help="flips in each final file (e.g. 200)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--usage", action="store_true", help="the usage form (see above)")
    args = parser.parse_args(argv)
    if args.usage:
        return 1 if _usage(args.trials, args.final, args.seed) else 0
    begin = time.monotonic()
    flipped, cut, trials = run_trials(args.trials, args.trials, args.seed)
    took = time.monotonic() - begin
    print(f"{line('byte flips', flipped)} [seed {args.seed}]")
    print(f"{line('truncations', cut)} [{took:.0f} s in all]")
    bad = sum(flipped[k] + cut[k] for k in BAD)
    if args.final > 0:  # the same flips in each final file, the log intact
        for name, counts in final_file_flips(args.final, args.seed).items():
            print(line(f"{name} flips", counts))
            bad += sum(counts[k] for k in BAD)
    for kind in BAD:
        if kind in trials.examples:
            print(f"  {kind}, e.g. {trials.examples[kind]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
