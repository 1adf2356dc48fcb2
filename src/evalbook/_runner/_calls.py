"""Calling user functions: async ones on the event loop, sync ones in a worker thread, always.

A sync function never runs on the event loop, so a blocking call stalls only its own case and
`timeout=` holds at the deadline for sync and async tasks alike. A call that runs past its
deadline is abandoned, not stopped (Python cannot stop a thread): its thread finishes the call
and its result is dropped.

`Threads` is the run's worker pool. It makes a thread only when no idle one is free, so it
holds as many threads as calls are outstanding: at most `concurrency` live ones, plus timed-out
calls still running (a fixed cap would let abandoned calls starve the cases after them). Results
come back to the loop in batches: one loop wake-up carries every call that finished meanwhile,
which makes a thread hop cost a few microseconds instead of the tens that
`loop.run_in_executor` costs per call (benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PLAIN", "AttemptTimeout", "Threads", "call"]

# Results that are certainly not awaitable (checked first: inspect.isawaitable is slower).
PLAIN = (float, int, str, bytes, dict, list, tuple, type(None))

_Job = tuple["asyncio.Future[Any]", Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class AttemptTimeout(Exception):
    """The call ran past the run's `timeout` (a user's own TimeoutError is not this)."""


class Threads:
    """Worker threads for sync calls, bound to the running event loop (see the module doc)."""

    def __init__(self, name: str = "evalbook") -> None:
        self.loop = asyncio.get_running_loop()
        self.name = name
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0  # threads waiting for a job (a submit reserves one)
        self.threads = 0
        self.done: list[tuple[asyncio.Future[Any], bool, Any]] = []
        self.waking = False  # a delivery is scheduled on the loop
        self.closed = False

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Call `fn(*args, **kwargs)` in a worker thread; the future resolves on the loop."""
        future: asyncio.Future[Any] = self.loop.create_future()
        with self.lock:
            spawn = self.idle == 0
            if spawn:
                self.threads += 1
            else:
                self.idle -= 1
        if spawn:
            name = f"{self.name}-{self.threads}"
            threading.Thread(target=self._work, name=name, daemon=True).start()
        self.jobs.put((future, fn, args, kwargs))
        return future

    def _work(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:
                return
            future, fn, args, kwargs = job
            try:
                ok, value = True, fn(*args, **kwargs)
            except BaseException as exc:  # handed to the awaiting case, which sorts it out
                ok, value = False, exc
            del job, fn, args, kwargs
            with self.lock:
                self.done.append((future, ok, value))
                self.idle += 1
                wake, self.waking = not self.waking, True
            if wake:
                try:
                    self.loop.call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: nobody waits for this result
                    return

    def _deliver(self) -> None:
        with self.lock:
            done, self.done, self.waking = self.done, [], False
        for future, ok, value in done:
            if future.done():  # cancelled: the call timed out or the run was interrupted
                continue
            if ok:
                future.set_result(value)
            else:
                future.set_exception(value)

    def close(self) -> None:
        """Let every thread exit once it is idle (abandoned calls finish first)."""
        with self.lock:
            if self.closed:
                return
            self.closed, n = True, self.threads
        for _ in range(n):
            self.jobs.put(None)


async def call(
    fn: Callable[..., Any],
    is_async: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    threads: Threads,
    timeout: float | None = None,
) -> Any:
    """Call one user function for a case; past `timeout` seconds raise `AttemptTimeout`.

    A sync function that returns an awaitable has it awaited, within the same deadline.
    """
    if timeout is None:
        return await _call(fn, is_async, args, kwargs, threads)
    try:
        async with asyncio.timeout(timeout) as scope:
            return await _call(fn, is_async, args, kwargs, threads)
    except TimeoutError:
        if scope.expired():
            raise AttemptTimeout from None
        raise


async def _call(
    fn: Callable[..., Any],
    is_async: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    threads: Threads,
) -> Any:
    if is_async:
        return await fn(*args, **kwargs)
    result = await threads.submit(fn, *args, **kwargs)
    if not isinstance(result, PLAIN) and inspect.isawaitable(result):
        return await result  # a sync function that handed back a coroutine
    return result
