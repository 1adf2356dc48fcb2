"""The long form of the kill -9 and simultaneous-resume fault tests (tests/faults/).

    python tools/faults_kill.py --trials 200 --seed 1
    python tools/faults_kill.py --pairs 30 --seed 1
    python tools/faults_kill.py --trials 200 --pairs 30 --seed 1
    python tools/faults_kill.py --usage --trials 100 --seed 1

Prints the same figures as tests/faults/test_kill_trials.py and test_resume_races.py (one
line each, then any problem found, with the seed that reproduces it) and exits 1 if a case
was lost, run twice or paid twice, or a pair both ran. `--usage`: the task records usage in
the kill trials, and a resumed run whose `usage()` differs from an uninterrupted run's is a
problem too (tests/faults/test_usage_faults.py).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

# the trial machinery lives with the tests, so that both run the very same workload
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "faults"))

from _fault_pairs import PairTally, resume_pairs
from _fault_procs import kill_trials


def _bad_pairs(tally: PairTally) -> int:
    return tally.both_ran + tally.none_ran + tally.loser_calls + tally.paid_twice


def main(argv: list[str] | None = None) -> int:
    """Run the trials the flags ask for; 0 when nothing went wrong."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=0, help="kill -9 trials (e.g. 200)")
    parser.add_argument("--pairs", type=int, default=0, help="simultaneous resume pairs (e.g. 30)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--usage", action="store_true", help="the kill trials' task records usage, checked too"
    )
    args = parser.parse_args(argv)
    if args.trials <= 0 and args.pairs <= 0:
        parser.error("nothing to do: give --trials N and/or --pairs N")
    failed = 0
    with tempfile.TemporaryDirectory(prefix="evalbook-faults-") as tmp:
        if args.trials > 0:
            begin = time.monotonic()
            kills = kill_trials(Path(tmp) / "kill", args.trials, args.seed, args.usage)
            print(f"{kills.line()} [{time.monotonic() - begin:.0f} s, seed {args.seed}]")
            said: dict[str, list[str]] = {}
            for message in kills.startup_messages:
                said.setdefault(message.split(":")[0], []).append(message)
            for kind, messages in sorted(said.items()):
                print(f"  start-up kills whose resume raised {kind}: {len(messages)}, e.g.")
                print(f"    {messages[0]}")
            for problem in kills.problems:
                print(f"  problem: {problem}")
            failed += kills.lost + kills.twice_run + kills.duplicate_ends + len(kills.problems)
            failed += kills.usage_different
        if args.pairs > 0:
            begin = time.monotonic()
            pairs = resume_pairs(Path(tmp) / "pairs", args.pairs, args.seed)
            print(f"{pairs.line()} [{time.monotonic() - begin:.0f} s, seed {args.seed}]")
            for problem in pairs.problems:
                print(f"  problem: {problem}")
            failed += _bad_pairs(pairs) + pairs.duplicate_ends + len(pairs.problems)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
