"""The CLI's commands other than `gate`: run, show, runs, compare, export, demo."""

from __future__ import annotations

import argparse
import importlib.util
import sys
import traceback
from pathlib import Path
from typing import Any

import pandas as pd

from .._api._eval import Eval
from .._api._run import Run
from .._errors import ConfigurationError
from ._main import CliError
from ._terminal import (
    Out,
    clean,
    fmt_ci,
    fmt_count,
    fmt_pct,
    render_table,
    summary_table,
    unscored_table_text,
)

__all__ = [
    "cmd_compare",
    "cmd_demo",
    "cmd_export",
    "cmd_run",
    "cmd_runs",
    "cmd_show",
    "find_evals",
    "import_file",
    "resolve_run",
]


# -- resolving RUN ---------------------------------------------------------------------------


def resolve_run(ref: str, store: str | Path) -> Run:
    """A run from a folder path, or the latest run named (or with id) `ref` in `store`."""
    from .._store._load import runs

    path = Path(ref)
    if _is_run_folder(path):
        return _load(path)
    store_dir = Path(store)
    if _is_run_folder(store_dir / ref):
        return _load(store_dir / ref)
    if path.is_dir() and not (store_dir.is_dir() and _named(store_dir, ref)):
        return _load(path)  # a folder that is not a run: say so
    if not store_dir.is_dir():
        raise CliError(
            f"no run {ref!r}: it is not a run folder and there is no run store at {store_dir}/ "
            "(pass --store DIR)"
        )
    table = runs(store_dir)
    matches = table[(table["name"].astype(str) == ref) | (table["id"].astype(str) == ref)]
    if matches.empty:
        names = sorted({str(n) for n in table["name"]})
        known = ", ".join(names[:10]) + (" …" if len(names) > 10 else "") if names else "none"
        raise CliError(f"no run named {ref!r} in the store {store_dir}/ (runs there: {known})")
    latest = matches.sort_values("started_at", kind="stable").iloc[-1]
    return _load(Path(str(latest["path"])))


def _is_run_folder(path: Path) -> bool:
    return path.is_dir() and any((path / f).is_file() for f in ("events.jsonl", "summary.json"))


def _named(store_dir: Path, ref: str) -> bool:
    from .._store._load import runs

    table = runs(store_dir)
    return bool(((table["name"].astype(str) == ref) | (table["id"].astype(str) == ref)).any())


def _load(path: Path) -> Run:
    from .._api._entry import load_run

    try:
        run: Run = load_run(path)
    except (OSError, ValueError, KeyError) as exc:
        raise CliError(f"cannot read the run at {path}: {exc}") from None
    return run


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
    _pickle_by_value(module)
    return module


def _pickle_by_value(module: Any) -> None:
    """Functions of the file travel by value to Dask workers, where the file is not importable."""
    try:
        import cloudpickle
    except ImportError:
        return
    cloudpickle.register_pickle_by_value(module)


def _user_frame(exc: BaseException, path: Path) -> str:
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    if isinstance(exc, SyntaxError) and exc.lineno is not None:
        return f", line {exc.lineno},"
    return f", line {lines[-1]}," if lines else ""


def find_evals(module: Any) -> list[tuple[str, Eval]]:
    """The module-level `eb.Eval` objects of a module, in definition order, each once."""
    found: list[tuple[str, Eval]] = []
    seen: set[int] = set()
    for var, value in vars(module).items():
        if isinstance(value, Eval) and id(value) not in seen:
            seen.add(id(value))
            found.append((var, value))
    return found


def cmd_run(args: argparse.Namespace) -> int:
    """`evalbook run FILE.py`: run every module-level Eval and report each."""
    from .._api._entry import run

    module = import_file(args.file)
    evals = find_evals(module)
    if not evals:
        raise CliError(
            f"{args.file} defines no eb.Eval at module level "
            "(add e.g. `evaluation = eb.Eval(df, task=..., scorers=[...])`)"
        )
    out = Out(sys.stdout)
    for i, (var, ev) in enumerate(evals):
        options = dict(ev.run_options)
        base = ev.name or options.pop("name", None) or var
        options.pop("name", None)
        name = args.name or base
        if args.name and len(evals) > 1:
            name = f"{args.name}-{base}"
        for key in ("concurrency", "attempts", "timeout"):
            if getattr(args, key) is not None:
                options[key] = getattr(args, key)
        if args.no_store:
            options["store"] = None
        elif args.store is not None:
            options["store"] = args.store
        data = ev.data
        if args.limit is not None:
            data = (data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)).head(args.limit)
        try:
            result = run(data, ev.task, scorers=ev.scorers, scores=ev.scores, name=name, **options)
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


# -- show / runs -----------------------------------------------------------------------------


def print_run(out: Out, run: Run, *, breakdown: bool) -> None:
    """A run's title, headline, summary table (and breakdown), and where it is stored."""
    n = run.headline.n_cases
    out.line(f"{clean(run.name)} · {n} case{'s' if n != 1 else ''} · id {clean(run.id)}", "dim")
    out.line(clean(run.headline.text), "bold")
    out.line()
    out.lines(summary_table(run.summary()))
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
    out.line()
    if run.path is not None:
        out.line(f"stored: {run.path}")
    else:
        out.line("not stored (in memory only)")


def cmd_show(args: argparse.Namespace) -> int:
    """`evalbook show RUN`."""
    print_run(Out(sys.stdout), resolve_run(args.run, args.store), breakdown=True)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    """`evalbook runs [STORE]`: one line per stored run, oldest first."""
    from .._store._load import runs

    store = Path(args.store)
    if not store.is_dir():
        raise CliError(f"no run store at {store}/ (runs are stored in ./runs unless store= says)")
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
            fmt_count(r["n_cases"]),
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
    from .._compare._compare import compare

    a = resolve_run(args.a, args.store)
    b = resolve_run(args.b, args.store)
    score: str | list[str] | None = None
    if args.score is not None:
        wanted = [s.strip() for s in args.score.split(",") if s.strip()]
        common = [d.name for d in a.definitions if d.name in {e.name for e in b.definitions}]
        for name in wanted:
            if name not in common:
                known = ", ".join(common) or "none"
                raise CliError(f"unknown score {name!r}; the scores both runs have: {known}")
        score = wanted[0] if len(wanted) == 1 else wanted
    comparison = compare(a, b, score=score)
    out = Out(sys.stdout)
    out.line(f"A: {clean(a.name)} ({clean(a.id)}) · {clean(a.headline.text)}", "dim")
    out.line(f"B: {clean(b.name)} ({clean(b.id)}) · {clean(b.headline.text)}", "dim")
    out.line()
    rows = [
        [
            clean(r["score"]),
            fmt_pct(r["mean_a"]),
            fmt_pct(r["mean_b"]),
            _signed_pct(r["delta"]),
            fmt_ci(r["ci_low"], r["ci_high"]),
            _p(r["p_value"]),
            _p(r["p_adjusted"]),
            fmt_count(r["n_paired"]),
            fmt_count(r["improved"]),
            fmt_count(r["regressed"]),
        ]
        for _, r in comparison.summary.iterrows()
    ]
    headers = ["score", "A", "B", "B − A", "95% CI", "p", "p (Holm)", "paired", "improved"]
    headers.append("regressed")
    out.lines(render_table(headers, rows, [False] + [True] * 9))
    for warning in comparison.warnings:
        out.line(f"warning: {clean(warning)}", "yellow")
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
            fmt_pct(r["a"]),
            fmt_pct(r["b"]),
            _signed_pct(r["delta"]),
            clean(r.get("output_a"), 30),
            clean(r.get("output_b"), 30),
        ]
        for _, r in top.iterrows()
    ]
    headers = ["case_id", "score", "A", "B", "B − A", "output A", "output B"]
    out.lines(render_table(headers, rows, [False, False, True, True, True, False, False]))
    return 0


def _signed_pct(x: Any) -> str:
    text = fmt_pct(x)
    return f"+{text}" if text not in ("—", "0%") and not text.startswith("-") else text


def _p(x: Any) -> str:
    value = float(x)
    if value != value:
        return "—"
    return "<0.001" if value < 0.001 else f"{value:.3f}"


_WRITERS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def cmd_export(args: argparse.Namespace) -> int:
    """`evalbook export RUN PATH [--table cases|scores|summary]`."""
    path = Path(args.path)
    kind = _WRITERS.get(path.suffix.lower())
    if kind is None:
        raise CliError(f"{args.path}: the file name must end in .csv, .parquet or .pq")
    run = resolve_run(args.run, args.store)
    table = {"cases": lambda: run.cases, "scores": lambda: run.scores, "summary": run.summary}[
        args.table
    ]()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "csv":
            table.to_csv(path, index=False)
        else:
            _parquet_ready(table).to_parquet(path, index=False)
    except OSError as exc:
        raise CliError(f"cannot write {args.path}: {exc.strerror or exc}") from None
    Out(sys.stdout).line(f"wrote {args.table} ({len(table)} rows) to {path}")
    return 0


def _parquet_ready(table: pd.DataFrame) -> pd.DataFrame:
    """Object columns holding anything but text (e.g. task outputs) become JSON text."""
    import json

    out = table.copy()
    for col in out.columns:
        if out[col].dtype == object:
            values = out[col]
            if not all(v is None or isinstance(v, str) for v in values):
                out[col] = [
                    None if v is None else v if isinstance(v, str) else json.dumps(v, default=str)
                    for v in values
                ]
    return out


# -- demo ------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    """`evalbook demo`: the bundled example, offline, stored; prints the headline."""
    from ._demo import demo_eval

    store = None if args.no_store else args.store
    run = demo_eval().run(store=store)
    out = Out(sys.stdout)
    print_run(out, run, breakdown=True)
    if run.path is not None:
        opt = "" if args.store == "runs" else f" --store {args.store}"
        out.line()
        out.line(
            f"next: evalbook show {run.name}{opt} · evalbook gate {run.name} --min 0.8{opt}",
            "dim",
        )
    return 0
