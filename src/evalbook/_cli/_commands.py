"""The CLI's commands other than `gate`: run, show, runs, compare, export, demo."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

import pandas as pd

from .._api._entry import run as run_eval
from .._api._eval import Eval
from .._api._refs import column_names, export_table, missing_store, resolve_run, score_names
from .._api._run import Run
from .._compare._compare import compare
from .._errors import ConfigurationError
from .._render._compare_html import comparison_text
from .._runner._resume import RetryErrors
from .._store._listing import runs
from .._util._fmt import format_count, format_pct, format_pp
from ._args import CliError
from ._demo import demo_eval
from ._terminal import (
    Out,
    clean,
    is_small,
    render_table,
    small_note,
    summary_table,
    unscored_table_text,
    usage_lines,
    usage_source_table,
)

__all__ = [
    "cmd_compare",
    "cmd_demo",
    "cmd_export",
    "cmd_run",
    "cmd_runs",
    "cmd_show",
    "import_file",
]


# -- run FILE.py -----------------------------------------------------------------------------


def import_file(file: str) -> Any:
    """Import a Python file as a module, its folder first on `sys.path` (as `python FILE`)."""
    path = Path(file)
    if not path.is_file():
        raise CliError(f"no such file: {file}")
    if path.suffix != ".py":
        raise CliError(f"{file} is not a Python file (expected FILE.py)")
    stem = "".join(ch if ch.isalnum() else "_" for ch in path.stem)
    module_name = f"_evalbook_file_{stem}"
    spec = importlib.util.spec_from_file_location(module_name, path.resolve())
    if spec is None or spec.loader is None:
        raise CliError(f"cannot import {file}")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.resolve().parent)
    sys.path.insert(0, folder)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(module_name, None)
        where = _user_frame(exc, path.resolve())
        raise CliError(f"{file}{where} raised {type(exc).__name__}: {exc}") from None
    finally:
        if sys.path and sys.path[0] == folder:
            sys.path.pop(0)
    # the file's functions travel by value to Dask workers, where the file is not importable
    with contextlib.suppress(ImportError):
        import cloudpickle  # optional (the dask extra): only needed when it is installed

        cloudpickle.register_pickle_by_value(module)
    return module


def _user_frame(exc: BaseException, path: Path) -> str:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f", line {exc.lineno},"
    return f", line {lines[-1]}," if lines else ""


def find_evals(module: Any) -> list[tuple[str, Eval]]:
    """The module-level `eb.Eval` objects of a module, in definition order, each once."""
    found: dict[int, tuple[str, Eval]] = {}
    for var, value in vars(module).items():
        if isinstance(value, Eval):
            found.setdefault(id(value), (var, value))
    return list(found.values())


def cmd_run(args: argparse.Namespace) -> int:
    """`evalbook run FILE.py`: run every module-level Eval and report each."""
    module = import_file(args.file)
    evals = find_evals(module)
    if not evals:
        raise CliError(
            f"{args.file} defines no eb.Eval at module level "
            "(add e.g. `evaluation = eb.Eval(df, task=..., scorers=[...])`)"
        )
    for flag, value in (("--resume", args.resume), ("--retry-errors", args.retry_errors)):
        if value is not None and len(evals) > 1:
            names = ", ".join(var for var, _ in evals)
            raise CliError(f"{flag} RUN continues one run, but {args.file} defines {names}")
    out = Out(sys.stdout)
    for i, (var, ev) in enumerate(evals):
        options = dict(ev.run_options)
        base = ev.name or options.pop("name", None) or var
        options.pop("name", None)
        name = args.name or base
        if args.name and len(evals) > 1:
            name = f"{args.name}-{base}"
        for key in ("concurrency", "attempts", "epochs", "timeout", "max_cost"):
            if getattr(args, key) is not None:
                options[key] = getattr(args, key)
        if args.no_store:
            options["store"] = None
        elif args.store is not None:
            options["store"] = args.store
        data = ev.data
        if args.limit is not None:
            data = (data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)).head(args.limit)
        store = options.get("store", "runs")
        if args.resume is not None:
            options["resume"] = resolve_run(args.resume, store if store is not None else "runs")
        if args.retry_errors is not None:
            retry = _retry(args, out, store)
            if retry is None:
                return 0
            options["resume"], name = retry, retry.name
        before = _run_folders(store)
        try:
            result = run_eval(
                data, ev.task, scorers=ev.scorers, scores=ev.scores, name=name, **options
            )
        except KeyboardInterrupt:
            _say_interrupted(var, store, before, args.file)
            raise
        except ConfigurationError as exc:
            raise CliError(f"Eval {var!r}: {exc}") from None
        except TypeError as exc:
            if "unexpected keyword argument" not in str(exc):
                raise
            raise CliError(f"Eval {var!r} has an unknown run option: {exc}") from None
        if i:
            out.line()
        print_run(out, result, breakdown=False)
    return 0


def _retry(args: argparse.Namespace, out: Out, store: Any) -> RetryErrors | None:
    """What `--retry-errors RUN` re-runs; None (after saying so) when nothing needs it."""
    source = resolve_run(args.retry_errors, store if store is not None else "runs")
    where = clean(source.path if source.path is not None else source.id)
    line = f"{clean(source.name)} ({where})"
    retry = RetryErrors(source, args.name or source.name, label="--retry-errors")
    counts = retry.counts()
    n = sum(counts.values())
    if n == 0:
        out.line(
            f"nothing to retry: {line} has no errored, timed-out or unrun case; no run written"
        )
        return None
    why = ", ".join(
        f"{k} {what}"
        for k, what in (
            (counts["errored"], "error" if counts["errored"] == 1 else "errors"),
            (counts["timed_out"], "timed out"),
            (counts["not_run"], "not run"),
        )
        if k
    )
    total = len(source.results.case_ids)
    message = f"retrying {n} of {total} case{'s' if total != 1 else ''} ({why}) from {line}"
    # said once the stored run and the file are known to match, before any case runs
    return dataclasses.replace(retry, ready=lambda: out.line(message))


def _run_folders(store: Any) -> set[Path]:
    """The folders of a store now (none without a store): a new one after a run is its own."""
    if store is None:
        return set()
    root = Path(store).expanduser()
    return {p.resolve() for p in root.iterdir() if p.is_dir()} if root.is_dir() else set()


def _say_interrupted(var: str, store: Any, before: set[Path], file: str) -> None:
    """After Ctrl-C: where the partial run is and how to resume it (stderr, before exit 130)."""
    new = sorted(_run_folders(store) - before)
    if store is None:
        lines = [f"Eval {var!r} was interrupted; nothing was stored (--no-store)"]
    elif not new:
        lines = [f"Eval {var!r} was interrupted before its run folder was written"]
    else:
        path = new[-1]
        lines = [
            f"Eval {var!r} was interrupted; the partial run is stored in {path}",
            f"resume it (only the cases not finished run again): evalbook run {file} "
            f"--resume {path}",
            f"or in Python: eb.run(data, task, scorers=[...], resume={str(path)!r})",
        ]
    for line in lines:
        sys.stderr.write(f"evalbook run: {clean(line)}\n")
    sys.stderr.flush()


# -- show / runs -----------------------------------------------------------------------------


def slice_columns(text: str | None) -> list[str]:
    """`--by a,b` as its column names ([] without `--by`): `_api._refs.column_names`, the
    magics' parser too, so that both say the same of the same mistake."""
    return column_names(text)


def print_run(
    out: Out, run: Run, *, breakdown: bool, by: list[str] | None = None, cluster: str | None = None
) -> None:
    """A run's title, headline, summary table (and breakdown), and where it is stored.

    With `by` the table has one row per (slice, score) (`run.summary(by=...)`); with
    `cluster` its intervals are cluster-robust and it shows the clusters.
    """
    sliced = by or cluster is not None
    # computed first: a --by or --cluster column that is not in the data is an error before
    # anything is printed
    summary = run.summary(by=by or None, cluster=cluster) if sliced else run.summary()
    h = run.headline
    n = h.n_samples
    size = f"{h.n_cases} case{'s' if h.n_cases != 1 else ''}"
    if h.epochs > 1:
        size += f" × {h.epochs} epochs"
    out.line(f"{clean(run.name)} · {size} · id {clean(run.id)}", "dim")
    out.line(clean(run.headline.text), "bold")
    out.lines(usage_lines(run))  # the cost line (none without usage)
    out.line()
    out.lines(summary_table(summary, by or (), clusters=cluster is not None))
    if sliced:
        what = "counted cases" + (" (or clusters)" if cluster is not None else "")
        _slice_footer(out, summary, by or [], cluster, what)
    if breakdown:
        counts = run.headline.counts
        outcomes = " · ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())
        pending = n - sum(counts.values())
        out.line()
        out.line(f"outcomes: {outcomes}" + (f" · not run {pending}" if pending > 0 else ""))
        lines = unscored_table_text(run.unscored())
        if lines:
            out.line()
            out.line("unscored and error records:")
            out.lines(lines)
        sources = usage_source_table(run)
        if sources:
            out.line()
            out.line("usage by source:")
            out.lines(sources)
    out.line()
    if run.path is not None:
        out.line(f"stored: {run.path}")
    else:
        out.line("not stored (in memory only)")


def _slice_footer(
    out: Out, summary: pd.DataFrame, by: list[str], cluster: str | None, what: str
) -> None:
    """Under a sliced table: how many slices, what `small` means, what the clusters are."""
    if by:
        n = len(summary[by].drop_duplicates())
        out.line(f"sliced by {', '.join(clean(c) for c in by)}: {n} slice{'s' if n != 1 else ''}")
        if "small" in summary.columns:
            flagged = bool(summary["small"].astype(bool).any())
        else:
            flagged = "n_clusters" in summary.columns and any(map(is_small, summary["n_clusters"]))
        if flagged:
            out.line(small_note(f"{what} in the slice"))
    if cluster is not None:
        out.line(f"intervals clustered by {clean(cluster)} (cluster-robust SE, t on clusters − 1)")


def cmd_show(args: argparse.Namespace) -> int:
    """`evalbook show RUN [--by COL] [--cluster COL]`."""
    run = resolve_run(args.run, args.store)
    print_run(Out(sys.stdout), run, breakdown=True, by=slice_columns(args.by), cluster=args.cluster)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
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
            clean(r["name"], 40),
            clean(r["id"]),
            _when(r["started_at"]),
            clean(r["status"]),
            format_count(r["n_cases"]),
            clean(r["headline"], 60),
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
        return clean(value)
    if stamp.tzinfo is not None:
        stamp = stamp.tz_convert("UTC")
    return stamp.strftime("%Y-%m-%d %H:%M:%S")


# -- compare / export ------------------------------------------------------------------------


def cmd_compare(args: argparse.Namespace) -> int:
    """`evalbook compare A B [--score NAME]`: summary, warnings, top regressions."""
    a = resolve_run(args.a, args.store)
    b = resolve_run(args.b, args.store)
    score = score_names(a, b, args.score)  # as `%eval compare --score` reads it
    by = slice_columns(args.by)
    if by or args.cluster is not None:
        comparison = compare(a, b, score=score, by=by or None, cluster=args.cluster)
    else:
        comparison = compare(a, b, score=score)
    out = Out(sys.stdout)
    out.line(f"A: {clean(a.name)} ({clean(a.id)}) · {clean(a.headline.text)}", "dim")
    out.line(f"B: {clean(b.name)} ({clean(b.id)}) · {clean(b.headline.text)}", "dim")
    out.line()
    # the one text form of a comparison: the same lines as repr() and the widget's text
    out.lines(comparison_text(comparison).splitlines())
    if by or args.cluster is not None:
        _slice_footer(out, comparison.summary, by, args.cluster, "paired cases")
    if not args.top:
        return 0
    regressed = comparison.regressions()
    out.line()
    if regressed.empty:
        out.line("no case regressed")
        return 0
    top = regressed.head(args.top)
    out.line(f"top regressions ({len(top)} of {len(regressed)}):")
    rows = [
        [
            clean(r["case_id"], 30),
            clean(r["score"]),
            format_pct(r["a"]),
            format_pct(r["b"]),
            format_pp(r["delta"]),
            clean(r.get("output_a"), 30),
            clean(r.get("output_b"), 30),
        ]
        for _, r in top.iterrows()
    ]
    headers = ["case_id", "score", "A", "B", "B − A", "output A", "output B"]
    out.lines(render_table(headers, rows, [False, False, True, True, True, False, False]))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """`evalbook export RUN PATH [--table T]`: one of the tables of `_api._refs.TABLES`."""
    written = export_table(resolve_run(args.run, args.store), args.path, args.table or "scores")
    Out(sys.stdout).line(f"wrote {written.table} ({written.rows} rows) to {written.path}")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    """`evalbook demo`: the bundled example, offline, stored; prints the headline."""
    store = None if args.no_store else args.store
    run = demo_eval().run(store=store)
    out = Out(sys.stdout)
    print_run(out, run, breakdown=True)
    if run.path is not None:
        opt = "" if args.store == "runs" else f" --store {args.store}"
        out.line()
        out.line(
            f"next: evalbook show {run.name}{opt} · evalbook gate {run.name} --min 0.8{opt}", "dim"
        )
    return 0
