"""`evalbook show`: one stored run, its attempts (`--attempts`), or several runs pooled
(`--pool`).

- `show RUN [--by COL] [--cluster COL]`: the headline, the summary table (one row per
  slice and score with `--by`), the outcomes and the breakdown of unscored and error records.
- `show RUN --attempts`: what went wrong before a sample's final outcome. The table lists the
  samples with more than one attempt, every attempt of each, and one line counts the samples
  with a single attempt (`run.attempts()` holds every row).
- `show RUN [RUN ...] --pool [--by COL]`: `eb.pool(runs, by=...)` (docs/interop.md, Pooling):
  each score's mean over every run's counted cases, its interval stratified by run, the runs'
  headlines when their primary scores differ, and how a score's definition differs.

Every text is untrusted (a run name, a label, an error message is whatever was written):
`for_terminal` shows control characters escaped and cuts long text. See docs/cli.md.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

import pandas as pd

from .._api._refs import resolve_run
from .._api._run import Run
from .._compare._pool import pool
from .._compare._verdict import verdict
from .._render._json_view import run_json
from .._render._markdown import run_markdown
from .._util._fmt import format_ci, format_count, format_pct
from ._args import (
    RUN_HELP,
    CliError,
    format_option,
    slice_columns,
    slice_options,
    store_option,
)
from ._run_report import print_run
from ._terminal import Out, for_terminal, render_table, slice_value

__all__ = [
    "DESCRIPTION",
    "HELP",
    "MAX_SAMPLES",
    "NAME",
    "add_arguments",
    "attempts_lines",
    "pooled_table",
    "run",
]

NAME = "show"
HELP = "a stored run's headline, summary and unscored breakdown"
DESCRIPTION = (
    "Print a stored run's headline, summary table, outcomes and the breakdown "
    "of unscored and error records."
)
MAX_SAMPLES = 200  # retried samples shown; the rest are counted (a run may retry thousands)
_UNKNOWN = "—"  # not in the log (written before evalbook logged each attempt) or the source


def add_arguments(p: argparse.ArgumentParser) -> None:
    """RUN, more RUNs with `--pool`, `--attempts`, `--by` / `--cluster`, `--store`."""
    p.add_argument("run", metavar="RUN", help=RUN_HELP)
    p.add_argument("more", metavar="RUN", nargs="*", help="more runs, with --pool")
    p.add_argument(
        "--pool",
        action="store_true",
        help="one table pooling every RUN: each score's mean over all their counted cases "
        "(weighted by counted values, never a mean of means), its 95%% CI stratified by run",
    )
    p.add_argument(
        "--attempts",
        action="store_true",
        help="every attempt of the samples that were retried: outcome, error, start, duration",
    )
    slice_options(p)
    format_option(p)
    store_option(p)


def run(args: argparse.Namespace) -> int:
    """`evalbook show`: the attempts with `--attempts`, the pooled table with `--pool`, the
    Markdown or JSON summary with `--format`, else the one run's report."""
    more: list[str] = list(args.more)
    if args.format is not None:
        return _formatted(args, more)
    if args.attempts:
        for flag, given in (
            ("--pool", args.pool or more),
            ("--by", args.by),
            ("--cluster", args.cluster),
        ):
            if given:
                raise CliError(
                    f"{flag} does not apply with --attempts: --attempts shows one run's "
                    f"attempts; leave {flag} out (or --attempts, for the summary)"
                )
        Out(sys.stdout).lines(attempts_lines(resolve_run(args.run, args.store)))
        return 0
    if args.pool:
        return _pooled(args, [args.run, *more])
    if more:
        raise CliError(
            f"show takes one RUN, not {1 + len(more)}; to pool several runs into one "
            "table add --pool, e.g. evalbook show A B --pool"
        )
    one = resolve_run(args.run, args.store)
    print_run(Out(sys.stdout), one, breakdown=True, by=slice_columns(args.by), cluster=args.cluster)
    return 0


def _formatted(args: argparse.Namespace, more: list[str]) -> int:
    """`evalbook show RUN --format markdown|json`: the run, its summary and its check."""
    for flag, given in (
        ("--attempts", args.attempts),
        ("--pool", args.pool or more),
        ("--by", args.by),
        ("--cluster", args.cluster),
    ):
        if given:
            raise CliError(
                f"{flag} does not apply with --format: --format prints one run's summary as "
                f"{args.format}; leave {flag} out"
            )
    one = resolve_run(args.run, args.store)
    result = verdict(one)
    if args.format == "markdown":
        sys.stdout.write(run_markdown(one, result))
    else:
        sys.stdout.write(json.dumps(run_json(one, result), indent=2, allow_nan=False) + "\n")
    return 0


# -- --pool ----------------------------------------------------------------------------------


def _pooled(args: argparse.Namespace, refs: list[str]) -> int:
    """`evalbook show RUN [RUN ...] --pool [--by COL]`."""
    if args.cluster is not None:
        raise CliError(
            "--cluster does not apply with --pool: each run's intervals use its own cluster "
            "column (eb.run(cluster=)); leave --cluster out"
        )
    runs = [resolve_run(ref, args.store) for ref in refs]
    by = slice_columns(args.by)
    table = pool(runs, by=by or None)
    out = Out(sys.stdout)
    cases = sum(r.headline.n_cases for r in runs)
    out.line(f"pooled · {len(runs)} run{'s' if len(runs) != 1 else ''} · {cases} cases", "dim")
    note = table.attrs.get("note")
    if note:
        out.line(for_terminal(note, 300), "bold")
        for name, headline in table.attrs.get("headlines", []):
            out.line(f"  {for_terminal(name, 40)}: {for_terminal(headline.text, 120)}")
    out.line()
    out.lines(pooled_table(table, by))
    for warning in table.attrs.get("warnings", []):
        out.line(f"! {for_terminal(warning, 400)}", "yellow")
    out.line()
    rows = [
        [
            for_terminal(r.name, 40),
            for_terminal(r.id),
            format_count(r.headline.n_cases),
            for_terminal(r.path),
        ]
        for r in runs
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
                for_terminal(r["score"], 40),
                for_terminal(r["label"], 40),
                format_pct(r["mean"]),
                format_ci(r["ci_low"], r["ci_high"]),
                format_count(r["counted"]),
                format_count(r["n_runs"]),
            ]
        )
    headers = [
        *(for_terminal(c) for c in by),
        "score",
        "label",
        "mean",
        "95% CI",
        "counted",
        "runs",
    ]
    right = [False] * (len(by) + 2) + [True] * 4
    return render_table(headers, rows, right)


# -- --attempts ----------------------------------------------------------------------------


def _seconds(value: Any) -> str:
    """A time in seconds, readable from microseconds to hours (`—`: not known)."""
    if value is None or math.isnan(value):
        return _UNKNOWN
    return f"{value * 1000:.1f}ms" if value < 1 else f"{value:.2f}s"


def _error(row: Any) -> str:
    kind, message = _text(row.error_type), _text(row.error_message)
    if kind is None and message is None:
        return ""
    return for_terminal(": ".join(t for t in (kind, message) if t is not None), 80)


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
    title = f"{for_terminal(run.name)} · attempts · id {for_terminal(run.id)}"
    what = "samples" if epochs else "cases"
    if retried.empty:
        return [title, f"no sample was retried: each of the {len(counts)} {what} had one attempt"]
    shown = retried.index[:MAX_SAMPLES]
    keys = pd.MultiIndex.from_frame(table[["case_id", "epoch"]])
    rows_of = table[keys.isin(shown)]
    # after the first attempt's own start: not the first start known (a harness may keep only
    # the last attempt's), so an unknown first start leaves every offset unknown
    first = (
        rows_of["started_at"]
        .where(rows_of["attempt"] == 1)
        .groupby([rows_of["case_id"], rows_of["epoch"]], sort=False)
        .transform("max")
    )
    offsets = (rows_of["started_at"] - first).dt.total_seconds()
    rows = [
        [
            for_terminal(r.case_id, 40),
            *([str(r.epoch)] if epochs else []),
            str(r.attempt),
            for_terminal(r.outcome) if isinstance(r.outcome, str) else _UNKNOWN,
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
    if (
        rows_of["outcome"].isna().any()
        or offsets.isna().any()
        or rows_of["duration_s"].isna().any()
    ):
        lines.append(
            f"{_UNKNOWN}: not known (a log written before evalbook logged each attempt, "
            "or an imported run)"
        )
    return lines
