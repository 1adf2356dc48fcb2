"""`evalbook export RUN PATH [--table T]` and `evalbook export RUN --otlp URL [--otlp-steps]`.

Without `--otlp` it writes one table of the run to PATH, as CSV or Parquet by its extension
(`_api._refs.export_table`, as `%eval export` does). With `--otlp` it sends the run to an
OTLP/HTTP receiver instead (`export_otel`, docs/interop.md) and takes no PATH; a receiver
that refuses, or none listening, is one `evalbook export: error:` line (exit 2). `--otlp-steps`
adds one span per transcript step (`export_otel(steps=True)`).
"""

from __future__ import annotations

import argparse
import sys

from .._api._refs import TABLES, export_table, resolve_run
from .._interop._otel import OtelExportError, export_otel
from ._args import RUN_HELP, CliError, seconds, store_option
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "export"
HELP = "write a run's table to CSV or Parquet, or send the run to OpenTelemetry"
DESCRIPTION = (
    "Write one table of a run to PATH, as CSV or Parquet by its extension "
    "(.csv, .parquet or .pq). Default: the long scores table. With --otlp URL, send the "
    "run to an OTLP/HTTP receiver instead (no PATH)."
)
_OTLP_TIMEOUT = 5.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """RUN, PATH, `--table`, `--otlp URL`, `--otlp-steps`, `--otlp-timeout S`, `--store`."""
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument(
        "path", metavar="PATH", nargs="?", help="output file ending in .csv, .parquet or .pq"
    )
    p.add_argument("--table", choices=TABLES, help="which table (default: scores); not with --otlp")
    p.add_argument(
        "--otlp",
        metavar="URL",
        help="send the run to an OTLP/HTTP receiver at URL (e.g. http://127.0.0.1:4318) "
        "instead of writing PATH: a gauge evalbook.score.<name> per score, a span per sample",
    )
    p.add_argument(
        "--otlp-steps",
        action="store_true",
        help="with --otlp: also one span per transcript step under its sample's span "
        "(GenAI semantic conventions; never message text)",
    )
    p.add_argument(
        "--otlp-timeout",
        type=seconds,
        default=_OTLP_TIMEOUT,
        metavar="S",
        help="give up on the receiver after S seconds, retries included "
        f"(default {_OTLP_TIMEOUT:g})",
    )
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook export`: the table to PATH, or with `--otlp` the run to the receiver."""
    if args.otlp is None:
        if args.otlp_steps:
            raise CliError(
                "--otlp-steps applies only with --otlp URL (it adds spans to what is sent)"
            )
        if args.path is None:  # as argparse said when PATH was required
            raise CliError(
                "the following arguments are required: PATH (see 'evalbook export --help')"
            )
        return _to_file(args)
    if args.path is not None:
        raise CliError(
            f"give PATH or --otlp URL, not both (PATH {args.path!r} writes a table; "
            "--otlp sends the run to OpenTelemetry)"
        )
    if args.table is not None:  # a table is not what --otlp sends
        raise CliError(
            f"--table {args.table} does not apply with --otlp: the run's gauges and spans "
            "are sent; leave --table out (or give PATH to write that table)"
        )
    return _send(args)


def _to_file(args: argparse.Namespace) -> int:
    """`evalbook export RUN PATH [--table T]`: one of the tables of `_api._refs.TABLES`."""
    written = export_table(resolve_run(args.run, args.store), args.path, args.table or "scores")
    Out(sys.stdout).line(f"wrote {written.table} ({written.rows} rows) to {written.path}")
    return 0


def _send(args: argparse.Namespace) -> int:
    """`evalbook export RUN --otlp URL`: one line of what was sent."""
    run = resolve_run(args.run, args.store)
    try:
        sent = export_otel(
            run, endpoint=args.otlp, timeout=args.otlp_timeout, steps=args.otlp_steps
        )
    except (OtelExportError, ImportError) as exc:
        raise CliError(str(exc)) from None
    Out(sys.stdout).line(for_terminal(sent.text))
    return 0
