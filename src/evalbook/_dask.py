"""Scale-out on Dask: the same per-case engine, run in batches on a `distributed` cluster.

Driver (the process that called `eb.run`): checks that the run's functions travel
(cloudpickle), partitions the cases to run into batches, submits them, and applies each batch's
results as it finishes (`as_completed`) — to the run's `Results` and the store sink, which only
the driver writes. Every case is applied once: a batch that Dask re-runs after a worker died
returns once, and positions already applied are skipped.

Worker: a batch runs on the worker's event loop with the local runner's `_Engine` (sync
functions in threads), so every backend produces the same records; `concurrency=` is a
cluster-wide `distributed.Semaphore` acquired per case. The batch returns its cases compactly,
one tuple per case (see `Row`), cloudpickled.

dask and distributed are imported only here, and only when `executor=` is given.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from ._contract import Rec, error_rec, safe_repr
from ._errors import ConfigurationError
from ._plan import Plan
from ._results import ERRORED, Results
from ._runner import _Engine

try:  # this module is imported only when executor= is given; workers always have it
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - the driver reports the missing install
    WorkerPlugin = object  # type: ignore[assignment,misc]

__all__ = ["DaskRunner", "batch_size", "partition"]

log = logging.getLogger("evalbook")

WAVES = 4  # aim for about this many batches per worker thread: balance, little lost work
MAX_BATCH = 256  # cases per batch at most (bounds the work a dead worker takes with it)
INSTALL = 'pip install "evalbook[dask]"'

# One finished case: (pos, outcome, attempts, output, error_type, error_message,
# started_at, duration_s, records).
Row = tuple[int, int, int, Any, str | None, str | None, float, float, list[Rec]]


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
        10
    """
    if n <= 0:
        return 1
    slots = max(1, slots)
    fill = math.ceil(min(concurrency, n) / slots)
    waves = math.ceil(n / (slots * WAVES))
    return max(1, min(MAX_BATCH, n, max(fill, waves)))


def partition(positions: Sequence[int], size: int) -> list[list[int]]:
    """Consecutive batches of `size` positions (the last may be shorter), in order."""
    return [list(positions[i : i + size]) for i in range(0, len(positions), size)]


# -- what travels ----------------------------------------------------------------------------


def _pickle_plan(plan: Plan) -> bytes:
    """The plan without its data, cloudpickled; a ConfigurationError names what cannot travel."""
    import cloudpickle

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


def _pickle_batch(plan: Plan, batch: list[int]) -> bytes:
    import cloudpickle

    ids = [plan.case_ids[p] for p in batch]
    columns = {c: [values[p] for p in batch] for c, values in plan.columns.items()}
    try:
        return bytes(cloudpickle.dumps((batch, ids, columns)))
    except Exception as exc:
        raise ConfigurationError(
            f"the data of cases {ids[0]!r}…{ids[-1]!r} cannot be sent to the Dask workers: "
            f"{type(exc).__name__}: {exc}. Every column value must be picklable"
        ) from None


def _pack(rows: list[Row]) -> bytes:
    """The batch's rows, cloudpickled; an output that cannot be pickled travels as its repr."""
    import cloudpickle

    try:
        return bytes(cloudpickle.dumps(rows))
    except Exception:
        safe: list[Row] = []
        for row in rows:
            try:
                cloudpickle.dumps(row)
                safe.append(row)
            except Exception:
                recs = [
                    r._replace(metadata={"repr": safe_repr(r.metadata)})
                    if r.metadata is not None
                    else r
                    for r in row[8]
                ]
                safe.append((*row[:3], safe_repr(row[3]), *row[4:8], recs))
        return bytes(cloudpickle.dumps(safe))


# -- worker side -----------------------------------------------------------------------------


class _Collector(Results):
    """Stands in for a run's `Results` on a worker: keeps one compact row per finished case."""

    def __init__(self, positions: Sequence[int]) -> None:  # no column storage on workers
        self.positions = list(positions)
        self.rows: list[Row] = []

    @property
    def n_cases(self) -> int:
        return len(self.positions)

    def set_case(
        self,
        pos: int,
        outcome: int,
        attempts: int,
        output: Any,
        error_type: str | None,
        error_message: str | None,
        started_at: float,
        duration_s: float,
        records: Sequence[Rec],
    ) -> None:
        self.rows.append(
            (
                self.positions[pos],
                outcome,
                attempts,
                output,
                error_type,
                error_message,
                started_at,
                duration_s,
                list(records),
            )
        )


class _BatchEngine(_Engine):
    """The local engine, holding a cluster-wide lease for each case in flight."""

    limit: Any = None  # a distributed.Semaphore

    async def case(self, pos: int) -> None:
        if self.limit is None:
            await super().case(pos)
            return
        await self.limit.acquire()
        try:
            await super().case(pos)
        finally:
            await self.limit.release()


_BLOBS: dict[str, bytes] = {}  # per worker process: the plans of the runs in progress
_PLANS: dict[str, Plan] = {}
_PLANS_LOCK = threading.Lock()


class _PlanPlugin(WorkerPlugin):
    """Puts a run's plan on every worker, including workers that join or restart mid-run."""

    def __init__(self, token: str, blob: bytes) -> None:
        self.token = token
        self.blob = blob
        self.name = f"evalbook-plan-{token}"

    def setup(self, worker: Any) -> None:
        with _PLANS_LOCK:
            _BLOBS[self.token] = self.blob

    def teardown(self, worker: Any) -> None:
        with _PLANS_LOCK:
            _BLOBS.pop(self.token, None)
            _PLANS.pop(self.token, None)


def _plan_of(token: str) -> Plan:
    """The run's plan, unpickled once per worker process (errors surface in the batch)."""
    import cloudpickle

    with _PLANS_LOCK:
        plan = _PLANS.get(token)
        if plan is None:
            blob = _BLOBS.get(token)
            if blob is None:
                raise RuntimeError(f"the plan of run {token} is not installed on this worker")
            plan = _PLANS[token] = cloudpickle.loads(blob)
        return plan


async def run_batch(
    token: str,
    batch_blob: bytes,
    limit: str | None,
    concurrency: int,
    timeout: float | None,
    attempts: int,
) -> bytes:
    """Run one batch of cases on a Dask worker; returns its rows (see `Row`), cloudpickled."""
    import cloudpickle

    static = _plan_of(token)
    positions, ids, columns = cloudpickle.loads(batch_blob)
    plan = replace(static, case_ids=ids, columns=columns)
    out = _Collector(positions)
    threads = max(1, min(concurrency, len(positions)))
    pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="evalbook")
    engine = _BatchEngine(
        plan, out, concurrency=concurrency, timeout=timeout, attempts=attempts, pool=pool
    )
    engine.warned.update(b.scorer.name for b in plan.scorers)  # the driver warns, once
    if limit is not None:
        sem = _distributed().Semaphore(max_leases=concurrency, name=limit)
        await sem
        engine.limit = sem
    try:
        await engine.execute(range(len(positions)))
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        if engine.limit is not None:
            engine.limit.refresh_callback.stop()
    return _pack(out.rows)


# -- driver side -----------------------------------------------------------------------------


def _distributed() -> Any:
    """The `distributed` module (only partly typed, so it is handled as Any here)."""
    import distributed

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

    async def execute(self, engine: _Engine, positions: Iterable[int]) -> None:
        """Run `positions` on the cluster; results go to `engine.results`, sink and tick."""
        todo = list(positions)
        if not todo:
            return
        stop = threading.Event()
        loop = asyncio.get_running_loop()
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbook-dask") as ex:
            try:
                await loop.run_in_executor(ex, self._drive, engine, todo, stop)
            finally:
                stop.set()

    def _drive(self, engine: _Engine, todo: list[int], stop: threading.Event) -> None:
        if self.client is not None:
            self._stream(self.client, engine, todo, stop)
            return
        dist = _distributed()
        with (
            dist.LocalCluster(processes=True, dashboard_address=None) as cluster,
            dist.Client(cluster) as client,
        ):
            self._stream(client, engine, todo, stop)

    def _stream(self, client: Any, engine: _Engine, todo: list[int], stop: threading.Event) -> None:
        dist = _distributed()
        from distributed.scheduler import KilledWorker

        slots = sum(client.nthreads().values())
        size = batch_size(len(todo), slots, engine.concurrency)
        batches = partition(todo, size)
        blobs = [_pickle_batch(self.plan, b) for b in batches]  # all checked before any runs
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
        plugin = _PlanPlugin(token, self.plan_blob)
        client.register_plugin(plugin)
        options = (limit, engine.concurrency, engine.timeout, engine.attempts)
        done = [False] * engine.results.n_cases
        owner: dict[str, list[int]] = {}
        split: set[str] = set()

        def submit(batch: list[int], blob: bytes, single: bool = False) -> Any:
            future = client.submit(
                run_batch, token, blob, *options, key=f"evalbook-{uuid.uuid4().hex}"
            )
            owner[future.key] = batch
            if single:
                split.add(future.key)
            return future

        futures = [submit(b, blob) for b, blob in zip(batches, blobs, strict=True)]
        stream = dist.as_completed(futures)
        try:
            for future in stream:
                if stop.is_set():
                    break
                batch = owner.pop(future.key, None)
                if batch is None:  # already handled (a result Dask had to compute again)
                    continue
                try:
                    blob = future.result()
                except KilledWorker as exc:
                    left = [p for p in batch if not done[p]]
                    if future.key in split or len(left) <= 1:
                        self._apply(engine, [_killed(p, engine.plan, exc) for p in left], done)
                    else:  # find the case that kills its worker: one case per batch
                        for p in left:
                            stream.add(submit([p], _pickle_batch(self.plan, [p]), single=True))
                    continue
                except Exception as exc:
                    raise RuntimeError(
                        f"a batch of cases failed on the Dask cluster: {type(exc).__name__}: "
                        f"{exc}. Cases finished so far are kept; functions imported from your own "
                        "modules must be importable on the workers"
                    ) from exc
                import cloudpickle

                self._apply(engine, cloudpickle.loads(blob), done)
                future.release()
        finally:
            for future in futures:
                if not future.done():
                    future.cancel()
            try:
                client.unregister_worker_plugin(plugin.name)
            except Exception:  # e.g. the cluster is shutting down
                log.debug("could not remove worker plugin %s", plugin.name, exc_info=True)
            if sem is not None:
                try:
                    sem.close()
                except Exception:  # the scheduler drops it with the cluster anyway
                    log.debug("could not close semaphore %s", limit, exc_info=True)

    def _apply(self, engine: _Engine, rows: Iterable[Row], done: list[bool]) -> None:
        results, sink, tick = engine.results, engine.sink, engine.tick
        for pos, outcome, attempts, output, etype, emsg, started, duration, recs in rows:
            if done[pos]:
                continue  # a batch re-run after a worker died: every case counts once
            done[pos] = True
            if sink is not None:
                for attempt in range(1, attempts + 1):
                    sink.case_started(pos, attempt)
            results.set_case(pos, outcome, attempts, output, etype, emsg, started, duration, recs)
            if sink is not None:
                sink.case_ended(pos, results)
            self._warn(engine, pos, recs)
            if tick is not None:
                tick()

    def _warn(self, engine: _Engine, pos: int, recs: Sequence[Rec]) -> None:
        for j, rec in enumerate(recs):
            if rec.reason != "invalid_score":
                continue
            name = self.scorer_at.get(j)
            if name is None or name in engine.warned:
                continue
            engine.warned.add(name)
            log.warning(
                "scorer %r returned an invalid score for case %r: %s "
                "(logged once per scorer; every one is an error record in run.scores)",
                name,
                engine.results.case_ids[pos],
                rec.message,
            )


def _killed(pos: int, plan: Plan, exc: BaseException) -> Row:
    """A case whose worker died every time it ran it: errored, never lost."""
    emsg = f"its Dask worker died each time it ran this case ({exc})"
    recs = [error_rec("case_errored", f"KilledWorker: {emsg}")] * len(plan.definitions)
    return (pos, ERRORED, 1, None, "KilledWorker", emsg, time.time(), 0.0, recs)
