"""`evalbook compare A B`: per-score means and paired deltas, the warnings that matter, and
the cases that regressed most; `--by` / `--cluster` as `eb.compare(by=, cluster=)`.
`evalbook compare A B C ...`: the leaderboard of the runs, with tiers and rank intervals."""

from __future__ import annotations

import argparse
import json
import sys

from .._api._refs import resolve_run, score_names
from .._api._run import Run
from .._compare._compare import Comparison, compare
from .._compare._leaderboard import board_order, leaderboard
from .._compare._verdict import verdict
from .._render._board_html import board_text, cost_cell
from .._render._compare_html import comparison_text
from .._render._json_view import comparison_json
from .._render._markdown import comparison_markdown
from .._util._fmt import format_pct, format_pp
from ._args import (
    RUN_HELP,
    CliError,
    count,
    drop,
    format_option,
    slice_columns,
    slice_options,
    store_option,
)
from ._run_report import slice_footer
from ._terminal import Out, for_terminal, render_table

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "compare"
HELP = "compare two runs (deltas, warnings, regressions), or rank three or more in tiers"
DESCRIPTION = (
    "Compare run B against run A: per-score means and paired deltas, the "
    "warnings that matter, and the cases that regressed most. Given three or more runs, "
    "print their leaderboard: each run's tier (runs not separable from the tier's best) and "
    "the ranks it could hold."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """A, B, `--score`, `--top`, `--by` / `--cluster`, `--store`."""
    p.add_argument("a", metavar="A", help="the reference run (" + RUN_HELP + ")")
    p.add_argument("b", metavar="B", help="the run compared with A")
    p.add_argument("more", metavar="C", nargs="*", help="more runs: rank them all (eb.leaderboard)")
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
    format_option(p)
    p.add_argument(
        "--max-drop",
        type=drop,
        metavar="X",
        help="with --format: the verdict also checks that B is not worse than A by more "
        "than X (the paired delta's 95%% CI lower bound >= -X), as evalbook gate B "
        "--against A --max-drop X",
    )
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook compare A B [--score NAME]`: summary, warnings, top regressions; with more
    runs, their board."""
    a = resolve_run(args.a, args.store)
    b = resolve_run(args.b, args.store)
    if args.more:
        return _board([a, b, *(resolve_run(ref, args.store) for ref in args.more)], args)
    if args.max_drop is not None and args.format is None:
        raise CliError(
            "--max-drop applies with --format (the verdict of the summary); to gate, run "
            "evalbook gate B --against A --max-drop X"
        )
    score = score_names(a, b, args.score)  # as `%eval compare --score` reads it
    by = slice_columns(args.by)
    if by or args.cluster is not None:
        comparison = compare(a, b, score=score, by=by or None, cluster=args.cluster)
    else:
        comparison = compare(a, b, score=score)
    if args.format is not None:
        return _formatted(comparison, args)
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


def _formatted(comparison: Comparison, args: argparse.Namespace) -> int:
    """`--format markdown|json`: the comparison with B's check (against A with --max-drop)."""
    result = verdict(comparison.b, comparison.a, max_drop=args.max_drop)
    regressed = comparison.regressions()
    if args.format == "markdown":
        sys.stdout.write(comparison_markdown(comparison, result, regressions=regressed))
    else:
        data = comparison_json(comparison, result, regressions=regressed)
        sys.stdout.write(json.dumps(data, indent=2, allow_nan=False) + "\n")
    return 0


def _board(runs: list[Run], args: argparse.Namespace) -> int:
    """The runs' leaderboard, as `eb.show(runs)` words it: tiers and rank intervals."""
    given = [f"--{name}" for name in ("score", "by", "cluster") if getattr(args, name)]
    if given:
        raise CliError(
            f"{', '.join(given)} compare two runs; three or more are ranked by their primary "
            "score: compare two of them to slice or pick a score"
        )
    board = leaderboard(runs)
    out = Out(sys.stdout)
    out.lines(board_text(board, [cost_cell(runs[i]) for i in board_order(board)]).splitlines())
    return 0
