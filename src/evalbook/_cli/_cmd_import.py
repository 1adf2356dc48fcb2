"""`evalbook import PATH [--format F] [--name N] [--store DIR]`: another harness's results.

The results become an evalbook run (docs/interop.md), stored in the run store like a run of
evalbook's own, so `show`, `compare`, `gate` and `export` work on it by name.
"""

from __future__ import annotations

import argparse
import sys

from .._api._import import import_results
from .._interop._formats import FORMATS
from ._args import CliError
from ._run_report import print_run
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "import"
HELP = "store another harness's results as a run (Inspect AI, lm-eval, promptfoo, ...)"
DESCRIPTION = (
    "Read results written by another evaluation harness, store them as an "
    "evalbook run and print its headline. Every value goes through the score contract: "
    "one outside [0, 1] becomes an invalid_score record, never a number."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """PATH, `--format`, `--name`, `--store` / `--no-store`."""
    p.add_argument("path", metavar="PATH", help="a results file or folder")
    p.add_argument(
        "--format",
        choices=list(FORMATS),
        help="the harness that wrote PATH (default: detected)",
    )
    p.add_argument("--name", help="the run's name (default: the harness's task or eval name)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="DIR", default="runs", help="run store (default ./runs)")
    where.add_argument("--no-store", action="store_true", help="print it without storing it")


def run(args: argparse.Namespace) -> int:
    """`evalbook import PATH`: import, store, print the run and where it is."""
    try:
        result = import_results(args.path, format=args.format, name=args.name)
    except FileNotFoundError as exc:
        raise CliError(str(exc)) from None
    except ImportError as exc:  # the format's optional extra is missing
        raise CliError(str(exc)) from None
    out = Out(sys.stdout)
    if not args.no_store:
        result.save(args.store)
    print_run(out, result, breakdown=True)
    imported = result.options.get("imported", {})
    out.line(
        f"imported from {for_terminal(str(imported.get('path', args.path)), 200)} as {result.id}"
    )
    return 0
