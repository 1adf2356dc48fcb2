"""State a run's batches share on a Dask cluster: a value on the scheduler, changed in turn.

A `Guarded` is a `distributed.Variable` changed only under a `distributed.Lock` of the same
name: a read-modify-write is four scheduler round trips (lock, read, write, unlock), and the
value is plain data (msgpack), so the scheduler needs no evalbook. The driver creates each
one when the run starts (`open_shared`) and removes it when the run ends (`close_shared`).

Its calls are synchronous, and may come from the worker's event loop (an async task or
client), which cannot wait for its own scheduler calls; so they go through a
`distributed.Client` of this process on a loop thread of its own (`own_client`), made on
first use and kept for the process's later runs. A cluster whose workers run in the
scheduler's process (`LocalCluster(processes=False)`, an `inproc://` address) shares one
event loop with the scheduler, which a blocking call would stall; there every worker is in
this process, so the value is kept in the process instead (`_LOCAL`), shared all the same.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

__all__ = ["Guarded", "close_shared", "dist", "forget_local", "open_shared", "own_client"]

# A caller may be the worker's event loop, which waits with it: a change waits this long for
# the lock, and a read this long for the value (it exists while the run does), then fails
# (its caller falls back to counting in the process).
WAIT_S = 10.0
READ_S = 2.0

_CLIENTS: dict[str, Any] = {}  # per process: scheduler address -> its own sync Client
_LOCAL: dict[str, Any] = {}  # the values of in-process clusters, by name
_LOCK = threading.Lock()


def dist() -> Any:
    """The `distributed` module (only partly typed, so it is handled as Any here)."""
    import distributed  # optional: the dask extra

    return distributed


def own_client(address: str) -> Any:
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

        with ThreadPoolExecutor(1, thread_name_prefix="evalbook-shared") as ex:
            client = _CLIENTS[address] = ex.submit(make).result()
        return client


class Guarded:
    """A value on the scheduler (named `name`) that callers change one at a time.

    `initial` is its value for an in-process cluster, where the first user sets it.
    """

    def __init__(self, address: str, name: str, initial: Any) -> None:
        self.address = address
        self.name = name
        self.local = address.startswith("inproc://")
        if self.local:
            with _LOCK:
                _LOCAL.setdefault(name, initial)
        self._parts: tuple[Any, Any, Any] | None = None  # client, lock, variable

    def parts(self) -> tuple[Any, Any, Any]:
        """This process's client, and the lock and variable bound to it (made once)."""
        if self._parts is None:
            client = own_client(self.address)
            distributed = dist()
            lock = distributed.Lock(self.name, scheduler_rpc=client.scheduler, loop=client.loop)
            self._parts = (client, lock, distributed.Variable(self.name, client=client))
        return self._parts

    async def _update(self, change: Callable[[Any], tuple[Any, Any]]) -> Any:
        _, lock, variable = self.parts()
        if not await lock.acquire(timeout=WAIT_S):
            raise TimeoutError(f"the lock {self.name} was not free within {WAIT_S:g}s")
        try:
            new, answer = change(await variable.get(timeout=READ_S))
            await variable.set(new)
            return answer
        finally:
            await lock.release()

    def update(self, change: Callable[[Any], tuple[Any, Any]]) -> Any:
        """Replace the value `v` by `change(v)[0]`, in turn; returns `change(v)[1]`."""
        if self.local:
            with _LOCK:
                _LOCAL[self.name], answer = change(_LOCAL[self.name])
                return answer
        return self.parts()[0].sync(self._update, change)

    def update_later(self, change: Callable[[Any], tuple[Any, Any]]) -> Future[Any]:
        """Like `update`, without waiting for the scheduler: a future of the answer."""
        if self.local:
            done: Future[Any] = Future()
            done.set_result(self.update(change))
            return done
        import asyncio

        client = self.parts()[0]
        return asyncio.run_coroutine_threadsafe(self._update(change), client.loop.asyncio_loop)

    def value(self) -> Any:
        """The value now (one scheduler round trip)."""
        if self.local:
            with _LOCK:
                return _LOCAL[self.name]
        client, _, variable = self.parts()

        async def get() -> Any:
            return await variable.get(timeout=READ_S)

        return client.sync(get)

    def close(self) -> None:
        """Stop this process's lease refreshing of the lock."""
        if self._parts is not None:
            callback = getattr(self._parts[1], "refresh_callback", None)
            if callback is not None:
                self._parts[0].loop.add_callback(callback.stop)


def forget_local(token: str) -> None:
    """Drop run `token`'s values kept in this process (an in-process cluster's)."""
    with _LOCK:
        for name in [n for n in _LOCAL if n.endswith(token)]:
            del _LOCAL[name]


def open_shared(client: Any, values: dict[str, Any]) -> None:
    """On the driver, before any batch: create each shared value `name: initial value`."""
    for name, value in values.items():
        dist().Variable(name, client=client).set(value)


def close_shared(client: Any, names: Iterable[str]) -> None:
    """On the driver, at the run's end: remove the values `names` (and their locks)."""
    import logging

    for name in names:
        try:
            dist().Variable(name, client=client).delete()
            client.sync(client.scheduler.semaphore_close, name=name)  # a no-op if no lock
        except Exception:  # the scheduler drops them with the cluster anyway
            logging.getLogger("evalbook").debug("could not remove %s", name, exc_info=True)
