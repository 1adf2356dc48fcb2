"""Cluster-wide rate limits on Dask: one bucket per (run, wrapped client) on the scheduler.

A wrapped client asks `limiter_for(client_id, rpm, tpm)` before each request; in a Dask
batch, `LIMITERS` holds `cluster_limiters(token)`, so the answer is a `ClusterLimiter`: the
same requests and tokens buckets as the local `LocalLimiter` (`_runner/_limits.Bucket`: a
burst of one second's worth, at least 1), but their state is kept in a
`distributed.Variable` on the scheduler and changed only under a `distributed.Lock`, so every
worker books against one budget. A run has one lock and one variable (a map from each
wrapped client to its buckets' levels), which the driver creates when the run starts
(`open_shared`) and removes when it ends (`close_shared`), as it does the concurrency
semaphore. Each booking is four scheduler round trips (lock, read, write, unlock); the state
is plain numbers (msgpack), so the scheduler needs no evalbook.

Why this and not a semaphore whose leases are released 60/rpm seconds after they are taken:
a lease is one request, so it cannot book tokens (`tokens_per_minute`, and the `settle`
correction after a reply); and the bucket gives the local limiter's burst rule exactly.

`acquire` is synchronous (the `Limiter` protocol) and may be called on the worker's event
loop (an async client), which cannot wait for its own scheduler calls; so the calls go through
a `distributed.Client` of this worker process running on its own loop thread, made on first
use. The bookings use the wall clock (`time.time()`), the one clock the workers share.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .._limits import Bucket, Limiter, LocalLimiter

__all__ = [
    "ClusterLimiter",
    "close_shared",
    "cluster_limiters",
    "dist",
    "drop_limiters",
    "open_shared",
    "shared_name",
]

log = logging.getLogger("evalbook")

LOCK_TIMEOUT_S = 60.0  # a booking waits this long for the bucket's lock before going local

_CLIENTS: dict[str, Any] = {}  # per worker process: scheduler address -> its own sync Client
_LIMITERS: dict[tuple[str, str, float | None, float | None], ClusterLimiter] = {}
_LOCK = threading.Lock()


def dist() -> Any:
    """The `distributed` module (only partly typed, so it is handled as Any here)."""
    import distributed  # optional: the dask extra

    return distributed


def shared_name(token: str) -> str:
    """The name of the lock and the variable holding the rate limits of run `token`."""
    return f"evalbook-rate-{token}"


def _own_client(address: str) -> Any:
    """This process's Client of the scheduler at `address`, on a loop thread of its own.

    It is made in a fresh thread (no running event loop there), so that it starts its own
    loop even when first asked for from the worker's loop.
    """
    with _LOCK:
        client = _CLIENTS.get(address)
        if client is not None and client.status == "running":
            return client

        def make() -> Any:
            return dist().Client(address, set_as_default=False, asynchronous=False)

        with ThreadPoolExecutor(1, thread_name_prefix="evalbook-limits") as ex:
            client = _CLIENTS[address] = ex.submit(make).result()
        return client


def _bucket(per_minute: float | None, state: list[float] | None, now: float) -> Bucket | None:
    if per_minute is None:
        return None
    bucket = Bucket(per_minute, now=now)
    if state is not None:
        bucket.level, bucket.stamp = state
    return bucket


def _state(bucket: Bucket | None) -> list[float] | None:
    return None if bucket is None else [bucket.level, bucket.stamp]


class ClusterLimiter:
    """Requests and tokens per minute over every worker of a run (see the module's doc).

    If the scheduler cannot be reached, bookings fall back to a limiter of this process
    (logged once): the limit then holds per worker process, not over the cluster.
    """

    def __init__(
        self, address: str, token: str, client_id: str, rpm: float | None, tpm: float | None
    ) -> None:
        self.address = address
        self.name = shared_name(token)
        self.key = f"{client_id} {rpm} {tpm}"  # one client's buckets in the run's map
        self.rpm = rpm
        self.tpm = tpm
        self._parts: tuple[Any, Any, Any] | None = None  # client, lock, variable
        self._fallback: LocalLimiter | None = None

    def _shared(self) -> tuple[Any, Any, Any]:
        if self._parts is None:
            client = _own_client(self.address)
            distributed = dist()
            lock = distributed.Lock(self.name, scheduler_rpc=client.scheduler, loop=client.loop)
            self._parts = (client, lock, distributed.Variable(self.name, client=client))
        return self._parts

    async def _book(self, requests: float, tokens: float) -> float:
        _, lock, variable = self._shared()
        if not await lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise TimeoutError(f"the rate limit's lock {self.name} was not free")
        try:
            states = await variable.get(timeout=LOCK_TIMEOUT_S)  # set when the run started
            state = states.get(self.key) or [None, None]  # None: this client's first booking
            now = time.time()
            req = _bucket(self.rpm, state[0], now)
            tok = _bucket(self.tpm, state[1], now)
            wait = 0.0
            if req is not None and requests:
                wait = req.take(requests, now=now)
            if tok is not None:
                if requests:
                    wait = max(wait, tok.take(tokens, now=now))
                else:
                    tok.give(-tokens, now=now)  # a correction: tokens more (or back, if < 0)
            states[self.key] = [_state(req), _state(tok)]
            await variable.set(states)
            return wait
        finally:
            await lock.release()

    def _local(self, exc: BaseException) -> LocalLimiter:
        if self._fallback is None:
            log.warning(
                "rate limit %s: the Dask scheduler could not be asked (%s: %s); this worker "
                "process limits its own requests from now on, so the limit holds per "
                "process, not over the cluster",
                self.name,
                type(exc).__name__,
                exc,
            )
            self._fallback = LocalLimiter(self.rpm, self.tpm)
        return self._fallback

    def acquire(self, tokens: float) -> float:
        """Book one request and `tokens` in the run's shared buckets; the seconds to wait."""
        if self._fallback is not None:
            return self._fallback.acquire(tokens)
        try:
            client = self._shared()[0]
            wait: float = client.sync(self._book, 1.0, tokens)
            return wait
        except Exception as exc:  # never fail the user's call for the limiter's sake
            return self._local(exc).acquire(tokens)

    def settle(self, tokens: float) -> None:
        """Book `tokens` more (real minus estimated) without waiting for the scheduler."""
        if self.tpm is None or tokens != tokens or not tokens:
            return
        if self._fallback is not None:
            self._fallback.settle(tokens)
            return
        try:
            client = self._shared()[0]
            future = asyncio.run_coroutine_threadsafe(
                self._book(0.0, tokens), client.loop.asyncio_loop
            )
            future.add_done_callback(_log_failure)
        except Exception as exc:
            self._local(exc).settle(tokens)

    def close(self) -> None:
        """Stop this process's lease refreshing of the bucket's lock."""
        if self._parts is not None:
            callback = getattr(self._parts[1], "refresh_callback", None)
            if callback is not None:
                self._parts[0].loop.add_callback(callback.stop)


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("a rate limit's token correction was lost", exc_info=future.exception())


def cluster_limiters(token: str) -> Callable[[str, float | None, float | None], Limiter]:
    """The `LIMITERS` factory of run `token` in a batch on this worker (cached per process)."""
    address = dist().get_worker().scheduler.address

    def factory(client_id: str, rpm: float | None, tpm: float | None) -> Limiter:
        key = (token, client_id, rpm, tpm)
        with _LOCK:
            limiter = _LIMITERS.get(key)
            if limiter is None:
                limiter = _LIMITERS[key] = ClusterLimiter(address, token, client_id, rpm, tpm)
            return limiter

    return factory


def drop_limiters(token: str) -> None:
    """Forget run `token`'s limiters in this process (its plan is being removed)."""
    with _LOCK:
        gone = [k for k in _LIMITERS if k[0] == token]
        limiters = [_LIMITERS.pop(k) for k in gone]
    for limiter in limiters:
        limiter.close()


def open_shared(client: Any, token: str) -> None:
    """On the driver, before any batch: run `token`'s rate limits, none booked yet."""
    dist().Variable(shared_name(token), client=client).set({})


def close_shared(client: Any, names: Iterable[str]) -> None:
    """On the driver, at the run's end: remove the variables (and locks) `names`."""
    for name in names:
        try:
            dist().Variable(name, client=client).delete()
            client.sync(client.scheduler.semaphore_close, name=name)  # a no-op if no lock
        except Exception:  # the scheduler drops them with the cluster anyway
            log.debug("could not remove %s from the scheduler", name, exc_info=True)
