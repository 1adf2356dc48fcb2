"""The runner: cases → attempts → records, with bounded concurrency."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

import pandas as pd

from .._errors import ConfigurationError, SkipScore
from .._model._contract import (
    ERROR,
    SCORED,
    UNSCORED,
    Rec,
    error_rec,
    interpret,
    raised_rec,
    skip_rec,
)
from .._model._results import ERRORED, FAILED, PASSED, TIMED_OUT, Finished, Results
from .._model._run_data import RunData
from .._model._scorers import Scorer
from .._model._scores import ScoreDefinition
from .._store._sink import Prepared
from ._binding import call_args
from ._calls import AttemptTimeout, Caller
from ._context import CaseContext
from ._plan import BoundScorer, Plan, make_plan
from ._prepare import prepare

__all__ = ["RunSink", "drive", "execute"]

log = logging.getLogger("evalbook")

_NOT_RECORDED = Rec(UNSCORED, reason="not_recorded")


class RunSink(Protocol):
    """Receives a run's progress as it happens (the run store implements it)."""

    def case_started(self, start: tuple[int, int, int], /) -> None:
        """An attempt started: `(pos, attempt, at_us)`, at_us in whole Unix microseconds."""

    def case_ended(self, pos: int, case: Finished) -> None:
        """A finished case, as `Results.set_case` stores it."""


class _Engine:
    """Runs every case of a plan and writes its results; one engine per run."""

    def __init__(
        self,
        plan: Plan,
        results: Results,
        *,
        concurrency: int,
        timeout: float | None,
        attempts: int,
        pool: ThreadPoolExecutor,
        sink: RunSink | None = None,
        tick: Callable[[], None] | None = None,
    ) -> None:
        self.plan = plan
        self.results = results
        self.timeout = timeout
        self.attempts = attempts
        self.concurrency = concurrency
        self.sink = sink
        self.tick = tick
        self.task = Caller(plan.task, plan.task_is_async, pool) if plan.task else None
        self.scorers = [(b, Caller(b.scorer.fn, b.is_async, pool)) for b in plan.scorers]
        self.n_scores = len(plan.definitions)
        self.warned: set[str] = set()

    async def execute(self, positions: Iterable[int]) -> None:
        queue = iter(positions)

        async def worker() -> None:
            for pos in queue:  # a shared iterator: cases start in input order
                await self.case(pos)

        workers = min(self.concurrency, self.results.n_cases) or 1
        if workers == 1:
            await worker()
        else:
            await asyncio.gather(*(worker() for _ in range(workers)))

    def _values(self, pos: int) -> dict[str, Any]:
        plan = self.plan
        values: dict[str, Any] = {c: plan.columns[c][pos] for c in plan.needed}
        if plan.wants_row:
            values["row"] = {k: plan.columns[k][pos] for k in plan.row_keys}
        values["case_id"] = plan.case_ids[pos]
        return values

    async def case(self, pos: int) -> None:
        plan = self.plan
        values = self._values(pos)
        # times in whole microseconds, so that the run log holds them exactly as integers
        at_us = time.time_ns() // 1000
        t0 = time.perf_counter_ns()
        recs: list[Rec | None] = [None] * self.n_scores
        etype = emsg = None
        output: Any = None
        attempt = 0
        outcome = PASSED
        if self.task is None:
            output = plan.columns[plan.output_column][pos]
        else:
            while True:
                attempt += 1
                if self.sink is not None:
                    self.sink.case_started(
                        (pos, attempt, at_us if attempt == 1 else time.time_ns() // 1000)
                    )
                ctx = CaseContext(plan.case_ids[pos], attempt, plan.index)
                outcome, output, etype, emsg = await self._attempt(values, ctx)
                if outcome in (ERRORED, TIMED_OUT) and attempt < self.attempts:
                    continue
                break
            if outcome in (PASSED, FAILED):
                for j, rec in ctx.recorded.items():
                    recs[j] = rec
        await self.finish(
            pos,
            values,
            recs,
            outcome,
            attempt,
            output,
            etype,
            emsg,
            at_us / 1e6,
            (time.perf_counter_ns() - t0) // 1000 / 1e6,
        )

    async def finish(
        self,
        pos: int,
        values: dict[str, Any],
        recs: list[Rec | None],
        outcome: int,
        attempts: int,
        output: Any,
        etype: str | None,
        emsg: str | None,
        started: float,
        duration: float,
    ) -> None:
        """Score a case by its final outcome, fill every record, store it, tell the sink.

        `recs` holds what is already recorded (by `ctx`, or kept by a rescore).
        """
        if outcome == PASSED:
            values["output"] = output
            await self._score(values, recs)
            filled = [_NOT_RECORDED if r is None else r for r in recs]
        elif outcome == FAILED:
            failed = Rec(UNSCORED, reason="case_failed", message=emsg)
            filled = [failed if r is None else r for r in recs]
        else:
            code = "case_errored" if outcome == ERRORED else "case_timed_out"
            filled = [error_rec(code, f"{etype}: {emsg}")] * self.n_scores
        if outcome in (PASSED, FAILED):
            self._derive(filled, outcome)
        case = Finished(outcome, attempts, output, etype, emsg, started, duration, filled)
        self.results.set_case(pos, case)
        if self.sink is not None:
            self.sink.case_ended(pos, case)
        if self.tick is not None:
            self.tick()

    async def _attempt(
        self, values: dict[str, Any], ctx: CaseContext
    ) -> tuple[int, Any, str | None, str | None]:
        assert self.task is not None and self.plan.task_binding is not None
        values["ctx"] = ctx
        args, kwargs = call_args(self.plan.task_binding, values)
        try:
            output = await self.task(args, kwargs, self.timeout)
        except AssertionError as exc:
            return FAILED, None, type(exc).__name__, str(exc)
        except AttemptTimeout:
            return TIMED_OUT, None, "TimeoutError", f"the task took longer than {self.timeout}s"
        except Exception as exc:
            return ERRORED, None, type(exc).__name__, str(exc)
        finally:
            del values["ctx"]
        return PASSED, output, None, None

    async def _score(self, values: dict[str, Any], recs: list[Rec | None]) -> None:
        slow = [(b, c) for b, c in self.scorers if c.is_async or not c.inline]
        for b, c in self.scorers:
            if c.is_async or not c.inline:
                continue
            self._place(b, await self._call_scorer(b, c, values), recs)
        if len(slow) == 1:
            b, c = slow[0]
            self._place(b, await self._call_scorer(b, c, values), recs)
        elif slow:
            done = await asyncio.gather(*(self._call_scorer(b, c, values) for b, c in slow))
            for (b, _), out in zip(slow, done, strict=True):
                self._place(b, out, recs)

    async def _call_scorer(
        self, bound: BoundScorer, caller: Caller, values: dict[str, Any]
    ) -> list[Rec]:
        defs = bound.scorer.definitions
        try:
            args, kwargs = call_args(bound.binding, values)
            result = await caller(args, kwargs)
        except SkipScore as exc:
            return [skip_rec(exc)] * len(defs)
        except Exception as exc:
            return [raised_rec(exc)] * len(defs)
        out = interpret(result, defs)
        name = bound.scorer.name
        if name not in self.warned:
            for rec in out:
                if rec.reason == "invalid_score":
                    self.warned.add(name)
                    log.warning(
                        "scorer %r returned an invalid score for case %r: %s "
                        "(logged once per scorer; every one is an error record in run.scores)",
                        name,
                        values["case_id"],
                        rec.message,
                    )
                    break
        return out

    @staticmethod
    def _place(bound: BoundScorer, out: Sequence[Rec], recs: list[Rec | None]) -> None:
        for j, rec in zip(bound.positions, out, strict=True):
            recs[j] = rec

    def _derive(self, recs: list[Rec], outcome: int) -> None:
        for d in self.plan.derived:
            if outcome == FAILED:
                recs[d.position] = Rec(UNSCORED, reason="case_failed")
                continue
            rec: Rec | None = None
            for name, j in d.components:
                if recs[j].status == ERROR:
                    rec = error_rec(
                        f"component_error:{name}",
                        f"component {name!r} is an error: {recs[j].message or recs[j].reason}",
                    )
                    break
            if rec is None:
                for name, j in d.components:
                    if recs[j].status != SCORED:
                        rec = Rec(UNSCORED, reason=f"component_unscored:{name}")
                        break
            if rec is None:
                value = d.combine.evaluate({name: recs[j].value for name, j in d.components})
                rec = Rec(SCORED, value)
            recs[d.position] = rec


def _progress(total: int, enabled: bool, name: str) -> Any:
    if not enabled or total == 0 or os.environ.get("EVALBOOK_PROGRESS", "1") in ("0", "false"):
        return None
    from tqdm.auto import tqdm  # lazy: tqdm.auto may import ipywidgets

    return tqdm(total=total, desc=name, unit="case", delay=1.0, leave=False)


def check_options(concurrency: int, timeout: float | None, attempts: int) -> None:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(f"concurrency must be an integer >= 1, got {concurrency!r}")
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ConfigurationError(f"attempts must be an integer >= 1, got {attempts!r}")
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise ConfigurationError(
            f"timeout must be a number of seconds > 0 or None, got {timeout!r}"
        )


def _as_frame(data: Any) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        return data
    try:
        return pd.DataFrame(data)
    except Exception as exc:
        raise ConfigurationError(
            f"data must be a pandas DataFrame (or something pd.DataFrame() accepts): {exc}"
        ) from None


async def execute(
    data: Any,
    task: Callable[..., Any] | None = None,
    *,
    scorers: Sequence[Scorer | Callable[..., Any]] = (),
    scores: Sequence[ScoreDefinition | str] = (),
    name: str | None = None,
    output_column: str | None = None,
    concurrency: int = 8,
    timeout: float | None = None,
    attempts: int = 1,
    store: str | os.PathLike[str] | None = "runs",
    resume: Any = None,
    progress: bool = True,
    executor: Any = None,
) -> RunData:
    """Check the options, plan and prepare the run, execute every case; return the data."""
    check_options(concurrency, timeout, attempts)
    frame = _as_frame(data)
    plan = make_plan(frame, task, scorers, scores, output_column)
    remote = None
    if executor is not None:  # issue 9: checks the executor and that the functions travel
        from .dask._driver import DaskRunner  # lazy: dask is imported only when it is used

        remote = DaskRunner(executor, plan)
    run_name = name or (getattr(task, "__name__", None) if task else None) or "run"
    if run_name == "<lambda>":
        run_name = "run"
    options = {
        "concurrency": concurrency,
        "timeout": timeout,
        "attempts": attempts,
        "output_column": output_column,
    }
    # the run store (issue 3): name check, folder, run.started; resume pre-fills results
    prepared = prepare(plan, frame, run_name, options, store=store, resume=resume)
    return await drive(
        lambda pool, tick: _Engine(
            plan,
            prepared.results,
            concurrency=concurrency,
            timeout=timeout,
            attempts=attempts,
            pool=pool,
            sink=prepared.sink,
            tick=tick,
        ),
        plan,
        prepared,
        prepared.todo,
        data=frame,
        options=options,
        concurrency=concurrency,
        progress=progress,
        remote=remote,
    )


async def drive(
    make_engine: Callable[[ThreadPoolExecutor, Callable[[], None] | None], _Engine],
    plan: Plan,
    prepared: Prepared,
    todo: Sequence[int],
    *,
    data: pd.DataFrame,
    options: dict[str, Any],
    concurrency: int,
    progress: bool,
    remote: Any = None,
) -> RunData:
    """Run `todo` through an engine (locally or on `remote`), then finish and return the Run.

    Shared by `arun` and `Run.rescore`: the thread pool, the progress bar, closing the log on
    an interruption (so it stays resumable) and writing the final files.
    """
    bar = _progress(len(todo), progress, prepared.name)
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="evalbook")
    engine = make_engine(pool, (lambda: bar.update(1)) if bar is not None else None)
    try:
        if remote is None:
            await engine.execute(todo)
        else:
            await remote.execute(engine, todo)
    except BaseException:
        prepared.close()  # the log stays resumable
        raise
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if bar is not None:
            bar.close()
    finished = RunData(
        name=prepared.name,
        id=prepared.run_id,
        definitions=plan.definitions,
        data=data,
        results=prepared.results,
        options=options,
        path=prepared.path,
    )
    prepared.finish(finished)
    return finished
