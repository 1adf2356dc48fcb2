"""`evalbook demo`: the bundled example (`_demo_eval.py`) end to end, offline; it stores the
run and prints its report and what to try next."""

from __future__ import annotations

import argparse
import sys

from ._demo_eval import demo_eval
from ._run_report import print_run
from ._terminal import Out

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "demo"
HELP = "run the bundled example end to end, offline"
DESCRIPTION = (
    "Run the bundled arithmetic example (a deterministic local model and a "
    "judge with a scripted client; no network), store the run and print its headline."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`--store DIR` / `--no-store`."""
    where = p.add_mutually_exclusive_group()
    where.add_argument("--store", metavar="DIR", default="runs", help="run store (default ./runs)")
    where.add_argument("--no-store", action="store_true", help="keep the run in memory only")


def run(args: argparse.Namespace) -> int:
    """`evalbook demo`: the bundled example, offline, stored; prints the headline."""
    store = None if args.no_store else args.store
    result = demo_eval().run(store=store)
    out = Out(sys.stdout)
    print_run(out, result, breakdown=True)
    if result.path is not None:
        opt = "" if args.store == "runs" else f" --store {args.store}"
        out.line()
        out.line(
            f"next: evalbook show {result.name}{opt} · evalbook gate {result.name} --min 0.8{opt}",
            "dim",
        )
    return 0
