"""What a click in `eb.show(run)` costs in the kernel: building the view, and each action's
answer (the HTML the front end is sent), on a run of N cases; and the first opening of each
tab that a view makes only when it is opened (Unscored reasons, Cases, Case table).

Each action goes through `view.act`, which is what a message from the front end does
(docs/architecture.md, the view protocol): hello, the Case table tab, the last page, a page
number, a header sort, a search, "open", the Cases tab and its last page. The median of
`--repeats` rounds, with the HTML's size: a page is the unit the front end holds (25 rows of
the table, 50 entries of a list), so the size must not grow with N. Bar: each action under
250 ms at N = 20,000. With `--run PATH` the run is a stored one, loaded first (e.g. the
1,000,000-sample run `bench_case_table.py` stores: docs/performance.md's bars there are the view
open in ≤ 2 s and each action in ≤ 0.5 s); times are wall and CPU (the machine is shared).

    python benchmarks/bench_view.py [--cases 20000] [--repeats 5] [--run PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import pandas as pd

import evalbook as eb
from evalbook._render._case_table import input_labels


def _run(n: int) -> eb.Run:
    data = pd.DataFrame({"q": [f"question {i}" for i in range(n)], "topic": ["t"] * n})
    return eb.run(data, task=lambda q, topic: q.upper(), store=None, progress=False,
                  scorers=[lambda output: float(len(output) % 2)])  # fmt: skip


def _timed(f: Callable[[int], Any], repeats: int) -> tuple[float, float, Any]:
    """The median wall and CPU time of `f(round)` (each round a new value, so that each one
    does work), and its last result."""
    walls, cpus, out = [], [], None
    for i in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        out = f(i)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--run", metavar="PATH", help="a stored run to load instead")
    args = parser.parse_args()
    loaded = ""
    if args.run:
        load, load_cpu, run = _timed(lambda _: eb.load_run(args.run), 1)
        loaded = f"load_run: {load:,.2f} s ({load_cpu:,.2f} s CPU); "
    else:
        run = _run(args.cases)
    n = len(run.cases)
    # the first view of a process imports the widget library (once per kernel); then a view
    # makes its Unscored reasons, Cases and Case table tabs when they are first opened
    first, first_cpu, view = _timed(lambda _: eb.show(run), 1)
    build, build_cpu, view = _timed(lambda _: eb.show(run), max(1, args.repeats // 2))
    opened = [
        (label, *_timed(lambda _, tab=tab: view.act("tab", tab), 1)[:2])
        for label, tab in (("Case table", 4), ("Cases", 3), ("Unscored reasons", 2))
    ]
    table = view.table
    q = table.labels.index(input_labels(run)[0])
    actions: list[tuple[str, Callable[[int], str]]] = [
        ("hello", lambda i: view.act("hello")),
        ("tab: Case table", lambda i: view.act("tab", 4)),
        ("page: last, first", lambda i: view.act("table.page", ("last", "first")[i % 2])),
        ("page: a number typed", lambda i: view.act("table.page", str(400 + i))),
        ("header sort (asc, desc, off)", lambda i: view.act(f"table.head.{q}")),
        ("search '1…' (inputs, output)", lambda i: view.act("table.search", f"1{i}")),
        ("open a row", lambda i: view.act("table.open", table.shown[i % len(table.shown)])),
        ("tab: Cases", lambda i: view.act("tab", 3)),
        ("cases page: last, first", lambda i: view.act("explorer.page", ("last", "first")[i % 2])),
    ]
    print(f"## eb.show(run) round trips in the kernel (N={n:,}, median of {args.repeats})")
    print()
    print(f"{loaded}building the view: {first * 1000:,.0f} ms ({first_cpu * 1000:,.0f} ms CPU) "
          f"the first time in the process, {build * 1000:,.0f} ms ({build_cpu * 1000:,.0f} ms "
          "CPU) again.")  # fmt: skip
    print()
    print("| a tab opened the first time (it is made then) | ms | CPU ms |")
    print("|---|---|---|")
    for label, seconds, cpu in opened:
        print(f"| {label} | {seconds * 1000:,.1f} | {cpu * 1000:,.1f} |")
    print()
    print("| action | ms | CPU ms | HTML sent (KB) |")
    print("|---|---|---|---|")
    for label, action in actions:
        seconds, cpu, html = _timed(action, args.repeats)
        print(f"| {label} | {seconds * 1000:,.1f} | {cpu * 1000:,.1f} | {len(html) / 1024:,.0f} |")
    print()
    cases = view.explorer.pager.page.label
    print(f"Pager: {table.pager.page.label} (after the search); cases: {cases}")


if __name__ == "__main__":
    main()
