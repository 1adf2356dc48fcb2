"""The engine: a sample → its attempts → its records, through an `Executor` and a `RunSink`.

`_drive` sets a run up and drives its samples through an engine."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._model._contract import (
    ERROR,
    SCORED,
    UNSCORED,
    Rec,
    error_rec,
    handed_back_awaitable,
)
from .._model._origin import GRADER, HARNESS, TASK, failure_origin, record_origin
from .._model._results import (
    ERRORED,
    FAILED,
    PASSED,
    PENDING,
    TIMED_OUT,
    Attempt,
    Finished,
    Results,
)
from .._model._transcript import Transcript, transcript_problem
from .._util._text import MAX_DEPTH, nested_deeper_than, safe_str
from ._binding import call_args
from ._calls import AttemptTimeout, Threads, call, within
from ._context import CaseContext
from ._meter import Ledger, Meter, metering
from ._options import RunOptions
from ._plan import BoundScorer, Plan
from ._scorer_calls import INVALID, awaitable_again, is_sample_error, scored_async, scored_sync
from ._steps import StepLog, logging_steps
from ._stopping import Stopper

__all__ = [
    "Engine",
    "Executor",
    "Kept",
    "LocalExecutor",
    "RunSink",
    "is_sample_error",
    "warn_invalid",
]

log = logging.getLogger("evalbook")

_NOT_RECORDED = Rec(UNSCORED, reason="not_recorded")
# the error type of a sample whose task returned an eb.Transcript that is not sound; its
# records are errors of reason "invalid_transcript"
INVALID_TRANSCRIPT = "InvalidTranscript"


class RunSink(Protocol):
    """Receives a run's progress as it happens (the run store implements it)."""

    def case_started(self, start: tuple[int, int, int], /) -> None:
        """An attempt started: `(pos, attempt, at_us)`, at_us in whole Unix microseconds."""

    def case_ended(self, pos: int, case: Finished) -> None:
        """A finished case, as `Results.set_case` stores it."""


class Executor(Protocol):
    """Runs the cases of a run through its engine: locally (`LocalExecutor`) or on Dask.

    An executor decides where and in what order cases run; every finished case goes through
    the engine's `Results`, sink and tick (on Dask the driver applies the rows it gets back).
    """

    async def execute(self, engine: Engine, positions: Sequence[int], /) -> None:
        """Run every case of `positions`; return once all of them have finished."""


@dataclass(frozen=True, slots=True)
class Kept:
    """What a rescore keeps of its source run: outcomes, outputs, times and some records.

    `records` maps a score's position in the new run to its position in the source; those
    records are copied as they are, the other scores are scored again. Each sample keeps
    its task's usage and that of `sources` (the kept scores' names).
    """

    source: Results
    records: dict[int, int]
    sources: frozenset[str] = frozenset()  # usage sources kept with those records


class Engine:
    """Runs single cases of a plan and hands each finished one on; one engine per run.

    With `kept`, a case is not run but rescored: its outcome and output come from the source.
    """

    def __init__(
        self,
        plan: Plan,
        options: RunOptions,
        threads: Threads,
        *,
        results: Results | None,
        sink: RunSink | None = None,
        tick: Callable[[], None] | None = None,
        kept: Kept | None = None,
        epoch_at: Sequence[int] | None = None,
        ledger: Ledger | None = None,
        stopper: Stopper | None = None,
    ) -> None:
        self.plan = plan
        self.results = results
        self.timeout = options.timeout
        self.scorer_timeout = options.scorer_timeout
        self.attempts = options.attempts
        self.epochs = options.epochs
        self.environment_errors = tuple(options.environment_errors)
        # a Dask batch ships each of its samples with its own row: there position i is row i,
        # epoch epoch_at[i]; locally sample i is case i // epochs, epoch i % epochs + 1
        self.epoch_at = epoch_at
        self.concurrency = options.concurrency
        self.threads = threads
        self.sink = sink
        self.tick = tick
        self.kept = kept
        self.sync_scorers = [b for b in plan.scorers if not b.is_async]
        self.async_scorers = [b for b in plan.scorers if b.is_async]
        self.n_scores = len(plan.definitions)
        self.warned: set[str] = set()
        # the run's prices, budget and spend (one per run: every sample's meter reports here)
        self.ledger = Ledger(options.prices, options.max_cost) if ledger is None else ledger
        self.stopper = stopper  # stop_when=: once decided, no sample starts (docs/spend-less.md)

    def _sample(self, pos: int) -> tuple[int, int]:
        """Sample `pos` as (the row of its case in the plan's columns, its epoch)."""
        if self.epoch_at is None:
            case, epoch = divmod(pos, self.epochs)
            return case, epoch + 1
        return pos, self.epoch_at[pos]

    def _values(self, pos: int) -> dict[str, Any]:
        """The named values of sample `pos`: its case's columns, `case_id` and `epoch`."""
        plan = self.plan
        case, epoch = self._sample(pos)
        values: dict[str, Any] = {c: plan.columns[c][case] for c in plan.needed}
        if plan.wants_row:
            values["row"] = {k: plan.columns[k][case] for k in plan.row_keys}
        values["case_id"] = plan.case_ids[case]
        values["epoch"] = epoch
        return values

    async def case(self, pos: int) -> None:
        """Run (or rescore) one sample (a case's epoch), score it, and hand it on.

        Once the run's budget (`max_cost=`) is reached, a sample does not start: it stays
        without an outcome, for a resume.
        """
        if self.ledger.exhausted():
            self.ledger.not_started += 1
            return
        if self.stopper is not None and self.stopper.stopped:
            self.stopper.skipped += 1
            return
        values = self._values(pos)
        with metering(self.ledger.meter(values["case_id"], values["epoch"])) as meter:
            if self.kept is not None:
                await self._rescore(pos, self.kept, values, meter)
            else:
                await self._run(pos, values, meter)

    async def _run(self, pos: int, values: dict[str, Any], meter: Meter) -> None:
        plan = self.plan
        # times in whole microseconds, so that the run log holds them exactly as integers
        at_us = time.time_ns() // 1000
        t0 = time.perf_counter_ns()
        recs: list[Rec | None] = [None] * self.n_scores
        etype = emsg = None
        output: Any = None
        attempt = 0
        outcome = PASSED
        origin: str | None = None
        transcript: Transcript | None = None
        tries: list[Attempt] = []  # every attempt of a retried sample (`Finished.tries`)
        if plan.task is None:
            output = plan.columns[plan.output_column][self._sample(pos)[0]]
        else:
            while True:
                attempt += 1
                at = at_us if attempt == 1 else time.time_ns() // 1000
                t = t0 if attempt == 1 else time.perf_counter_ns()
                if self.sink is not None:
                    self.sink.case_started((pos, attempt, at))
                steps = StepLog()  # each attempt its own: the final attempt's is the sample's
                ctx = CaseContext(
                    values["case_id"], attempt, plan.index, values["epoch"], meter, steps
                )
                with logging_steps(steps):
                    outcome, output, etype, emsg, origin = await self._attempt(values, ctx)
                transcript = steps.close()
                if isinstance(output, Transcript):
                    transcript, output = output, output.output
                again = outcome in (ERRORED, TIMED_OUT) and attempt < self.attempts
                if again or tries:  # a retried sample keeps its final attempt too
                    took = (time.perf_counter_ns() - t) // 1000 / 1e6
                    tries.append(Attempt(outcome, etype, emsg, at / 1e6, took))
                if not again:
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
            meter,
            tuple(tries) if attempt > 1 else None,
            transcript,
            origin,
        )

    async def _rescore(self, pos: int, kept: Kept, values: dict[str, Any], meter: Meter) -> None:
        src = kept.source
        outcome = int(src.outcome[pos])
        if outcome == PENDING:
            return
        old = src.records_of(pos)
        recs: list[Rec | None] = [None] * self.n_scores
        for j, k in kept.records.items():
            recs[j] = old[k]
        # what produced the output (the task) and the kept records' calls stay the sample's
        meter.keep(src.usage[pos], kept.sources)
        await self.finish(
            pos,
            values,
            recs,
            outcome,
            int(src.attempts[pos]),
            src.output[pos],
            src.error_type[pos],
            src.error_message[pos],
            float(src.started_at[pos]),
            float(src.duration_s[pos]),
            meter,
            src.tries[pos],
            src.transcript_of(pos),
            src.origin[pos],
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
        meter: Meter,
        tries: tuple[Attempt, ...] | None = None,
        transcript: Transcript | None = None,
        origin: str | None = None,
    ) -> None:
        """Score a case by its final outcome, fill every record, store it, tell the sink.

        `recs` holds what is already recorded (by `ctx`, or kept by a rescore); `meter`
        what the sample's calls used (closed here, once its scorers are done); `tries` its
        attempts (`Finished.tries`); `transcript` what its task did, step by step;
        `origin` where an errored or timed-out sample's failure came from (`_origin`).
        Every error record gets its origin here (`with_origins`).
        """
        if outcome == PASSED:
            values["output"] = output
            # a scorer's `transcript` (None: it has none), its `output` the sample's: the same
            # in a run and in a rescore (a stored transcript keeps no output)
            shown = transcript
            if transcript is not None and transcript.output is not output:
                shown = Transcript.model_construct(messages=transcript.messages, output=output)
            values["transcript"] = shown
            await self._score(values, recs)
            filled = [_NOT_RECORDED if r is None else r for r in recs]
        elif outcome == FAILED:
            failed = Rec(UNSCORED, reason="case_failed", message=emsg)
            filled = [failed if r is None else r for r in recs]
        elif etype == INVALID_TRANSCRIPT:
            filled = [error_rec("invalid_transcript", emsg or "", origin=origin)] * self.n_scores
        else:
            code = "case_errored" if outcome == ERRORED else "case_timed_out"
            filled = [error_rec(code, f"{etype}: {emsg}", origin=origin)] * self.n_scores
        if outcome in (PASSED, FAILED):
            origin = None
            self._derive(filled, outcome)
            with_origins(filled)
        usage = meter.close()
        case = Finished(
            outcome,
            attempts,
            output,
            etype,
            emsg,
            started,
            duration,
            filled,
            usage,
            tries,
            transcript,
            None,
            origin,
        )
        if self.results is not None:
            case = self.results.set_case(pos, case)  # as stored: its text cleaned
        if self.sink is not None:
            self.sink.case_ended(pos, case)
        if self.stopper is not None:
            self.stopper.catch_up()
        if self.tick is not None:
            self.tick()

    async def _attempt(
        self, values: dict[str, Any], ctx: CaseContext
    ) -> tuple[int, Any, str | None, str | None, str | None]:
        """One call of the task: (outcome, output, error type, error message, origin)."""
        plan = self.plan
        assert plan.task is not None and plan.task_binding is not None
        values["ctx"] = ctx
        args, kwargs = call_args(plan.task_binding, values)
        try:
            output = await call(
                plan.task, plan.task_is_async, args, kwargs, self.threads, self.timeout
            )
        except AssertionError as exc:
            return FAILED, None, type(exc).__name__, safe_str(exc), None
        except AttemptTimeout as exc:
            if not exc.started:  # no worker thread took it up in time: say so, honestly
                why = f"the task never started within {self.timeout}s (no worker thread was free)"
                return TIMED_OUT, None, "TimeoutError", why, HARNESS
            why = f"the task took longer than {self.timeout}s"
            return TIMED_OUT, None, "TimeoutError", why, TASK
        except BaseException as exc:
            if not is_sample_error(exc):
                raise
            origin = failure_origin(exc, self.environment_errors)
            return ERRORED, None, type(exc).__name__, safe_str(exc), origin
        finally:
            del values["ctx"]
        if handed_back_awaitable(output):  # awaited once (a sync wrapper's): never a chain
            return ERRORED, None, "TypeError", awaitable_again("task", output), TASK
        if isinstance(output, Transcript):
            problem = transcript_problem(output)  # checked again: its lists may have changed
            if problem is not None:
                why = f"the task returned an eb.Transcript that is not sound: {problem}"
                return ERRORED, None, INVALID_TRANSCRIPT, why, TASK
            if not nested_deeper_than(output.output, MAX_DEPTH):
                return PASSED, output, None, None, None
        if nested_deeper_than(output, MAX_DEPTH) or isinstance(output, Transcript):
            # nothing could store, show or score it
            why = (
                f"the task's output nests lists, dicts or tuples more than {MAX_DEPTH} levels "
                "deep; a run keeps outputs as JSON: return a flatter value, or its text"
            )
            return ERRORED, None, "ValueError", why, TASK
        return PASSED, output, None, None, None

    async def _score(self, values: dict[str, Any], recs: list[Rec | None]) -> None:
        """Every scorer of a case: the sync ones in one thread hop, the async ones meanwhile.

        With `scorer_timeout`, each scorer has its own deadline (and each sync one its own
        thread hop, so that one slow scorer cannot eat the others' time).
        """
        if self.scorer_timeout is not None:
            await self._score_bounded(values, recs, self.scorer_timeout)
            return
        hop = self.threads.submit(self._score_sync, values, recs) if self.sync_scorers else None
        if self.async_scorers:
            outs = await asyncio.gather(*(scored_async(b, values) for b in self.async_scorers))
            for b, out in zip(self.async_scorers, outs, strict=True):
                self._place(b, out, recs, values)
        if hop is not None:
            for b, later in await hop:
                if not isinstance(later, list):  # a sync scorer that handed back a coroutine
                    later = await scored_async(b, values, later)
                self._place(b, later, recs, values)

    async def _score_bounded(
        self, values: dict[str, Any], recs: list[Rec | None], deadline: float
    ) -> None:
        async def scored(b: BoundScorer) -> list[Rec]:
            if b.is_async:
                return await scored_async(b, values)
            out: list[Rec] | Awaitable[Any] = await self.threads.submit(scored_sync, b, values)
            if not isinstance(out, list):  # a sync scorer that handed back a coroutine
                out = await scored_async(b, values, out)
            return out

        async def one(b: BoundScorer) -> list[Rec]:
            try:  # `within`: the deadline holds even if the scorer swallows its cancellation
                return await within(scored(b), deadline)
            except AttemptTimeout:
                message = f"scorer {b.scorer.name!r} took longer than scorer_timeout={deadline}s"
                return [error_rec("scorer_timed_out", message)] * len(b.positions)

        scorers = self.plan.scorers
        outs = await asyncio.gather(*(one(b) for b in scorers))
        for b, out in zip(scorers, outs, strict=True):
            self._place(b, out, recs, values)

    def _score_sync(
        self, values: dict[str, Any], recs: list[Rec | None]
    ) -> list[tuple[BoundScorer, list[Rec] | Awaitable[Any]]]:
        """In a worker thread: the case's sync scorers, in order, their records placed.

        Returns what the event loop still has to see to: a coroutine a scorer handed back,
        or records with an invalid score it may have to warn about.
        """
        later: list[tuple[BoundScorer, list[Rec] | Awaitable[Any]]] = []
        for b in self.sync_scorers:
            out = scored_sync(b, values)
            if not isinstance(out, list):
                later.append((b, out))
                continue
            invalid = False
            for j, rec in zip(b.positions, out, strict=True):
                recs[j] = rec
                invalid = invalid or rec.reason == INVALID
            if invalid and b.scorer.name not in self.warned:
                later.append((b, out))
        return later

    def _place(
        self, bound: BoundScorer, out: Sequence[Rec], recs: list[Rec | None], values: dict[str, Any]
    ) -> None:
        for j, rec in zip(bound.positions, out, strict=True):
            recs[j] = rec
        name = bound.scorer.name
        if name not in self.warned:
            warn_invalid(self.warned, values["case_id"], ((name, rec) for rec in out))

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
                        origin=recs[j].origin or GRADER,
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


def with_origins(recs: list[Rec]) -> None:
    """Give each error record that does not say its origin (a scorer's: the grader's)."""
    for j, rec in enumerate(recs):
        if rec.status == ERROR and rec.origin is None:
            recs[j] = rec._replace(origin=record_origin(rec.reason, None) or GRADER)


def warn_invalid(warned: set[str], case_id: str, records: Iterable[tuple[str, Rec]]) -> None:
    """Log the first invalid score of each scorer, once per run (local and Dask runs alike)."""
    for name, rec in records:
        if rec.reason != INVALID or name in warned:
            continue
        warned.add(name)
        log.warning(
            "scorer %r returned an invalid score for case %r: %s "
            "(logged once per scorer; every one is an error record in run.scores)",
            name,
            case_id,
            rec.message,
        )


class LocalExecutor:
    """Runs cases on this event loop, `concurrency` at a time, starting them in input order."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency

    async def execute(self, engine: Engine, positions: Sequence[int], /) -> None:
        """Run every case of `positions` (see `Executor`)."""
        queue = iter(positions)

        async def worker() -> None:
            for pos in queue:  # a shared iterator: cases start in input order
                await engine.case(pos)

        workers = min(self.concurrency, len(positions)) or 1
        if workers == 1:
            await worker()
        else:
            await asyncio.gather(*(worker() for _ in range(workers)))
