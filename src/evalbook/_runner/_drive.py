"""Driving a run: plan and prepare it, run its samples through an engine, finish it.

`execute` is `eb.arun`'s body; `drive` is shared with `run.rescore`.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._origin import infra_warning
from .._model._results import PENDING
from .._model._run_data import RunData
from .._model._sampling import SAMPLE_ATTR
from .._model._scorers import Scorer
from .._store._door import Prepared
from .._store._load import read_run
from .._util._warn import warn
from ._calls import Threads, close_abandoned
from ._engine import Engine, Executor, Kept, LocalExecutor
from ._meter import Ledger, known_cost, warn_usage
from ._options import RunOptions
from ._plan import Plan, check_epochs, make_plan
from ._prepare import prepare
from ._stopping import Stopper

__all__ = ["drive", "execute"]


def _progress(total: int, enabled: bool, name: str) -> Any:
    if not enabled or total == 0 or os.environ.get("EVALBOOK_PROGRESS", "1") in ("0", "false"):
        return None
    from tqdm.auto import tqdm  # lazy: tqdm.auto may import ipywidgets

    return tqdm(total=total, desc=name, unit="case", delay=1.0, leave=False)


def _as_frame(data: Any) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        frame = data
    elif data is None:  # pd.DataFrame(None) is an empty frame: the run would have no case
        raise ConfigurationError(
            "data is None: pass the cases as a pandas DataFrame, one row per case (e.g. "
            "pd.read_csv('cases.csv'))"
        )
    else:
        frame = _converted(data)
    if len(frame) == 0:
        warn(
            "data has no rows: the run has no cases, so it has no results and no headline "
            "(was the frame filtered to nothing?)",
            UserWarning,
        )
    return frame


def _converted(data: Any) -> pd.DataFrame:
    try:
        return pd.DataFrame(data)
    except Exception as exc:
        raise ConfigurationError(
            f"data must be a pandas DataFrame (or something pd.DataFrame() accepts): {exc}"
        ) from None


async def execute(
    data: Any,
    task: Callable[..., Any] | None,
    scorers: Sequence[Scorer | Callable[..., Any]],
    scores: Sequence[ScoreDefinition | str],
    options: RunOptions,
) -> RunData:
    """Plan and prepare the run, execute every case; return the run's data."""
    frame = _as_frame(data)
    spec = frame.attrs.get(
        SAMPLE_ATTR
    )  # drawn by eb.sample: the run records how (docs/spend-less.md)
    plan = make_plan(frame, task, scorers, scores, options.output_column, options.cluster)
    if options.resume is None:  # pass@k needs k epochs: before any case (a resume needs the
        # stored run's epochs, and its check says which: the stored run passed this one)
        check_epochs(plan.definitions, options.epochs)
    frame = plan.data  # the input as the run keeps it: its text cleaned (no copy if clean)
    executor: Executor = LocalExecutor(options.concurrency)
    if options.executor is not None:
        from .dask._driver import DaskRunner  # the optional Dask executor, loaded when asked for

        executor = DaskRunner(options.executor, plan)  # checks that the functions travel
    run_name = options.name or (getattr(task, "__name__", None) if task else None) or "run"
    if run_name == "<lambda>":
        run_name = "run"
    recorded = options.recorded()
    if isinstance(spec, dict):
        recorded["sample"] = dict(spec)
    # the run store (issue 3): name check, folder, run.started; resume pre-fills results
    prepared = prepare(
        plan,
        frame,
        run_name,
        recorded,
        store=options.store,
        resume=options.resume,
        epochs=options.epochs,
    )
    return await drive(plan, prepared, prepared.todo, options, executor, frame, recorded)


def _say_interrupted(prepared: Prepared) -> None:
    """What an interrupted run kept and how to go on (a notebook's Ctrl-C says no more)."""
    results = prepared.results
    done = int((results.outcome != PENDING).sum())
    what = f"run {prepared.name!r} was interrupted with {done} of {results.n_samples} samples done"
    if prepared.path is None or prepared.sink is None:
        warn(f"{what}; with store=None nothing of it is kept", RuntimeWarning)
        return
    warn(
        f"{what}, stored in {prepared.path}: run the rest with eb.run(..., "
        f"resume={str(prepared.path)!r}) (or evalbook run FILE --resume {prepared.path})",
        RuntimeWarning,
    )


def _stopper(options: RunOptions, plan: Plan, prepared: Prepared) -> Stopper | None:
    """The run's early stop (`stop_when=`), its base run read when given as a path."""
    if options.stop_when is None:
        return None
    base = options.against
    if isinstance(base, str | os.PathLike):
        base = read_run(base)
    if base is not None and not isinstance(base, RunData):
        raise ConfigurationError(
            f"against= takes the base run (a Run, or the path of a stored run), got "
            f"{type(base).__name__}"
        )
    return Stopper(
        options.stop_when, prepared.results, plan.definitions, seed=options.seed, base=base
    )


async def drive(
    plan: Plan,
    prepared: Prepared,
    todo: Sequence[int],
    options: RunOptions,
    executor: Executor,
    data: pd.DataFrame,
    recorded: dict[str, Any],
    kept: Kept | None = None,
) -> RunData:
    """Run `todo` through an engine and `executor`, then finish the run and return its data.

    Shared by `arun` and `Run.rescore` (`kept`): the worker threads, the progress bar, closing
    the log on an interruption (so it stays resumable) and writing the final files.
    """
    stopper = _stopper(options, plan, prepared)
    if stopper is not None:
        todo = stopper.ordered(todo)  # the seeded order; none once decided (a resume)
    bar = _progress(len(todo), options.progress, prepared.name)
    threads = Threads()
    # the budget counts what the run has recorded so far: a resume's kept samples too
    ledger = Ledger(options.prices, options.max_cost, spent=known_cost(prepared.results))
    engine = Engine(
        plan,
        options,
        threads,
        results=prepared.results,
        sink=prepared.sink,
        tick=(lambda: bar.update(1)) if bar is not None else None,
        kept=kept,
        ledger=ledger,
        stopper=stopper,
    )
    try:
        await executor.execute(engine, todo)
    except BaseException as exc:
        prepared.close()  # the log stays resumable
        if isinstance(exc, KeyboardInterrupt | asyncio.CancelledError):
            _say_interrupted(prepared)
        raise
    finally:
        await close_abandoned()  # the loop may close next: no call abandoned at a deadline holds it
        if bar is not None:
            bar.close()
    warn_usage(ledger, prepared.name)
    if stopper is not None:
        recorded["stopped"] = stopper.recorded()
    finished = RunData(
        name=prepared.name,
        id=prepared.run_id,
        definitions=plan.definitions,
        data=data,
        results=prepared.results,
        options=recorded,
        path=prepared.path,
    )
    prepared.finish(finished)
    _warn_infra(finished)
    return finished


def _warn_infra(run: RunData) -> None:
    """Warn when provider + environment failures exceed 10 % of the samples (docs/origin.md)."""
    h = run.headline
    where = None if run.path is None else str(run.path)
    alarm = infra_warning(h.outside_model, h.infra_share, where)
    if alarm is not None:
        warn(f"run {run.name!r}: {alarm}", RuntimeWarning)
