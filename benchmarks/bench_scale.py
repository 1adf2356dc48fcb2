"""Scale: 100k cases × 10 scores (1M records) — peak RSS, table/summary build, load, compare.

Run: python benchmarks/bench_scale.py [--cases 100000] [--scores 10]
Each measurement runs in a fresh subprocess so peak RSS belongs to that step alone.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

os.environ.setdefault("EVALBOOK_PROGRESS", "0")


def _make_run(n: int, k: int, seed: int, store: str | None) -> object:
    import numpy as np
    import pandas as pd

    import evalbook as eb

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"output": rng.random(n)})
    scorers = []
    for j in range(k):
        d = eb.define_score(f"s{j}")
        if j % 2:
            scorers.append(eb.scorer(d)(lambda output: 1.0 if output > 0.4 else 0.0))
        else:
            scorers.append(eb.scorer(d)(lambda output: output))
    return eb.run(
        df,
        output_column="output",
        scorers=scorers,
        store=store,
        progress=False,
        name=f"scale{seed}",
    )


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def step_build(n: int, k: int) -> dict[str, float]:
    """Run, then time tables + summary against plain pandas doing the same from the records.

    The baseline is what a user without evalbook would write: a DataFrame of the long table's
    columns built from Python lists, then a groupby for mean, count and std per score.
    """
    run = _make_run(n, k, 1, None)
    res = run._results  # type: ignore[attr-defined]
    names = [d.name for d in run.definitions]  # type: ignore[attr-defined]
    statuses = ("scored", "unscored", "error")
    raw = {
        "case_id": [c for c in res.case_ids for _ in range(k)],
        "score": names * n,
        "status": [statuses[s] for s in res.status.tolist()],
        "value": res.value.tolist(),
        "counted": res.value.tolist(),
        "reason": res.reason,
        "message": res.message,
        "rationale": res.rationale,
        "grader_kind": [None] * (n * k),
        "grader_id": [None] * (n * k),
        "grader_model": [None] * (n * k),
        "derived": [False] * (n * k),
        "metadata": res.metadata,
    }
    t0 = time.perf_counter()
    plain = pd.DataFrame(raw)
    t1 = time.perf_counter()
    plain.groupby("score")["counted"].agg(["mean", "count", "std"])
    t_groupby = time.perf_counter() - t1
    t_plain = time.perf_counter() - t0
    t0 = time.perf_counter()
    _ = run.scores  # type: ignore[attr-defined]
    run.summary()  # type: ignore[attr-defined]
    _ = run.cases  # type: ignore[attr-defined]
    t_build = time.perf_counter() - t0
    return {
        "build_s": t_build,
        "plain_s": t_plain,
        "groupby_s": t_groupby,
        "peak_mb": _peak_mb(),
    }


def step_store(n: int, k: int, folder: str) -> dict[str, float]:
    import evalbook as eb

    a = _make_run(n, k, 1, folder)
    b = _make_run(n, k, 2, folder)
    t0 = time.perf_counter()
    loaded = eb.load_run(a.path)  # type: ignore[attr-defined]
    _ = loaded.scores
    t_load = time.perf_counter() - t0
    b2 = eb.load_run(b.path)  # type: ignore[attr-defined]
    _ = b2.scores
    t0 = time.perf_counter()
    eb.compare(loaded, b2)  # type: ignore[attr-defined]
    t_compare = time.perf_counter() - t0
    size = sum(f.stat().st_size for f in Path(a.path).iterdir())  # type: ignore[attr-defined]
    return {"load_s": t_load, "compare_s": t_compare, "store_bytes": size, "peak_mb": _peak_mb()}


def _child(step: str, n: int, k: int, folder: str) -> dict[str, float]:
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            step,
            "--cases",
            str(n),
            "--scores",
            str(k),
            "--folder",
            folder,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--scores", type=int, default=10)
    parser.add_argument("--child", default=None)
    parser.add_argument("--folder", default="")
    args = parser.parse_args()
    if args.child == "build":
        print(json.dumps(step_build(args.cases, args.scores)))
        return
    if args.child == "store":
        print(json.dumps(step_store(args.cases, args.scores, args.folder)))
        return
    n, k = args.cases, args.scores
    with tempfile.TemporaryDirectory() as folder:
        build = _child("build", n, k, folder)
        store = _child("store", n, k, folder)
    records = n * k
    print(f"## Scale: {n:,} cases × {k} scores ({records:,} records)\n")
    print("| measure | value | target |")
    print("|---|---|---|")
    print(f"| peak RSS, run + tables + summary | {build['peak_mb']:.0f} MB | ≤ 1,500 MB |")
    ratio = build["build_s"] / build["groupby_s"]
    print(f"| tables + summary vs a groupby of the built long table | {ratio:.2f}× | ≤ 2× |")
    ratio = build["build_s"] / build["plain_s"]
    print(
        f"| tables + summary vs plain pandas (records → DataFrame → groupby) | {ratio:.2f}× | — |"
    )
    print(f"| load_run (scores table ready) | {store['load_s']:.2f} s | — |")
    print(f"| compare two runs ({records:,} paired records) | {store['compare_s']:.2f} s | ≤ 1 s |")
    print(f"| run folder size | {store['store_bytes'] / records:.1f} bytes/record | — |")
    print(f"| peak RSS, two stored runs + load + compare | {store['peak_mb']:.0f} MB | — |")


if __name__ == "__main__":
    main()
