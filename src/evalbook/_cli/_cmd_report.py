"""`evalbook report RUN [--against BASE] [-o PATH]`: one self-contained HTML report file
(`eb.report`): headline, summary, unscored breakdown, the check, and with `--against` the
comparison, its warnings and the regressions with their output diffs (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys

from .._api._refs import resolve_run
from .._api._report import report
from ._args import RUN_HELP, CliError, drop, slice_columns, store_option
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "report"
HELP = "write one self-contained HTML report of a run (against a baseline with --against)"
DESCRIPTION = (
    "Write one HTML file that needs no network and reads with JavaScript off: the run's "
    "headline, summary, unscored reasons and errors and its check; with --against BASE the "
    "comparison BASE -> RUN, its warnings, and the worst regressions with output diffs and "
    "transcripts. At most 8 MB whatever the run (long lists are cut and counted)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """RUN, `--against`, `-o`, `--by`, `--max-drop`, `--store`."""
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument("--against", metavar="BASE", help="a baseline run to compare RUN with")
    p.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default="report.html",
        help="the file to write (default: report.html)",
    )
    p.add_argument(
        "--by",
        metavar="COL",
        help="also the summary sliced by a column of the input data (or several, comma-separated)",
    )
    p.add_argument(
        "--max-drop",
        type=drop,
        metavar="X",
        help="with --against: the check also asks that RUN is not worse than BASE by more "
        "than X (as evalbook gate RUN --against BASE --max-drop X)",
    )
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook report`: write the file, print its path and size."""
    if args.max_drop is not None and args.against is None:
        raise CliError("--max-drop needs --against BASE: the drop is measured against it")
    one = resolve_run(args.run, args.store)
    base = resolve_run(args.against, args.store) if args.against is not None else None
    by = slice_columns(args.by)
    path = report(one, base, args.output, by=by or None, max_drop=args.max_drop)
    size = path.stat().st_size
    Out(sys.stdout).line(f"wrote {for_terminal(path)} ({size / 1e6:.1f} MB)")
    return 0
