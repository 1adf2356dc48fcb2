"""Scale-out on Dask, the worker side: run one batch of cases with the local engine.

A batch runs on the worker's event loop with the local runner's `Engine` (sync functions in
threads), so every backend produces the same records; the engine hands its finished cases to a
sink (`_Rows`) like any run. `concurrency=` is a cluster-wide `distributed.Semaphore` whose
leases the batch's lanes hold (`_Leased`, an `Executor`). The batch returns one compact row per
case (see `Row`) and a `Report`, cloudpickled; the driver (`_driver.py`) applies them.

Usage is metered on the worker, with the run's prices (so costs are computed where the calls
were made) and carried in each row's `Finished.usage`. With `max_cost=`, the batch's ledger
(`_BatchLedger`) adds each priced call to the run's live total on the scheduler and reads it
before each sample, so no batch starts a sample once the run's budget is reached. Rate limits
of wrapped clients are cluster-wide (`_limits`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..._model._contract import safe_repr
from ..._model._results import Finished
from .._calls import Threads, close_abandoned
from .._engine import Engine, Executor, LocalExecutor
from .._limits import LIMITERS
from .._meter import Ledger
from .._options import RunOptions
from .._plan import Plan
from ._limits import cluster_limiters, drop_limiters
from ._shared import Guarded, dist

try:  # imported only on Dask workers and by a driver given executor=
    from distributed.diagnostics.plugin import WorkerPlugin
except ImportError:  # pragma: no cover - the driver reports the missing install
    WorkerPlugin = object  # type: ignore[assignment,misc]

__all__ = ["PlanPlugin", "Report", "Row", "run_batch", "spend_name"]

log = logging.getLogger("evalbook")

LEASE_WAIT_S = 1.0  # a lane waiting for a lease checks this often whether its batch is done
WATCH_S = 0.5  # a running batch checks this often whether the driver cancelled it

# One finished case: its position in the run and the case as the engine handed it over.
Row = tuple[int, Finished]
# What the batch's ledger saw besides its rows: calls by model with tokens but no price, and
# how many samples the budget kept from starting (the driver does not run those again).
Report = tuple[dict[str, int], int]


def spend_name(token: str) -> str:
    """The shared value (`Guarded`) holding run `token`'s live total cost: what a resume kept
    plus every priced call any batch has made."""
    return f"evalbook-spend-{token}"


class _BatchLedger(Ledger):
    """A batch's ledger: the run's prices, and its budget against the run's whole spend.

    `spent` is this batch's own recorded cost. With a budget, each priced call is added to the
    run's live total (`total`, four scheduler round trips) and each sample reads it before it
    starts (one), so the budget holds over the cluster as it does locally: past it, only the
    samples already running finish. If the scheduler cannot be asked, the batch falls back to
    `others` (the run's cost when the batch was submitted) plus its own.
    """

    def __init__(
        self, prices: Any, max_cost: float | None, others: float, total: Guarded | None
    ) -> None:
        super().__init__(prices, max_cost)
        self.others = others
        self.total = total if max_cost is not None else None
        self.known = others  # the run's live total, as last read or written

    def _lost(self, exc: BaseException) -> None:
        log.warning(
            "the run's live cost total on the Dask scheduler could not be asked (%s: %s); "
            "this batch counts its own cost against max_cost from now on",
            type(exc).__name__,
            exc,
        )
        self.total = None

    def spend(self, cost: float, model: str | None, priced: bool) -> None:
        super().spend(cost, model, priced)
        total = self.total
        if total is not None and cost == cost and cost > 0:
            try:
                now = float(total.update(lambda v: (float(v) + cost, float(v) + cost)))
                self.known = max(self.known, now)
            except Exception as exc:  # the call is recorded all the same
                self._lost(exc)

    def exhausted(self) -> bool:
        """Whether the run's budget is reached (read from the scheduler when possible)."""
        if self.max_cost is None:
            return False
        total = self.total
        if total is not None:
            try:
                self.known = max(self.known, float(total.value()))
                return self.known >= self.max_cost
            except Exception as exc:
                self._lost(exc)
        return max(self.known, self.others + self.spent) >= self.max_cost


def _pack(rows: list[Row], report: Report) -> bytes:
    """The batch's rows and report, cloudpickled; an output that cannot be pickled travels as
    its repr."""
    import cloudpickle  # optional: the dask extra

    try:
        return bytes(cloudpickle.dumps((rows, report)))
    except Exception:
        safe: list[Row] = []
        for row in rows:
            try:
                cloudpickle.dumps(row)
                safe.append(row)
            except Exception:
                pos, case = row
                recs = [
                    r._replace(metadata={"repr": safe_repr(r.metadata)})
                    if r.metadata is not None
                    else r
                    for r in case.records
                ]
                safe.append((pos, case._replace(output=safe_repr(case.output), records=recs)))
        return bytes(cloudpickle.dumps((safe, report)))


class _Rows:
    """The sink of a batch's engine on a worker: one compact row per finished case (`Row`)."""

    def __init__(self, positions: Sequence[int]) -> None:
        self.positions = list(positions)  # batch position -> the case's position in the run
        self.rows: list[Row] = []

    def case_started(self, start: tuple[int, int, int], /) -> None:
        """Nothing to do: the driver logs the attempts as the batch's rows arrive."""

    def case_ended(self, pos: int, case: Finished) -> None:
        self.rows.append((self.positions[pos], case._replace(records=list(case.records))))


class _Leased:
    """An `Executor` running a batch in lanes that each hold one cluster-wide lease.

    A case runs only in a lane, and a lane holds a lease of the run's `distributed.Semaphore`
    (`max_leases=concurrency`) until the batch has no case left to start, so cases in flight
    across the cluster never exceed `concurrency`. Lanes ramp up (each lease won asks for two
    more), which keeps scheduler round trips per lane, not per case.
    """

    def __init__(self, limit: Any, concurrency: int) -> None:
        self.limit = limit  # a distributed.Semaphore
        self.concurrency = concurrency

    async def execute(self, engine: Engine, positions: Sequence[int], /) -> None:
        """Run every case of `positions` (see `Executor`)."""
        queue = deque(positions)
        most = min(self.concurrency, len(queue))
        lanes: list[asyncio.Task[None]] = []

        async def lane() -> None:
            while queue:
                if await self.limit.acquire(timeout=LEASE_WAIT_S):
                    break
            else:
                return
            try:
                for _ in range(2):  # ramp up: 1, 3, 7, … lanes, while cases are waiting
                    if len(lanes) < most and len(queue) > 1:
                        lanes.append(asyncio.ensure_future(lane()))
                while queue:
                    await engine.case(queue.popleft())
            finally:
                await self.limit.release()

        lanes.append(asyncio.ensure_future(lane()))
        try:
            i = 0
            while i < len(lanes):  # lanes are added while earlier ones run
                await lanes[i]
                i += 1
        finally:
            for t in lanes:
                t.cancel()


_BLOBS: dict[str, bytes] = {}  # per worker process: the plans of the runs in progress
_PLANS: dict[str, Plan] = {}
_PLANS_LOCK = threading.Lock()


class PlanPlugin(WorkerPlugin):
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
        drop_limiters(self.token)  # the driver removes their state from the scheduler


def _plan_of(token: str) -> Plan:
    """The run's plan, unpickled once per worker process (errors surface in the batch)."""
    import cloudpickle  # optional: the dask extra

    with _PLANS_LOCK:
        plan = _PLANS.get(token)
        if plan is None:
            blob = _BLOBS.get(token)
            if blob is None:
                raise RuntimeError(f"the plan of run {token} is not installed on this worker")
            plan = _PLANS[token] = cloudpickle.loads(blob)
        return plan


async def _watch(key: str, work: asyncio.Future[None]) -> bool:
    """Cancel `work` once the batch's task is no longer wanted (the driver cancelled it).

    Dask does not interrupt a running async task whose key was cancelled; without this its
    cases would go on, holding the worker's thread slot and the run's leases.
    """
    worker = dist().get_worker()
    while not work.done():
        await asyncio.sleep(WATCH_S)
        ts = worker.state.tasks.get(key)
        if ts is None or ts.state not in ("executing", "long-running", "resumed"):
            work.cancel()
            return True
    return False


async def run_batch(
    key: str,
    token: str,
    batch_blob: bytes,
    limit: str | None,
    concurrency: int,
    timeout: float | None,
    attempts: int,
    scorer_timeout: float | None = None,
    prices: Any = None,
    max_cost: float | None = None,
    spent: float = 0.0,
    environment_errors: tuple[type[BaseException], ...] = (),
) -> bytes:
    """Run one batch of cases on a Dask worker; returns its rows (see `Row`) and `Report`,
    cloudpickled. `spent` is the cost the driver had recorded when it submitted the batch."""
    import cloudpickle  # optional: the dask extra

    static = _plan_of(token)
    positions, ids, columns, epoch_at = cloudpickle.loads(batch_blob)
    plan = replace(static, case_ids=ids, columns=columns)
    out = _Rows(positions)
    options = RunOptions(
        concurrency=concurrency,
        timeout=timeout,
        scorer_timeout=scorer_timeout,
        attempts=attempts,
        store=None,
        progress=False,
        max_cost=max_cost,
        prices=prices,
        environment_errors=environment_errors,
    )
    threads = Threads()
    address = dist().get_worker().scheduler.address
    total = Guarded(address, spend_name(token), spent) if max_cost is not None else None
    ledger = _BatchLedger(options.prices, max_cost, spent, total)
    engine = Engine(
        plan, options, threads, results=None, sink=out, epoch_at=epoch_at, ledger=ledger
    )
    engine.warned.update(b.scorer.name for b in plan.scorers)  # the driver warns, once
    sem: Any = None
    executor: Executor = LocalExecutor(concurrency)
    if limit is not None:
        import distributed  # optional: the dask extra

        sem = distributed.Semaphore(max_leases=concurrency, name=limit)  # type: ignore[no-untyped-call]
        await sem
        executor = _Leased(sem, concurrency)
    # the engine's tasks and worker threads copy this context: every wrapped client in the
    # batch asks the run's cluster-wide limiter of its client
    limiters = LIMITERS.set(cluster_limiters(token))
    try:
        work = asyncio.ensure_future(executor.execute(engine, range(len(positions))))
    finally:
        LIMITERS.reset(limiters)
    watch = asyncio.ensure_future(_watch(key, work))
    try:
        await work
    except asyncio.CancelledError:
        if watch.done() and not watch.cancelled() and watch.result():
            return _pack([], ({}, 0))  # cancelled by the driver: nobody reads this
        raise  # the worker is closing: Dask runs the batch again elsewhere
    finally:
        watch.cancel()
        if sem is not None:
            sem.refresh_callback.stop()
        await close_abandoned()  # a call abandoned at a deadline does not live on in the worker
    return _pack(out.rows, (dict(ledger.unpriced), ledger.not_started))
