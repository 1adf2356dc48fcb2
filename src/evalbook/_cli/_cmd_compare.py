"""`evalbook compare A B`: per-score means and paired deltas, the warnings that matter, and
the cases that regressed most; `--by` / `--cluster` as `eb.compare(by=, cluster=)`."""

from __future__ import annotations

import argparse
import sys

from .._api._refs import resolve_run, score_names
from .._compare._compare import compare
from .._render._compare_html import comparison_text
from .._util._fmt import format_pct, format_pp
from ._args import RUN_HELP, count, slice_columns, slice_options, store_option
from ._run_report import slice_footer
from ._terminal import Out, for_terminal, render_table

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "compare"
HELP = "compare two runs: per-score deltas, warnings, top regressions"
DESCRIPTION = (
    "Compare run B against run A: per-score means and paired deltas, the "
    "warnings that matter, and the cases that regressed most."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """A, B, `--score`, `--top`, `--by` / `--cluster`, `--store`."""
    p.add_argument("a", metavar="A", help="the reference run (" + RUN_HELP + ")")
    p.add_argument("b", metavar="B", help="the run compared with A")
    p.add_argument(
        "--score",
        metavar="NAME",
        help="score(s) to compare, comma-separated (default: the primary score, else the "
        "only common score, else every common score)",
    )
    p.add_argument(
        "--top", type=count, default=10, metavar="N", help="regressed cases to list (default 10)"
    )
    slice_options(p)
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook compare A B [--score NAME]`: summary, warnings, top regressions."""
    a = resolve_run(args.a, args.store)
    b = resolve_run(args.b, args.store)
    score = score_names(a, b, args.score)  # as `%eval compare --score` reads it
    by = slice_columns(args.by)
    if by or args.cluster is not None:
        comparison = compare(a, b, score=score, by=by or None, cluster=args.cluster)
    else:
        comparison = compare(a, b, score=score)
    out = Out(sys.stdout)
    out.line(
        f"A: {for_terminal(a.name)} ({for_terminal(a.id)}) · {for_terminal(a.headline.text)}", "dim"
    )
    out.line(
        f"B: {for_terminal(b.name)} ({for_terminal(b.id)}) · {for_terminal(b.headline.text)}", "dim"
    )
    out.line()
    # the one text form of a comparison: the same lines as repr() and the widget's text
    out.lines(comparison_text(comparison).splitlines())
    if by or args.cluster is not None:
        # a clustered comparison's slices are small by clusters, as `show --by` counts them
        what = "clusters" if comparison.cluster is not None else "paired cases"
        slice_footer(out, comparison.summary, by, args.cluster, what)
    if not args.top:
        return 0
    regressed = comparison.regressions()
    out.line()
    if regressed.empty:
        out.line("no case regressed")
        return 0
    top = regressed.head(args.top)
    out.line(f"top regressions ({len(top)} of {len(regressed)}):")
    rows = [
        [
            for_terminal(r["case_id"], 30),
            for_terminal(r["score"]),
            format_pct(r["a"]),
            format_pct(r["b"]),
            format_pp(r["delta"]),
            for_terminal(r.get("output_a"), 30),
            for_terminal(r.get("output_b"), 30),
        ]
        for _, r in top.iterrows()
    ]
    headers = ["case_id", "score", "A", "B", "B − A", "output A", "output B"]
    out.lines(render_table(headers, rows, [False, False, True, True, True, False, False]))
    return 0
