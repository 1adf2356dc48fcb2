"""`evalbook show RUN --attempts`: the attempts of a stored run's retried samples.

What a user looks for here is what went wrong before a sample's final outcome, so the
table lists the samples with more than one attempt, every attempt of each, and one line
counts the samples with a single attempt (`run.attempts()` holds every row). Every cell
is untrusted text (an error message is whatever the task raised): `clean` shows control
characters escaped and cuts long text. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import Any

import pandas as pd

from .._api._refs import resolve_run
from .._api._run import Run
from ._args import CliError
from ._terminal import Out, clean, render_table

__all__ = ["MAX_SAMPLES", "add_attempts_argument", "attempts_lines", "show_command"]

Command = Callable[[argparse.Namespace], int]
MAX_SAMPLES = 200  # retried samples shown; the rest are counted (a run may retry thousands)
_UNKNOWN = "—"  # not in the log (written before evalbook logged each attempt) or the source


def add_attempts_argument(p: argparse.ArgumentParser) -> None:
    """`show`'s `--attempts` flag."""
    p.add_argument(
        "--attempts",
        action="store_true",
        help="every attempt of the samples that were retried: outcome, error, start, duration",
    )


def show_command(show: Command) -> Command:
    """`show`'s command: the attempts table with `--attempts`, else `show` as it was."""

    def command(args: argparse.Namespace) -> int:
        if not getattr(args, "attempts", False):
            return show(args)
        for flag, given in (
            ("--pool", getattr(args, "pool", False) or getattr(args, "more", None)),
            ("--by", getattr(args, "by", None)),
            ("--cluster", getattr(args, "cluster", None)),
        ):
            if given:
                raise CliError(
                    f"{flag} does not apply with --attempts: --attempts shows one run's "
                    f"attempts; leave {flag} out (or --attempts, for the summary)"
                )
        run = resolve_run(args.run, args.store)
        Out(sys.stdout).lines(attempts_lines(run))
        return 0

    return command


def _seconds(value: Any) -> str:
    """A time in seconds, readable from microseconds to hours (`—`: not known)."""
    if value is None or math.isnan(value):
        return _UNKNOWN
    return f"{value * 1000:.1f}ms" if value < 1 else f"{value:.2f}s"


def _error(row: Any) -> str:
    kind, message = _text(row.error_type), _text(row.error_message)
    if kind is None and message is None:
        return ""
    return clean(": ".join(t for t in (kind, message) if t is not None), 80)


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def attempts_lines(run: Run) -> list[str]:
    """The title, the table of the retried samples' attempts, and what it leaves out.

    `start` is seconds after the sample's first attempt started (`—`: not known).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> calls = []
        >>> def task(x):
        ...     calls.append(x)
        ...     if len(calls) == 1:
        ...         raise ConnectionError("reset")
        ...     return x
        >>> run = eb.run(pd.DataFrame({"x": ["a", "b"]}), task=task, attempts=2,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> attempts_lines(run)[-1]
        '1 of 2 cases had more than one attempt (2 attempts); the other 1 had one'
    """
    table = run.attempts()
    epochs = run.headline.epochs > 1
    counts = table.groupby(["case_id", "epoch"], sort=False).size()
    retried = counts[counts > 1]
    title = f"{clean(run.name)} · attempts · id {clean(run.id)}"
    what = "samples" if epochs else "cases"
    if retried.empty:
        return [title, f"no sample was retried: each of the {len(counts)} {what} had one attempt"]
    shown = retried.index[:MAX_SAMPLES]
    keys = pd.MultiIndex.from_frame(table[["case_id", "epoch"]])
    rows_of = table[keys.isin(shown)]
    first = rows_of.groupby(["case_id", "epoch"], sort=False)["started_at"].transform("first")
    offsets = (rows_of["started_at"] - first).dt.total_seconds()
    rows = [
        [
            clean(r.case_id, 40),
            *([str(r.epoch)] if epochs else []),
            str(r.attempt),
            clean(r.outcome) if isinstance(r.outcome, str) else _UNKNOWN,
            "+" + _seconds(at) if not math.isnan(at) else _UNKNOWN,
            _seconds(r.duration_s),
            _error(r),
        ]
        for r, at in zip(rows_of.itertuples(index=False), offsets, strict=True)
    ]
    headers = ["case_id", *(["epoch"] if epochs else []), "attempt", "outcome"]
    headers += ["start", "duration", "error"]
    right = [False, *([True] if epochs else []), True, False, True, True, False]
    lines = [title, "", *render_table(headers, rows, right), ""]
    lines.append(
        f"{len(retried)} of {len(counts)} {what} had more than one attempt "
        f"({int(retried.sum())} attempts); the other {len(counts) - len(retried)} had one"
    )
    if len(retried) > MAX_SAMPLES:
        lines.append(f"… {len(retried) - MAX_SAMPLES} more retried {what}: see run.attempts()")
    if rows_of["outcome"].isna().any():
        lines.append(
            f"{_UNKNOWN}: not known (a log written before evalbook logged each attempt, "
            "or an imported run)"
        )
    return lines
