"""The long form of the final-file and special-file fault test (tests/faults/test_folder_files.py).

    python tools/faults_folder_files.py --trials 400 --seed 1

Damages one file of a copy of a stored run folder per trial — summary.json, cases.parquet,
scores.parquet or data.parquet made a FIFO, a symlink out of the folder, a 17 GiB sparse
file or a directory, a flipped bit, a cut; two values swapped in scores.parquet with every
total kept; another run's final files copied in — loads it, and prints how many loads were
identical to the run its log holds, detected (a warning), raised, slow (over 10 s) and
silently different. Exits 1 if any was raised, slow or silently different.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

# the trial machinery lives with the test, so that both run the very same workload
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.faults.test_folder_files import folder_trials


def main(argv: list[str] | None = None) -> int:
    """Run the trials; 0 when no load raised, hung or was silently different."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    begin = time.monotonic()
    counts = folder_trials(args.trials, args.seed)
    took = time.monotonic() - begin
    print(
        f"{args.trials} damaged folders [seed {args.seed}, {took:.0f} s]: "
        + ", ".join(f"{n} {k}" for k, n in counts.items())
    )
    return 1 if counts["raised"] or counts["slow"] or counts["silently different"] else 0


if __name__ == "__main__":
    sys.exit(main())
