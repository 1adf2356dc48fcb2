"""`evalbook export RUN --otlp URL`: send a stored run to an OTLP/HTTP receiver.

`export` writes a table to PATH; with `--otlp` it sends the run to OpenTelemetry instead
(`export_otel`, docs/interop.md) and needs no PATH. A receiver that refuses, or none
listening, is one `evalbook export: error:` line (exit 2).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from .._api._refs import resolve_run
from .._interop._otel import OtelExportError, export_otel
from ._args import CliError, seconds
from ._terminal import Out, clean

__all__ = ["add_otlp_options", "export_command"]

_DEFAULT_TIMEOUT = 5.0


def add_otlp_options(p: argparse.ArgumentParser) -> None:
    """`--otlp URL` and `--otlp-timeout S` on the `export` parser."""
    p.add_argument(
        "--otlp",
        metavar="URL",
        help="send the run to an OTLP/HTTP receiver at URL (e.g. http://127.0.0.1:4318) "
        "instead of writing PATH: a gauge evalbook.score.<name> per score, a span per sample",
    )
    p.add_argument(
        "--otlp-timeout",
        type=seconds,
        default=_DEFAULT_TIMEOUT,
        metavar="S",
        help="give up on the receiver after S seconds, retries included "
        f"(default {_DEFAULT_TIMEOUT:g})",
    )


def export_command(
    to_file: Callable[[argparse.Namespace], int],
) -> Callable[[argparse.Namespace], int]:
    """The `export` command: `to_file` (the table export) unless `--otlp` is given."""

    def command(args: argparse.Namespace) -> int:
        if args.otlp is None:
            if args.path is None:  # as argparse said when PATH was required
                raise CliError(
                    "the following arguments are required: PATH (see 'evalbook export --help')"
                )
            return to_file(args)
        if args.path is not None:
            raise CliError(
                f"give PATH or --otlp URL, not both (PATH {args.path!r} writes a table; "
                "--otlp sends the run to OpenTelemetry)"
            )
        if getattr(args, "table", None) is not None:  # a table is not what --otlp sends
            raise CliError(
                f"--table {args.table} does not apply with --otlp: the run's gauges and spans "
                "are sent; leave --table out (or give PATH to write that table)"
            )
        return send(args)

    return command


def send(args: argparse.Namespace) -> int:
    """`evalbook export RUN --otlp URL`: one line of what was sent."""
    run = resolve_run(args.run, args.store)
    try:
        sent = export_otel(run, endpoint=args.otlp, timeout=args.otlp_timeout)
    except (OtelExportError, ImportError) as exc:
        raise CliError(str(exc)) from None
    Out(sys.stdout).line(clean(sent.text))
    return 0
