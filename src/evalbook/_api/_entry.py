"""The entry points: `eb.run`, `eb.arun`, `eb.load_run` (each returns the public `Run`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._model._definitions import ScoreDefinition
from .._model._scorers import Scorer
from .._runner._drive import execute
from .._runner._options import RunOptions
from .._runner._sync import run_sync
from .._store._load import read_run
from .._util._callables import suggest_keywords
from ._run import Run, as_run

__all__ = ["arun", "load_run", "run"]


@suggest_keywords
async def arun(
    data: Any,
    task: Callable[..., Any] | None = None,
    *,
    scorers: Sequence[Scorer | Callable[..., Any]] = (),
    scores: Sequence[ScoreDefinition | str] = (),
    name: str | None = None,
    output_column: str | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    scorer_timeout: float | None = None,
    attempts: int = 1,
    epochs: int = 1,
    cluster: str | None = None,
    store: str | os.PathLike[str] | None = "runs",
    resume: Any = None,
    progress: bool = True,
    executor: Any = None,
    max_cost: float | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    against: Any = None,
    stop_when: Any = None,
    seed: int = 0,
    environment_errors: Sequence[type[BaseException]] = (),
) -> Run:
    """The async form of `eb.run()`: `run = await eb.arun(df, task=...)`.

    Example:
        >>> import asyncio, pandas as pd, evalbook as eb
        >>> run = asyncio.run(eb.arun(pd.DataFrame({"x": ["a"]}), task=lambda x: x,
        ...                           scorers=[lambda output: 1.0], store=None, progress=False))
        >>> run.headline.text
        'lambda 100% · completed 100%'
    """
    options = _options(locals())
    return as_run(await execute(data, task, scorers, scores, options))


@suggest_keywords
def run(
    data: Any,
    task: Callable[..., Any] | None = None,
    *,
    scorers: Sequence[Scorer | Callable[..., Any]] = (),
    scores: Sequence[ScoreDefinition | str] = (),
    name: str | None = None,
    output_column: str | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    scorer_timeout: float | None = None,
    attempts: int = 1,
    epochs: int = 1,
    cluster: str | None = None,
    store: str | os.PathLike[str] | None = "runs",
    resume: Any = None,
    progress: bool = True,
    executor: Any = None,
    max_cost: float | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    against: Any = None,
    stop_when: Any = None,
    seed: int = 0,
    environment_errors: Sequence[type[BaseException]] = (),
) -> Run:
    """Run `task` over every case of `data`, score the outputs, and return the `Run`.

    Works in scripts and inside Jupyter's running event loop (there it runs on a fresh loop in
    a worker thread); `await eb.arun(...)` is the async form.

    Args:
        data: The cases, one per row; `case_id` is the `id` column if present, else the index.
        task: Called once per case attempt; its return value is the output. Parameters are
            bound by name: columns, `row`, `case_id`, `ctx`.
        scorers: `@eb.scorer` functions or plain functions (named after themselves).
        scores: Further definitions: derived scores (`combine=`), scores the task records.
        name: The run's name (default: the task's name).
        output_column: Score outputs already in this column instead of calling a task.
        concurrency: Cases in flight at once. A sync task, and a case's sync scorers, always
            run in a worker thread, so a blocking call holds up only its own case.
        timeout: Seconds per task attempt, sync or async; at the deadline the attempt is
            `timed_out` (a sync call cannot be stopped: its thread finishes it unheard).
        scorer_timeout: Seconds per scorer call for a case (a judge is a scorer); a scorer
            past it gets the error record `scorer_timed_out`, the case's other scorers keep
            theirs. Each sync scorer then runs in a thread of its own.
        attempts: Tries per sample; only errored and timed-out samples are tried again.
        epochs: Times each case runs; each run is a sample (case, epoch), scored on its own,
            and each score's `reducer` turns a case's epoch values into one (docs/repeats.md).
        cluster: A column of the data whose cases are not independent (e.g. questions on one
            passage): checked before any case runs, kept in `run.options["cluster"]`, and
            the run's `summary()` (and headline) then give cluster-robust intervals
            (docs/statistics.md); `run.summary(cluster=False)` turns it off.
        store: Folder of the run store, or None to keep the run in memory.
        resume: A stored run (path or Run) to continue.
        progress: Show a progress bar on long runs (env `EVALBOOK_PROGRESS=0` turns it off).
        executor: None to run locally; a `dask.distributed.Client` (or `"dask"` for a
            LocalCluster) runs batches of cases on a cluster: docs/scaling.md.
        max_cost: A budget in US dollars: once the recorded cost reaches it, no new sample
            starts (those in flight finish); the run ends incomplete, resumable, with a
            warning naming the budget (docs/cost.md).
        prices: `{model: (usd_per_1M_input_tokens, usd_per_1M_output_tokens)}`: turns
            recorded tokens into cost where a call gave no cost; a model without a price
            leaves its cost unknown (NaN).
        against: The base run (a Run or a stored run's path) of `stop_when=eb.decided(...)`:
            the primary score's paired delta, this run minus it, per case.
        stop_when: `eb.decided(max_drop=X)` (with `against=`) or `eb.precise(half_width=H)`:
            the samples run in a seeded random order and the run stops once an anytime-valid
            confidence sequence decides; the samples not run are `stopped_early`, and the
            decision is in `run.options["stopped"]` (docs/spend-less.md).
        seed: The seed of that order (the order of `eb.sample(data, n, seed=seed)`).
        environment_errors: Exception types that mean the task's environment failed, not
            the model (e.g. `(ConnectionRefusedError,)`): a sample whose task raised one
            (also wrapped) has `origin="environment"`, as with `eb.EnvironmentFailure`
            (docs/origin.md).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"q": ["a", "b"], "expected": ["A", "x"]})
        >>> @eb.scorer
        ... def exact(output, expected):
        ...     return float(output == expected)
        >>> eb.run(df, task=lambda q: q.upper(), scorers=[exact], store=None,
        ...        progress=False).headline.text
        'exact 50% · completed 100%'
    """
    options = _options(locals())  # checked here, before any case runs
    return run_with(data, task, scorers, scores, options)


def _options(params: dict[str, Any]) -> RunOptions:
    """The `RunOptions` among the parameters of `run` or `arun` (each field is one of them)."""
    return RunOptions(**{f.name: params[f.name] for f in dataclasses.fields(RunOptions)})


def run_with(
    data: Any,
    task: Callable[..., Any] | None,
    scorers: Sequence[Scorer | Callable[..., Any]],
    scores: Sequence[ScoreDefinition | str],
    options: RunOptions,
) -> Run:
    """`eb.run` with its options already checked (`Eval.run` goes through here)."""
    return as_run(run_sync(execute(data, task, scorers, scores, options)))


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load a stored run: from its Parquet files, or from its event log after a crash.

    The loaded run has the same tables, summary and headline as the run that was stored.
    A truncated last line in `events.jsonl` is skipped with a warning; a file written with
    another `schema_version` raises an error naming both versions.

    Args:
        path: The run's folder (or any file in it), e.g. `run.path` or a row of `eb.runs()`.

    Example:
        >>> import pandas as pd, evalbook as eb, tempfile
        >>> store = tempfile.mkdtemp()
        >>> run = eb.run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x.upper(),
        ...              scorers=[lambda output: float(output == "A")], store=store,
        ...              progress=False)
        >>> eb.load_run(run.path).headline.text
        'lambda 50% · completed 100%'
    """
    return as_run(read_run(path))
