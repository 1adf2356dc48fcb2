"""Scale-out on Dask, the driver side: `eb.run(executor=<dask Client> | "dask")`.

The driver (the process that called `eb.run`) checks that the run's functions travel
(cloudpickle), partitions the cases to run into batches, submits them, and applies each batch's
rows as it finishes (`as_completed`) to the run's `Results` and the store sink, which only the
driver writes. Every case is applied once: a batch that Dask re-runs after a worker died returns
once, and positions already applied are skipped. The worker side is `_worker.py`.

Usage comes back in each row; `apply` adds each sample's known cost to the driver engine's
ledger once. With `max_cost=`, batches are submitted a few at a time (as many as the cluster
runs at once) and none once the budget is reached (the driver's ledger, or the run's live
total the batches add to, `spend_name`); batches in flight start no sample past it, and
samples never started stay without an outcome, counted in `ledger.not_started`
(docs/scaling.md).

dask and distributed are imported only here, and only when `executor=` is given.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ..._errors import ConfigurationError
from ..._model._contract import error_rec, safe_repr
from ..._model._origin import ENVIRONMENT
from ..._model._results import ERRORED, Finished
from ..._model._tally import sample_totals
from .._engine import Engine, warn_invalid
from .._plan import Plan
from ._limits import limits_name
from ._shared import Guarded, close_shared, forget_local, open_shared
from ._worker import PlanPlugin, Report, Row, run_batch, spend_name

__all__ = ["DaskRunner", "batch_size", "partition"]

log = logging.getLogger("evalbook")

WAVES = 4  # aim for about this many batches per worker thread: balance, little lost work
MAX_BATCH = 256  # cases per batch at most (bounds the work a dead worker takes with it)
INSTALL = 'pip install "evalbook[dask]"'


# -- batches ---------------------------------------------------------------------------------


def batch_size(n: int, slots: int, concurrency: int) -> int:
    """Cases per batch for `n` cases on `slots` worker threads under `concurrency`.

    Big enough that the running batches together can hold `concurrency` cases in flight,
    small enough for about `WAVES` batches per slot (load balance; a dead worker loses
    little work), and never more than `MAX_BATCH`.

    Example:
        >>> batch_size(1000, slots=4, concurrency=8)
        63
        >>> batch_size(10, slots=4, concurrency=64)
        3
    """
    if n <= 0:
        return 1
    slots = max(1, slots)
    fill = math.ceil(min(concurrency, n) / slots)
    waves = math.ceil(n / (slots * WAVES))
    return max(1, min(MAX_BATCH, n, max(fill, waves)))


def epoch_major(positions: Sequence[int], epochs: int) -> list[int]:
    """Sample positions ordered by epoch, then case: a case's epochs go to different batches
    (and so spread over the workers), so a slow case does not hold one worker for all of them.

    Example:
        >>> epoch_major([0, 1, 2, 3, 4, 5], epochs=2)
        [0, 2, 4, 1, 3, 5]
    """
    return sorted(positions, key=lambda p: (p % epochs, p))


def partition(positions: Sequence[int], size: int) -> list[list[int]]:
    """Consecutive batches of `size` positions (the last may be shorter), in order."""
    return [list(positions[i : i + size]) for i in range(0, len(positions), size)]


# -- what travels ----------------------------------------------------------------------------


def _pickle_plan(plan: Plan) -> bytes:
    """The plan without its data, cloudpickled; a ConfigurationError names what cannot travel."""
    import cloudpickle  # optional: the dask extra

    static = replace(plan, columns={}, case_ids=[])
    try:
        return bytes(cloudpickle.dumps(static))
    except Exception as exc:
        culprit = "the run's configuration"
        reason = exc
        parts: list[tuple[str, Any]] = [(f"the task {_name_of(plan.task)!r}", plan.task)]
        for b in plan.scorers:
            scores = ", ".join(d.name for d in b.scorer.definitions)
            parts.append((f"the scorer {_name_of(b.scorer.fn)!r} (scores: {scores})", b.scorer.fn))
        for what, fn in parts:
            if fn is None:
                continue
            try:
                cloudpickle.dumps(fn)
            except Exception as inner:
                culprit, reason = what, inner
                break
        raise ConfigurationError(
            f"{culprit} cannot be sent to the Dask workers: {type(reason).__name__}: {reason}. "
            "Functions travel with cloudpickle, so everything they refer to (globals, closure "
            "variables, default arguments) must be picklable: create locks, open files and SDK "
            "clients inside the function (or lazily, once per worker process)"
        ) from None


def _name_of(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or safe_repr(fn))


def _pickle_batch(plan: Plan, batch: list[int], epochs: int) -> bytes:
    """A batch of samples, each with its case's id and row (repeated per epoch) and epoch."""
    import cloudpickle  # optional: the dask extra

    ids = [plan.case_ids[p // epochs] for p in batch]
    columns = {c: [values[p // epochs] for p in batch] for c, values in plan.columns.items()}
    at = [p % epochs + 1 for p in batch]
    try:
        return bytes(cloudpickle.dumps((batch, ids, columns, at)))
    except Exception as exc:
        raise ConfigurationError(
            f"the data of cases {ids[0]!r}…{ids[-1]!r} cannot be sent to the Dask workers: "
            f"{type(exc).__name__}: {exc}. Every column value must be picklable"
        ) from None


def _unpack(blob: bytes) -> tuple[list[Row], Report]:
    import cloudpickle  # optional: the dask extra

    out: tuple[list[Row], Report] = cloudpickle.loads(blob)
    return out


# -- driver side -----------------------------------------------------------------------------


def _distributed() -> Any:
    """The `distributed` module (only partly typed, so it is handled as Any here)."""
    import distributed  # optional: the dask extra

    return distributed


def _client_class() -> Any:
    try:
        return _distributed().Client
    except ImportError:
        raise ConfigurationError(
            f"executor= needs dask.distributed, which is not installed: {INSTALL}"
        ) from None


class DaskRunner:
    """Runs the cases of a local engine's run on a Dask cluster (`eb.run(executor=...)`).

    Construct it before any case runs: it checks the executor and that the functions travel.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> from distributed import Client, LocalCluster
        >>> with LocalCluster(n_workers=2, dashboard_address=None) as cluster, Client(cluster) as c:
        ...     run = eb.run(pd.DataFrame({"q": ["a"]}), task=lambda q: q.upper(),
        ...                  executor=c, store=None, progress=False)
        >>> run.cases["output"].tolist()
        ['A']
    """

    def __init__(self, executor: Any, plan: Plan) -> None:
        if isinstance(executor, str) and executor == "dask":
            _client_class()
            self.client: Any = None  # a LocalCluster's client, made when the run starts
        else:
            try:
                client_class = _client_class()
            except ConfigurationError:
                client_class = None
            if client_class is None or not isinstance(executor, client_class):
                raise ConfigurationError(
                    'executor= takes a dask.distributed.Client or "dask" (a LocalCluster on '
                    f"this machine), not {safe_repr(executor)}"
                )
            if executor.asynchronous:
                raise ConfigurationError(
                    "executor= needs a synchronous dask Client (made without asynchronous=True); "
                    "the driver streams results from a thread of its own"
                )
            self.client = executor
        self.plan = plan
        self.plan_blob = _pickle_plan(plan)
        self.scorer_at = {j: b.scorer.name for b in plan.scorers for j in b.positions}
        self.flow: _Flow | None = None

    async def execute(self, engine: Engine, positions: Sequence[int], /) -> None:
        """Run `positions` on the cluster; results go to `engine.results`, sink and tick."""
        todo = list(positions)
        if not todo:
            return
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbook-dask") as ex:
            try:
                await loop.run_in_executor(ex, self._drive, engine, todo, stop)
            except BaseException:  # cancelled or interrupted: stop the batches, then the thread
                stop.set()
                flow = self.flow
                if flow is not None:
                    flow.cancel()  # cancelled futures wake the driver thread, which returns
                raise

    def _drive(self, engine: Engine, todo: list[int], stop: threading.Event) -> None:
        if self.client is not None:
            self._stream(self.client, engine, todo, stop)
            return
        dist = _distributed()
        with (
            dist.LocalCluster(processes=True, dashboard_address=":0") as cluster,
            dist.Client(cluster) as client,
        ):
            self._stream(client, engine, todo, stop)

    def _stream(self, client: Any, engine: Engine, todo: list[int], stop: threading.Event) -> None:
        dist = _distributed()
        slots = sum(client.nthreads().values())
        if engine.stopper is None:
            order = epoch_major(todo, engine.epochs)
            size = batch_size(len(order), slots, engine.concurrency)
        else:  # stop_when=: the seeded order, in small batches (little runs past a decision)
            order, size = list(todo), max(1, -(-engine.concurrency // max(1, slots)))
        batches = partition(order, size)
        blobs = [
            _pickle_batch(self.plan, b, engine.epochs) for b in batches
        ]  # all checked before any runs
        token = uuid.uuid4().hex
        limit: str | None = None
        sem: Any = None
        if engine.concurrency < len(todo):  # otherwise the limit can never bind
            limit = f"evalbook-{token}"
            sem = dist.Semaphore(
                max_leases=engine.concurrency,
                name=limit,
                scheduler_rpc=client.scheduler,
                loop=client.loop,
            )
            sem.register()
        # The plan travels once per worker, as a worker plugin: workers that join or restart
        # mid-run get it too (scattered data would be lost with the worker that held it).
        plugin = PlanPlugin(token, self.plan_blob)
        client.register_plugin(plugin)
        ledger = engine.ledger
        shared: dict[str, Any] = {limits_name(token): {}}  # rate limits, none booked yet
        if ledger.max_cost is not None:
            shared[spend_name(token)] = ledger.spent  # the live total starts from what is kept
        options = (
            limit,
            engine.concurrency,
            engine.timeout,
            engine.attempts,
            engine.scorer_timeout,
            ledger.prices,  # costs are computed on the workers, where the calls are made
            ledger.max_cost,
        )
        flow = self.flow = _Flow(self, client, engine, token, options)
        try:
            open_shared(client, shared)
            flow.run(batches, blobs, stop)
        finally:
            flow.cancel()
            try:
                client.unregister_worker_plugin(plugin.name)
            except Exception:  # e.g. the cluster is shutting down
                log.debug("could not remove worker plugin %s", plugin.name, exc_info=True)
            close_shared(client, list(shared))
            forget_local(token)
            if sem is not None:
                try:
                    sem.close()
                except Exception:  # the scheduler drops it with the cluster anyway
                    log.debug("could not close semaphore %s", limit, exc_info=True)

    def apply(self, engine: Engine, rows: Iterable[Row], done: list[bool]) -> None:
        """Store each row not applied before, log it, and count its cost in the ledger."""
        results, sink, tick, ledger = engine.results, engine.sink, engine.tick, engine.ledger
        assert results is not None  # the driver's engine keeps the run's results
        for pos, case in rows:
            if done[pos]:
                continue  # a batch re-run after a worker died: every case counts once
            done[pos] = True
            if case.usage:
                cost = sample_totals(case.usage)[2]
                if cost == cost:  # known: the driver thread alone adds to its ledger
                    ledger.spent += cost
                for tally in case.usage.values():
                    if tally.invalid is not None:  # warned of once per run, on the driver
                        ledger.note_invalid(results.case_id_of(pos), tally.invalid)
                        break
            if sink is not None:
                now = time.time_ns() // 1000  # logged as the case arrives from the cluster
                for attempt in range(1, case.attempts + 1):
                    sink.case_started((pos, attempt, now))
            case = results.set_case(pos, case)  # as stored: its text cleaned
            if sink is not None:
                sink.case_ended(pos, case)
            if engine.stopper is not None:
                engine.stopper.catch_up()
            at = self.scorer_at
            named = ((at[j], r) for j, r in enumerate(case.records) if j in at)
            warn_invalid(engine.warned, results.case_id_of(pos), named)
            if tick is not None:
                tick()


class _Flow:
    """Submits a run's batches and applies each one's rows as it finishes, exactly once.

    A batch that Dask gave up on because its workers died (`KilledWorker`) is split: its
    unfinished cases run again one at a time, alone in flight among the retried cases, so a
    case that kills its worker is found and recorded as errored while the others complete.

    With a budget (`max_cost=`), at most `window` batches are in flight (what the cluster
    runs at once), so that once the ledger is exhausted no further batch is submitted and
    the samples not started are few to count and cheap to resume.
    """

    def __init__(
        self, runner: DaskRunner, client: Any, engine: Engine, token: str, options: tuple[Any, ...]
    ) -> None:
        self.runner = runner
        self.client = client
        self.engine = engine
        self.token = token
        self.options = options
        self.done = [False] * (len(engine.plan.case_ids) * engine.epochs)
        self.owner: dict[Any, tuple[list[int], bool]] = {}  # future key -> (cases, single)
        self.live: list[Any] = []
        self.singles: deque[int] = deque()
        self.stream: Any = None
        self.stopped = False  # the budget is reached (by the driver's or a batch's count)

    def submit(self, batch: list[int], blob: bytes, single: bool = False) -> Any:
        key = f"evalbook-{uuid.uuid4().hex}"
        spent = self.engine.ledger.spent  # the batch's budget starts from what is known now
        kinds = self.engine.environment_errors  # environment_errors=: the workers classify
        future = self.client.submit(
            run_batch, key, self.token, blob, *self.options, spent, kinds, key=key
        )
        self.owner[future.key] = (batch, single)
        self.live.append(future)
        return future

    def over_budget(self) -> bool:
        """Whether no further sample may start: the budget is reached by the ledger's count,
        a batch's, or the run's live total (which also holds the calls of samples running)."""
        stopper = self.engine.stopper
        if stopper is not None and stopper.stopped:  # stop_when= decided: no batch starts
            return True
        ledger = self.engine.ledger
        if self.stopped or ledger.max_cost is None:
            return self.stopped
        if ledger.exhausted():
            self.stopped = True
            return True
        try:
            name = spend_name(self.token)
            local = Guarded(self.client.scheduler.address, name, ledger.spent)
            if local.local:  # an in-process cluster keeps it in this process
                live = local.value()
            else:
                live = _distributed().Variable(name, client=self.client).get(timeout=5)
            self.stopped = float(live) >= ledger.max_cost
        except Exception:  # the ledger's count alone holds the budget then
            log.debug("could not read the run's live cost", exc_info=True)
        return self.stopped

    def cancel(self) -> None:
        """Cancel every batch not finished yet (safe from any thread, more than once)."""
        pending = [f for f in self.live if not f.done()]
        if pending:
            try:
                self.client.cancel(pending)
            except Exception:  # the cluster is going away: nothing left to cancel
                log.debug("could not cancel %d batches", len(pending), exc_info=True)

    def next_single(self) -> bool:
        if self.over_budget():
            return False  # the samples left stay without an outcome, for a resume
        while self.singles:
            p = self.singles.popleft()
            if not self.done[p]:
                blob = _pickle_batch(self.runner.plan, [p], self.engine.epochs)
                self.stream.add(self.submit([p], blob, single=True))
                return True
        return False

    def run(self, batches: list[list[int]], blobs: list[bytes], stop: threading.Event) -> None:
        engine = self.engine
        waiting = deque(zip(batches, blobs, strict=True))
        window = len(waiting)
        if engine.ledger.max_cost is not None or engine.stopper is not None:
            window = max(1, sum(self.client.nthreads().values()))
        while waiting and len(self.live) < window and not self.over_budget():
            self.submit(*waiting.popleft())
        self.stream = _distributed().as_completed(list(self.live))
        single_running = False
        for future in self.stream:
            if stop.is_set():
                return
            batch, single = self.owner.pop(future.key, (None, False))
            if batch is None:  # already handled (a result Dask had to compute again)
                continue
            single_running = self.finished(future, batch, single, single_running)
            if waiting and not self.over_budget():  # one out, the next one in
                self.stream.add(self.submit(*waiting.popleft()))
        if self.stopped:  # what the budget kept from starting, for the run's one warning
            engine.ledger.not_started += sum(not self.done[p] for b in batches for p in b)

    def finished(self, future: Any, batch: list[int], single: bool, single_running: bool) -> bool:
        """Apply a finished batch; whether a batch of one case is running afterwards."""
        from distributed.scheduler import KilledWorker  # optional: the dask extra

        runner, engine, done = self.runner, self.engine, self.done
        try:
            blob = future.result()
        except KilledWorker as exc:
            left = [p for p in batch if not done[p]]
            if single:  # alone, and its worker died every time: errored, never lost
                runner.apply(engine, [_killed(p, engine.plan, exc) for p in left], done)
            else:
                self.singles.extend(left)
            if single or not single_running:
                single_running = self.next_single()
            return single_running
        except Exception as exc:
            raise RuntimeError(
                f"a batch of cases failed on the Dask cluster: {type(exc).__name__}: "
                f"{exc}. Cases finished so far are kept; functions imported from your own "
                "modules must be importable on the workers"
            ) from exc
        rows, (unpriced, not_started) = _unpack(blob)
        runner.apply(engine, rows, done)
        future.release()
        for model, n in unpriced.items():
            engine.ledger.unpriced[model] = engine.ledger.unpriced.get(model, 0) + n
        self.stopped = self.stopped or not_started > 0
        if self.over_budget():
            return single_running  # samples left unstarted stay without an outcome
        missing = [p for p in batch if not done[p]]
        if missing and single:
            raise RuntimeError(f"the Dask batch of case {missing[0]} returned no result")
        self.singles.extend(missing)  # never happens unless a batch was cut short
        if single or (missing and not single_running):
            single_running = self.next_single()
        return single_running


def _killed(pos: int, plan: Plan, exc: BaseException) -> Row:
    """A case whose worker died every time it ran it: errored, never lost.

    Its origin is the environment's: the process it ran in died (out of memory, killed).
    """
    emsg = f"its Dask worker died each time it ran this case ({exc})"
    why = f"KilledWorker: {emsg}"
    recs = [error_rec("case_errored", why, origin=ENVIRONMENT)] * len(plan.definitions)
    started = time.time_ns() // 1000 / 1e6
    case = Finished(ERRORED, 1, None, "KilledWorker", emsg, started, 0.0, recs)
    return (pos, case._replace(origin=ENVIRONMENT))
