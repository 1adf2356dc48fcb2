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
from typing import Protocol, TextIO

from .._api._refs import RefError
from .._compare._gate_checks import GateError
from .._errors import ConfigurationError
from .._util._advice import from_the_command_line
from .._version import __version__
from . import (
    _cmd_cache,
    _cmd_compare,
    _cmd_demo,
    _cmd_export,
    _cmd_gate,
    _cmd_import,
    _cmd_report,
    _cmd_run,
    _cmd_runs,
    _cmd_show,
)
from ._args import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
    CliError,
    Parser,
    one_line,
    say_error,
)

__all__ = ["COMMANDS", "Command", "build_parser", "main"]


class Command(Protocol):
    """One CLI command: a module `_cli/_cmd_<name>.py` with these five names."""

    NAME: str  # the word after `evalbook`
    HELP: str  # its line in `evalbook --help`
    DESCRIPTION: str  # the text under its usage in `evalbook NAME --help`

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the command's arguments and options to its own parser."""

    def run(self, args: argparse.Namespace) -> int:
        """Do the command; the exit code (a user error: raise `CliError`)."""


# Every command, in the order `evalbook --help` lists them: a new command is a module and a
# line here (docs/architecture.md, "Where to add").
COMMANDS: tuple[Command, ...] = (
    _cmd_run,
    _cmd_show,
    _cmd_runs,
    _cmd_compare,
    _cmd_report,
    _cmd_export,
    _cmd_gate,
    _cmd_cache,
    _cmd_import,
    _cmd_demo,
)
_BY_NAME = {command.NAME: command for command in COMMANDS}


def build_parser() -> argparse.ArgumentParser:
    """The `evalbook` argument parser: one sub-parser per command (each has `--help`)."""
    parser = Parser(
        prog="evalbook",
        description="Run, inspect, compare and gate evaluations of LLM and AI systems.",
        epilog="Exit codes: 0 ok · 1 a gate condition failed · 2 bad usage or input · "
        "3 unexpected error. 'python -m evalbook' is the same command.",
    )
    parser.add_argument("--version", action="version", version=f"evalbook {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.DESCRIPTION)
        command.add_arguments(p)
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

    The default display (`_cmd_run.py:87: RuntimeWarning: ...` and the source line) speaks
    to the library's developers, not to whoever runs the command.
    """
    sys.stderr.write(f"evalbook: warning: {one_line(str(message))}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command (the entry point, `_cli.main`, loads this module first).

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
        with warnings.catch_warnings(), from_the_command_line():
            warnings.showwarning = _show_warning
            return _main(argv)
    except KeyboardInterrupt:  # before a command started (parsing) or after it ended
        say_error("interrupted")
        return EXIT_INTERRUPTED
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
        code = _BY_NAME[args.command].run(args)
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
        return EXIT_INTERRUPTED
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
