"""Import time: `import evalbook` minus `import pandas`, medians of fresh interpreters.

Run: python benchmarks/bench_import.py [--repeats 7]
Also lists the heavy optional modules that `import evalbook` must not load.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

HEAVY = ("plotly", "ipywidgets", "anywidget", "IPython", "scipy", "dask", "distributed", "openai")
_PROBE = (
    "import time, sys; t = time.perf_counter(); import {mod}; "
    "print(time.perf_counter() - t); print(','.join(m for m in {heavy!r} if m in sys.modules))"
)


def _time(mod: str) -> tuple[float, str]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(mod=mod, heavy=HEAVY)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return float(out[0]), out[1] if len(out) > 1 else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    pandas_t, evalbook_t, loaded = [], [], ""
    for _ in range(args.repeats):  # alternate, so machine load hits both alike
        pandas_t.append(_time("pandas")[0])
        t, loaded = _time("evalbook")
        evalbook_t.append(t)
    p, e = statistics.median(pandas_t), statistics.median(evalbook_t)
    print("## Import time\n")
    print("| import pandas | import evalbook | difference | target | heavy modules loaded |")
    print("|---|---|---|---|---|")
    print(f"| {p:.2f} s | {e:.2f} s | {e - p:.2f} s | ≤ 0.30 s | {loaded or 'none'} |")


if __name__ == "__main__":
    main()
