"""`evalbook run FILE.py`: import FILE, run every module-level `eb.Eval` in it, report each.

`--resume RUN` continues a stored run; `--retry-errors RUN` makes a new run that keeps RUN's
passed and failed cases and runs the others again (docs/cli.md). After Ctrl-C it says where
the partial run is and how to resume it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib.util
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from .._api._entry import run as run_eval
from .._api._eval import Eval
from .._api._refs import resolve_run
from .._api._sample import sample
from .._errors import ConfigurationError
from .._model._stop_rules import decided, precise, stop_text
from .._runner._resume import RetryErrors
from ._args import (
    EXIT_INCOMPLETE,
    EXIT_OK,
    CliError,
    count,
    fraction,
    origins,
    positive_int,
    seconds,
    usd,
)
from ._run_report import print_run
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "find_evals", "import_file", "run"]

NAME = "run"
HELP = "run every module-level eb.Eval in a Python file"
DESCRIPTION = (
    "Import FILE, run every module-level eb.Eval in it, print each headline and "
    "summary table, and where the run is stored."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """FILE.py, the run options, `--resume` / `--retry-errors`, `--store` / `--no-store`."""
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
    p.add_argument(
        "--sample",
        type=positive_int,
        metavar="N",
        help="run a deterministic subsample of N cases (eb.sample by case id and --seed)",
    )
    p.add_argument("--against", metavar="BASE", help="base run for --stop-when decided")
    p.add_argument(
        "--stop-when",
        choices=("decided", "precise"),
        help="stop early: 'decided' (with --against and --max-drop) or 'precise' (with "
        "--half-width); docs/spend-less.md",
    )
    p.add_argument(
        "--max-drop", type=fraction, metavar="X", help="the drop that decides (e.g. 0.02)"
    )
    p.add_argument(
        "--half-width", type=fraction, metavar="H", help="the precision of 'precise' (e.g. 0.05)"
    )
    p.add_argument(
        "--seed", type=count, metavar="N", help="seed of --sample and of the samples' order"
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
    p.add_argument(
        "--origin",
        type=origins,
        metavar="O[,O]",
        help="with --retry-errors: run again only the failures of these origins (task, "
        "provider, environment, grader, harness), e.g. --origin provider,environment",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--store", metavar="DIR", help="run store folder (default: the Eval's, else ./runs)"
    )
    where.add_argument("--no-store", action="store_true", help="keep the runs in memory only")


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


def run(args: argparse.Namespace) -> int:
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
    if args.origin is not None and args.retry_errors is None:
        raise CliError("--origin says which failures --retry-errors RUN runs again: add it")
    out = Out(sys.stdout)
    code = EXIT_OK
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
        _stop_options(args, options, store)
        if args.sample is not None:
            frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
            try:
                data = sample(frame, args.sample, seed=options.get("seed", 0))
            except ConfigurationError as exc:
                raise CliError(f"Eval {var!r}: {exc}") from None
        if args.resume is not None:
            options["resume"] = resolve_run(args.resume, store if store is not None else "runs")
        if args.retry_errors is not None:
            retry = _retry(args, out, store)
            if retry is None:
                return 0
            options["resume"], name = retry, retry.name
        before = _run_folders(store)
        try:
            with warnings.catch_warnings():
                # the CLI says it itself, in its own words (_say_interrupted)
                warnings.filterwarnings("ignore", message=r"run .* was interrupted")
                # and the share failed outside the model: a line under the headline
                warnings.filterwarnings("ignore", message=r"run .* failed outside the model")
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
        unrun = int(result.cases["outcome"].isna().sum())
        stopped = result.options.get("stopped")
        if isinstance(stopped, dict) and stopped.get("decision") != "undecided":
            out.line(f"Early stop: {stop_text(stopped)}")
            unrun = 0  # stopped early: decided, not incomplete
        if unrun:  # e.g. --max-cost stopped it: a CI step must not read this as a whole run
            where = result.path if result.path is not None else "(not stored)"
            sys.stderr.write(
                f"evalbook run: Eval {for_terminal(var)!r} is incomplete: {unrun} samples did not "
                f"run (a budget stopped it); resume it with evalbook run {args.file} --resume "
                f"{for_terminal(str(where))}\n"
            )
            code = EXIT_INCOMPLETE
    return code


def _stop_options(args: argparse.Namespace, options: dict[str, Any], store: Any) -> None:
    """`--stop-when`, `--max-drop`, `--half-width`, `--against`, `--seed` into run options."""
    if args.seed is not None:
        options["seed"] = args.seed
    if args.stop_when is None:
        for flag, value in (
            ("--against", args.against),
            ("--max-drop", args.max_drop),
            ("--half-width", args.half_width),
        ):
            if value is not None:
                raise CliError(f"{flag} goes with --stop-when (decided or precise)")
        return
    if args.stop_when == "decided":
        if args.max_drop is None or args.against is None:
            raise CliError("--stop-when decided needs --against BASE and --max-drop X")
        if args.half_width is not None:
            raise CliError("--half-width goes with --stop-when precise")
        options["against"] = resolve_run(args.against, store if store is not None else "runs")
        options["stop_when"] = _rule(decided, args.max_drop)
        return
    if args.half_width is None or args.against is not None or args.max_drop is not None:
        raise CliError("--stop-when precise takes --half-width H (and no --against, --max-drop)")
    options["stop_when"] = _rule(precise, args.half_width)


def _rule(make: Any, value: float) -> Any:
    try:
        return make(value)
    except ConfigurationError as exc:
        raise CliError(str(exc)) from None


def _retry(args: argparse.Namespace, out: Out, store: Any) -> RetryErrors | None:
    """What `--retry-errors RUN` re-runs; None (after saying so) when nothing needs it."""
    source = resolve_run(args.retry_errors, store if store is not None else "runs")
    where = for_terminal(source.path if source.path is not None else source.id)
    line = f"{for_terminal(source.name)} ({where})"
    retry = RetryErrors(
        source, args.name or source.name, label="--retry-errors", origins=args.origin
    )
    counts = retry.counts()
    n = sum(counts.values())
    of = "" if args.origin is None else f" of origin {' or '.join(sorted(args.origin))}"
    if n == 0:
        out.line(
            f"nothing to retry: {line} has no errored or timed-out case{of} and no unrun case; "
            "no run written"
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
    message = f"retrying {n} of {total} case{'s' if total != 1 else ''} ({why}{of}) from {line}"
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
        sys.stderr.write(f"evalbook run: {for_terminal(line)}\n")
    sys.stderr.flush()
