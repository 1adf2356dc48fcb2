"""The `evalbook` command line: argument parsing, dispatch and error reporting.

Exit codes: 0 success · 1 a gate condition failed · 2 bad usage or a user error (missing
file, unknown run, bad number, unknown score, configuration error) · 3 an unexpected error.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import TextIO

from .._api._refs import TABLES, RefError
from .._compare._gate_checks import GateError
from .._errors import ConfigurationError
from .._version import __version__
from . import _attempts as attempts
from . import _cache as cache
from . import _commands as cmd
from . import _gate as gate
from . import _import as imports
from . import _otlp as otlp
from . import _pool as pool
from ._args import (
    EXIT_OK,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    CliError,
    Parser,
    count,
    one_line,
    positive_int,
    say_error,
    seconds,
    usd,
)

__all__ = ["main"]


def _store_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="DIR",
        default="runs",
        help="run store where RUN names are looked up (default: ./runs)",
    )


_RUN_HELP = "a run folder, or a run name in the store (the latest run of that name wins)"


def _slice_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--by",
        metavar="COL",
        help="one row per (slice, score): a column of the run's input data (or several, "
        "comma-separated); slices with fewer than 10 counted cases are flagged small",
    )
    p.add_argument(
        "--cluster",
        metavar="COL",
        help="a column of the input data whose cases are not independent (e.g. a passage): "
        "cluster-robust intervals on its clusters (default: the run's own cluster column)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The `evalbook` argument parser (every command has `--help`)."""
    parser = Parser(
        prog="evalbook",
        description="Run, inspect, compare and gate evaluations of LLM and AI systems.",
        epilog="Exit codes: 0 ok · 1 a gate condition failed · 2 bad usage or input · "
        "3 unexpected error. 'python -m evalbook' is the same command.",
    )
    parser.add_argument("--version", action="version", version=f"evalbook {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser(
        "run",
        help="run every module-level eb.Eval in a Python file",
        description="Import FILE, run every module-level eb.Eval in it, print each headline and "
        "summary table, and where the run is stored.",
    )
    p.add_argument("file", metavar="FILE.py", help="Python file defining one or more eb.Eval")
    p.add_argument(
        "--name",
        help="run name (with several Evals in the file: a prefix, giving NAME-<eval name>)",
    )
    p.add_argument("--limit", type=positive_int, metavar="N", help="run only the first N cases")
    p.add_argument("--concurrency", type=positive_int, metavar="K", help="cases in flight")
    p.add_argument("--attempts", type=positive_int, metavar="N", help="tries per sample")
    p.add_argument("--epochs", type=positive_int, metavar="K", help="times each case runs")
    p.add_argument("--timeout", type=seconds, metavar="S", help="seconds per task attempt")
    p.add_argument(
        "--max-cost",
        type=usd,
        metavar="USD",
        help="budget: no new sample starts once the recorded cost reaches USD (resumable)",
    )
    again = p.add_mutually_exclusive_group()
    again.add_argument(
        "--resume",
        metavar="RUN",
        help="continue this stored run (one Eval in FILE): only its unfinished cases run",
    )
    again.add_argument(
        "--retry-errors",
        metavar="RUN",
        help="a new run that keeps RUN's passed and failed cases and runs its errored, "
        "timed-out and unrun ones again (one Eval in FILE); RUN is not changed",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--store", metavar="DIR", help="run store folder (default: the Eval's, else ./runs)"
    )
    where.add_argument("--no-store", action="store_true", help="keep the runs in memory only")
    p.set_defaults(func=cmd.cmd_run)

    p = sub.add_parser(
        "show",
        help="a stored run's headline, summary and unscored breakdown",
        description="Print a stored run's headline, summary table, outcomes and the breakdown "
        "of unscored and error records.",
    )
    p.add_argument("run", metavar="RUN", help=_RUN_HELP)
    pool.add_pool_arguments(p)  # show A B C --pool
    attempts.add_attempts_argument(p)  # show RUN --attempts
    _slice_options(p)
    _store_option(p)
    p.set_defaults(func=attempts.show_command(pool.show_command(cmd.cmd_show)))

    p = sub.add_parser(
        "runs", help="list the runs in a store", description="List the runs in a run store."
    )
    p.add_argument("store", metavar="STORE", nargs="?", default="runs", help="default: ./runs")
    p.set_defaults(func=cmd.cmd_runs)

    p = sub.add_parser(
        "compare",
        help="compare two runs: per-score deltas, warnings, top regressions",
        description="Compare run B against run A: per-score means and paired deltas, the "
        "warnings that matter, and the cases that regressed most.",
    )
    p.add_argument("a", metavar="A", help="the reference run (" + _RUN_HELP + ")")
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
    _slice_options(p)
    _store_option(p)
    p.set_defaults(func=cmd.cmd_compare)

    p = sub.add_parser(
        "export",
        help="write a run's table to CSV or Parquet, or send the run to OpenTelemetry",
        description="Write one table of a run to PATH, as CSV or Parquet by its extension "
        "(.csv, .parquet or .pq). Default: the long scores table. With --otlp URL, send the "
        "run to an OTLP/HTTP receiver instead (no PATH).",
    )
    p.add_argument("run", metavar="RUN", help=_RUN_HELP)
    p.add_argument(
        "path", metavar="PATH", nargs="?", help="output file ending in .csv, .parquet or .pq"
    )
    p.add_argument("--table", choices=TABLES, help="which table (default: scores); not with --otlp")
    otlp.add_otlp_options(p)
    _store_option(p)
    p.set_defaults(func=otlp.export_command(cmd.cmd_export))

    gate.add_gate_parser(sub, _RUN_HELP, _store_option)
    cache.add_cache_parser(sub)
    imports.add_import_parser(sub)

    p = sub.add_parser(
        "demo",
        help="run the bundled example end to end, offline",
        description="Run the bundled arithmetic example (a deterministic local model and a "
        "judge with a scripted client; no network), store the run and print its headline.",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="DIR", default="runs", help="run store (default ./runs)")
    where.add_argument("--no-store", action="store_true", help="keep the run in memory only")
    p.set_defaults(func=cmd.cmd_demo)
    return parser


class _StderrHandler(logging.Handler):
    """Library warnings (e.g. a scorer's first invalid value) as `evalbook: warning:` lines."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = one_line(record.getMessage())
            sys.stderr.write(f"evalbook: {record.levelname.lower()}: {message}\n")
        except Exception:  # pragma: no cover - never let logging break a command
            self.handleError(record)


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A Python warning as one `evalbook: warning:` line: its text, never its source path.

    The default display (`_commands.py:87: RuntimeWarning: ...` and the source line) speaks
    to the library's developers, not to whoever runs the command.
    """
    sys.stderr.write(f"evalbook: warning: {one_line(str(message))}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `evalbook` console script and `python -m evalbook`.

    Example:
        >>> main(["--version"])
        evalbook 0.1.0
        0
    """
    for stream in (sys.stdout, sys.stderr):
        # A terminal that cannot show "·" or "—" gets "?" rather than a crash.
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")
    log = logging.getLogger("evalbook")
    handler = _StderrHandler(logging.WARNING)
    log.addHandler(handler)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return _main(argv)
    finally:
        log.removeHandler(handler)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
    prog = f"evalbook {args.command}"
    try:
        code: int = args.func(args)
        sys.stdout.flush()
        return code
    except CliError as exc:
        say_error(str(exc), prog)
        return exc.code
    except (RefError, GateError, ConfigurationError) as exc:
        say_error(str(exc), prog)
        return EXIT_USAGE
    except KeyboardInterrupt:
        say_error("interrupted", prog)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `evalbook runs | head`): not an error worth a message.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except Exception as exc:
        if os.environ.get("EVALBOOK_DEBUG"):
            traceback.print_exc()
        say_error(
            f"unexpected {type(exc).__name__}: {exc} (set EVALBOOK_DEBUG=1 for the traceback)", prog
        )
        return EXIT_UNEXPECTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
