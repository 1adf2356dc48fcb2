"""The case table at scale: open, sort, filter, search and page a stored run in the kernel.

A stored run of N samples (an instant async task, 3 scores; inputs `id`, a text `question`,
a `topic` of 20 values and a `level`; some samples errored with origin task or environment,
some records unscored or errors of the grader, so that every filter has matches) is loaded
with `eb.load_run`, then timed in one process, each action up to the page the front end
receives (the rows of `table_rows` and the HTML of the first page, 25 rows, and the header):

- open: `load_run` + `table_frame` + the first page (input order);
- each sort (each score, case_id, the text input `question`, output; ascending, then
  descending; the first time and again);
- each filter (outcome, status, reason, origin, slice, score range, search: first and again);
- a page jump to the last page of the table sorted by output, descending.

Each action's ratio is against plain pandas on the same work on the same frame: a sort against
`frame.sort_values(label, kind="stable")`, a filter against the boolean mask, a search against
`Series.str.contains(case=False)` over the same columns; the open against
`pd.read_parquet` of the run's three tables. Targets (docs/performance.md): open ≤ 2 s, every
action ≤ 0.5 s at 1,000,000 samples.

Building the run takes minutes at 1M (`eb.run` of 1,000,000 samples: 158 s here, 1.6 GB peak):
the run is kept under `--store` (default: a folder in the temp dir) and reused by the next call.

Run: python benchmarks/bench_case_table.py [--cases 1000000] [--store DIR]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import evalbook as eb
from evalbook._render._case_table import (
    STATIC_ROWS,
    CaseTableFilter,
    CellBudget,
    column_labels,
    header_html,
    row_html,
    table_frame,
    table_rows,
)

SCORES = ("exact", "graded", "judged")
OPEN_TARGET, ACTION_TARGET = 2.0, 0.5


def make_data(n: int) -> pd.DataFrame:
    """N cases: an `id`, a text question, a topic of 20 values, a level 1..5."""
    rng = np.random.default_rng(0)
    topics = np.array([f"topic {k}" for k in range(20)], dtype=object)
    topic = topics[rng.integers(0, 20, n)]
    return pd.DataFrame(
        {
            "id": [f"case-{i:07d}" for i in range(n)],
            "question": [f"what is item {i} of {t}" for i, t in zip(range(n), topic, strict=True)],
            "topic": topic,
            "level": rng.integers(1, 6, n),
        }
    )


async def task(question: str, level: int) -> str:
    if level == 5 and question.endswith("topic 3"):
        raise eb.EnvironmentFailure("sandbox down")
    if question.endswith("7 of topic 1"):
        raise KeyError("bug")
    return question.upper() if level % 2 else question


async def exact(output: str, question: str) -> float:
    return 1.0 if output == question else 0.0


async def graded(output: str, level: int) -> float:
    return level / 5


async def judged(output: str, level: int) -> Any:
    if level == 2 and output.endswith("9"):
        return eb.Unscored("no_reference")
    if output.endswith("13"):
        raise ValueError("scorer bug")
    return (len(output) % 7) / 6


def stored_run(n: int, store: Path) -> Path:
    """The path of a stored run of `n` samples under `store`, built the first time."""
    marker = store / f"case-table-{n}.path"
    if marker.exists() and Path(marker.read_text()).exists():
        return Path(marker.read_text())
    store.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    run = eb.run(make_data(n), task=task, scorers=[exact, graded, judged], store=store,
                 concurrency=200, progress=False)  # fmt: skip
    assert run.path is not None
    print(f"(built the run of {n:,} samples in {time.perf_counter() - t0:.0f} s: {run.path})\n")
    marker.write_text(str(run.path))
    return run.path


def page(frame: pd.DataFrame, rows: np.ndarray, labels: list[str], f: CaseTableFilter) -> str:
    """What the front end receives: the header and one page of rows, as HTML."""
    budget = CellBudget()
    names = list(SCORES)
    body = "".join(row_html(frame, int(i), labels, names, budget) for i in rows[:STATIC_ROWS])
    return header_html(labels, names, f) + body


CPU: list[float] = [0.0]  # the CPU time of the last `timed` call (the machine is shared)


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall time of `fn()` and its result; its CPU time in `CPU[0]`."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    CPU[0] = time.process_time() - c0
    return time.perf_counter() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=1_000_000)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "eb-case-table")
    args = parser.parse_args()
    n = args.cases
    path = stored_run(n, args.store)
    lines: list[tuple[str, float, float, float | None, float]] = []

    def report(what: str, ours: float, cpu: float, theirs: float | None, target: float) -> None:
        lines.append((what, ours, cpu, theirs, target))

    # open: load, the frame, the first page (evalbook's modules imported: `eb.load_run` is
    # imported on first use, once per process)
    _ = eb.load_run, eb.show
    t_load, run = timed(lambda: eb.load_run(path))
    c_load = CPU[0]
    t_head, _ = timed(lambda: run.headline)  # eb.show's first card; the frame reads its epochs
    c_head = CPU[0]
    t_frame, frame = timed(lambda: table_frame(run))
    c_frame = CPU[0]
    labels = column_labels(run)
    t_page, _ = timed(lambda: page(frame, table_rows(frame, CaseTableFilter()), labels,
                                   CaseTableFilter()))  # fmt: skip
    c_page = CPU[0]
    tables = [p for p in ("cases.parquet", "scores.parquet", "data.parquet") if (path / p).exists()]
    t_read, _ = timed(lambda: [pd.read_parquet(path / p) for p in tables])
    total = t_load + t_head + t_frame + t_page
    report("open: load_run + headline + table_frame + first page", total,
           c_load + c_head + c_frame + c_page, t_read, OPEN_TARGET)  # fmt: skip
    report("  of which load_run", t_load, c_load, None, OPEN_TARGET)
    report("  of which run.headline (summary)", t_head, c_head, None, OPEN_TARGET)
    report("  of which table_frame", t_frame, c_frame, None, OPEN_TARGET)
    report("  of which the first page", t_page, c_page, None, OPEN_TARGET)

    def action(what: str, f: CaseTableFilter, baseline: Callable[[], Any]) -> np.ndarray:
        t, rows = timed(lambda: table_rows(frame, f))
        cpu = CPU[0]
        t_html, _ = timed(lambda: page(frame, rows, labels, f))
        cpu += CPU[0]
        t_pandas, _ = timed(baseline)
        report(f"{what} ({len(rows):,} rows)", t + t_html, cpu, t_pandas, ACTION_TARGET)
        rows_: np.ndarray = rows
        return rows_

    for label in (*SCORES, "case_id", "question", "output"):
        for descending in (False, True):
            for when in ("first", "again"):
                way = "desc" if descending else "asc"
                action(
                    f"sort by {label}, {way}, {when}",
                    CaseTableFilter(sort=label, descending=descending),
                    lambda label=label, d=descending: frame.sort_values(
                        label, ascending=not d, kind="stable", na_position="last"
                    ),
                )
    action("filter outcome = errored", CaseTableFilter(outcome="errored"),
           lambda: np.flatnonzero(frame["outcome"].to_numpy() == "errored"))  # fmt: skip
    action("filter judged status = error", CaseTableFilter(score="judged", status="error"),
           lambda: np.flatnonzero(frame["judged status"].to_numpy() == "error"))  # fmt: skip
    action("filter judged reason = no_reference",
           CaseTableFilter(score="judged", reason="no_reference"),
           lambda: np.flatnonzero(frame["judged reason"].to_numpy() == "no_reference"))  # fmt: skip
    origin = frame["origin"].astype(str)
    action("filter origin = environment", CaseTableFilter(origin="environment"),
           lambda: np.flatnonzero(origin.str.contains("environment")))  # fmt: skip
    action("filter slice topic = topic 3", CaseTableFilter(slice_by="topic", slice_value="topic 3"),
           lambda: np.flatnonzero(frame["topic"].to_numpy() == "topic 3"))  # fmt: skip
    action("filter judged in [0.2, 0.6]", CaseTableFilter(score="judged", low=0.2, high=0.6),
           lambda: np.flatnonzero(frame["judged"].between(0.2, 0.6).to_numpy()))  # fmt: skip
    searched = [c for c in ("case_id", "question", "topic", "level", "output") if c in frame]

    def contains(word: str) -> np.ndarray:
        hit = np.zeros(len(frame), dtype=bool)
        for c in searched:
            text = frame[c].astype(str)
            hit |= text.str.contains(word, case=False, regex=False).to_numpy(dtype=bool)
        return np.flatnonzero(hit)

    for when in ("first", "again"):
        action(f"search 'ITEM 4242', {when}", CaseTableFilter(search="ITEM 4242"),
               lambda: contains("ITEM 4242"))  # fmt: skip
    action("search 'item 77' + outcome + sort by output",
           CaseTableFilter(search="item 77", outcome="passed", sort="output"),
           lambda: contains("item 77"))  # fmt: skip
    last = CaseTableFilter(sort="output", descending=True)
    ordered = table_rows(frame, last)
    t_jump, _ = timed(lambda: page(frame, ordered[-(len(ordered) % STATIC_ROWS or STATIC_ROWS):],
                                   labels, last))  # fmt: skip
    report("page jump to the last page (sorted by output, desc)", t_jump, CPU[0], None,
           ACTION_TARGET)  # fmt: skip

    print(f"## Case table at {n:,} samples (3 scores; load_run of a stored run)\n")
    print("| action | evalbook (wall) | CPU | plain pandas | ratio | target |")
    print("|---|---|---|---|---|---|")
    for what, ours, cpu, theirs, target in lines:
        base = "—" if theirs is None else f"{theirs:.3f} s"
        ratio = "—" if theirs is None else f"{ours / theirs:.2f}×"
        mark = "" if ours <= target else " (over)"
        print(f"| {what} | {ours:.3f} s{mark} | {cpu:.3f} s | {base} | {ratio} | ≤ {target:g} s |")


if __name__ == "__main__":
    main()
