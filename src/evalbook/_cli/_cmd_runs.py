"""`evalbook runs [STORE]`: one line per stored run, oldest first."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from .._api._refs import missing_store
from .._store._listing import runs
from .._util._fmt import format_count
from ._args import CliError
from ._terminal import Out, for_terminal, render_table

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "run"]

NAME = "runs"
HELP = "list the runs in a store"
DESCRIPTION = "List the runs in a run store."


def add_arguments(p: argparse.ArgumentParser) -> None:
    """STORE, optional."""
    p.add_argument("store", metavar="STORE", nargs="?", default="runs", help="default: ./runs")


def run(args: argparse.Namespace) -> int:
    """`evalbook runs [STORE]`: one line per stored run, oldest first."""
    store = Path(args.store)
    if not store.is_dir():
        raise CliError(missing_store(store))
    table = runs(store)
    out = Out(sys.stdout)
    if table.empty:
        out.line(f"no runs in {store}/")
        return 0
    table = table.sort_values("started_at", kind="stable")
    rows = [
        [
            for_terminal(r["name"], 40),
            for_terminal(r["id"]),
            _when(r["started_at"]),
            for_terminal(r["status"]),
            format_count(r["n_cases"]),
            for_terminal(r["headline"], 60),
        ]
        for _, r in table.iterrows()
    ]
    headers = ["name", "id", "started (UTC)", "status", "cases", "headline"]
    right = [False, False, False, False, True, False]
    out.lines(render_table(headers, rows, right))
    return 0


def _when(value: Any) -> str:
    if value is None or value is pd.NaT:
        return ""
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        return for_terminal(value)
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC")
    return stamp.strftime("%Y-%m-%d %H:%M:%S")
