"""`evalbook show A B C --pool`: the pooled summary of several runs in the terminal.

`show` keeps its one-run form; with `--pool` it takes one RUN or more and prints
`eb.pool(runs, by=...)` (docs/interop.md, Pooling): each score's mean over every run's
counted cases, its interval stratified by run, the runs' headlines when their primary scores
differ, and how a score's definition differs between runs. Every text is cleaned
(`_terminal.clean`): run names, labels and notes may hold any characters.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd

from .._api._refs import resolve_run
from .._compare._pool import pool
from .._util._fmt import format_ci, format_count, format_pct
from ._args import CliError
from ._commands import slice_columns
from ._terminal import Out, clean, render_table, slice_value

__all__ = ["add_pool_arguments", "pooled_table", "show_command"]

Command = Callable[[argparse.Namespace], int]


def add_pool_arguments(p: argparse.ArgumentParser) -> None:
    """`show`'s further RUN arguments and `--pool` (after its RUN argument)."""
    p.add_argument("more", metavar="RUN", nargs="*", help="more runs, with --pool")
    p.add_argument(
        "--pool",
        action="store_true",
        help="one table pooling every RUN: each score's mean over all their counted cases "
        "(weighted by counted values, never a mean of means), its 95%% CI stratified by run",
    )


def show_command(show: Command) -> Command:
    """`show`'s command: `show` itself for one RUN, the pooled table with `--pool`."""

    def command(args: argparse.Namespace) -> int:
        more = list(getattr(args, "more", None) or [])
        if getattr(args, "pool", False):
            return cmd_pool(args, [args.run, *more])
        if more:
            raise CliError(
                f"show takes one RUN, not {1 + len(more)}; to pool several runs into one "
                "table add --pool, e.g. evalbook show A B --pool"
            )
        return show(args)

    return command


def cmd_pool(args: argparse.Namespace, refs: list[str]) -> int:
    """`evalbook show RUN [RUN ...] --pool [--by COL]`."""
    if getattr(args, "cluster", None) is not None:
        raise CliError(
            "--cluster does not apply with --pool: each run's intervals use its own cluster "
            "column (eb.run(cluster=)); leave --cluster out"
        )
    runs = [resolve_run(ref, args.store) for ref in refs]
    by = slice_columns(args.by)
    table = pool(runs, by=by or None)
    out = Out(sys.stdout)
    cases = sum(run.headline.n_cases for run in runs)
    out.line(f"pooled · {len(runs)} run{'s' if len(runs) != 1 else ''} · {cases} cases", "dim")
    note = table.attrs.get("note")
    if note:
        out.line(clean(note, 300), "bold")
        for name, headline in table.attrs.get("headlines", []):
            out.line(f"  {clean(name, 40)}: {clean(headline.text, 120)}")
    out.line()
    out.lines(pooled_table(table, by))
    for warning in table.attrs.get("warnings", []):
        out.line(f"! {clean(warning, 400)}", "yellow")
    out.line()
    rows = [
        [clean(run.name, 40), clean(run.id), format_count(run.headline.n_cases), clean(run.path)]
        for run in runs
    ]
    out.lines(render_table(["run", "id", "cases", "stored"], rows, [False, False, True, False]))
    return 0


def pooled_table(table: pd.DataFrame, by: list[str] | None = None) -> list[str]:
    """The pooled frame as aligned lines: slices first, then score, label, mean, CI, counts.

    Example:
        >>> frame = pd.DataFrame({"score": ["ok"], "label": ["Ok"], "mean": [0.9],
        ...     "ci_low": [0.8], "ci_high": [0.95], "counted": [100], "n_runs": [2]})
        >>> for line in pooled_table(frame):
        ...     print(line)
        score  label  mean      95% CI  counted  runs
        -----  -----  ----  ----------  -------  ----
        ok     Ok      90%  [80%, 95%]      100     2
    """
    by = list(by or [])
    rows: list[list[str]] = []
    for record in table.to_dict("records"):
        r: dict[str, Any] = {str(k): v for k, v in record.items()}
        rows.append(
            [
                *(slice_value(r[c]) for c in by),
                clean(r["score"], 40),
                clean(r["label"], 40),
                format_pct(r["mean"]),
                format_ci(r["ci_low"], r["ci_high"]),
                format_count(r["counted"]),
                format_count(r["n_runs"]),
            ]
        )
    headers = [*(clean(c) for c in by), "score", "label", "mean", "95% CI", "counted", "runs"]
    right = [False] * (len(by) + 2) + [True] * 4
    return render_table(headers, rows, right)
