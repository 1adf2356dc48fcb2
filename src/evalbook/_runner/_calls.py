"""Calling user functions: async ones on the loop, sync ones in worker threads.

Sync functions start in the run's thread pool, so blocking SDK calls never stall the event loop
and `concurrency` holds for them. A sync function that has proved itself fast is then called
inline, which saves the thread hop (tens of microseconds) on cheap scorers:

- its first call runs in a thread while the calls that arrive meanwhile wait for it (at most
  `FIRST_WAIT_S`, so one hanging call cannot stall the run); if it took under `FAST_S`, the
  function goes inline at once;
- otherwise it stays in threads until `PROBE_CALLS` calls are timed, and goes inline if their
  median is under `FAST_S` (the median: a thread can be preempted mid-call);
- if `SLOW_STREAK` inline calls in a row take longer than `SLOW_S`, the function goes back to
  the thread pool for the rest of the run (one slow call is not enough: another thread holding
  the GIL can stall a fast call for a few milliseconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any

__all__ = ["AttemptTimeout", "Caller"]

PROBE_CALLS = 16
FAST_S = 200e-6
SLOW_S = 2e-3
SLOW_STREAK = 3
FIRST_WAIT_S = 0.05
# Results that are certainly not awaitable (checked first: inspect.isawaitable is slower).
_PLAIN = (float, int, str, bytes, dict, list, tuple, type(None))


class AttemptTimeout(Exception):
    """The call ran past the run's `timeout` (a user's own TimeoutError is not this)."""


async def _bounded(awaitable: Any, timeout: float | None) -> Any:
    if timeout is None:
        return await awaitable
    try:
        async with asyncio.timeout(timeout) as scope:
            return await awaitable
    except TimeoutError:
        if scope.expired():
            raise AttemptTimeout from None
        raise


def _timed(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    t0 = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - t0


class Caller:
    """Calls one user function, choosing where it runs (see the module docstring)."""

    __slots__ = ("first", "fn", "inline", "is_async", "pinned", "pool", "probes", "slow_streak")

    def __init__(self, fn: Callable[..., Any], is_async: bool, pool: Executor) -> None:
        self.fn = fn
        self.is_async = is_async
        self.pool = pool
        self.inline = False
        self.pinned = False  # True once the probes or a slow inline call chose threads for good
        self.probes: list[float] = []
        self.slow_streak = 0
        self.first: asyncio.Event | None = None  # set once the first call has returned

    async def __call__(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], timeout: float | None = None
    ) -> Any:
        if self.is_async:
            return await _bounded(self.fn(*args, **kwargs), timeout)
        if self.first is not None and not self.first.is_set():
            with contextlib.suppress(TimeoutError):  # the first call is being timed: wait a bit
                await asyncio.wait_for(self.first.wait(), FIRST_WAIT_S)
        if self.inline:
            t0 = time.perf_counter()
            result = self.fn(*args, **kwargs)
            elapsed = time.perf_counter() - t0
            if elapsed > SLOW_S:
                self.slow_streak += 1
                if self.slow_streak >= SLOW_STREAK:
                    self.inline, self.pinned = False, True
            else:
                self.slow_streak = 0
            if timeout is not None and elapsed > timeout:
                raise AttemptTimeout
        else:
            first = self.first is None
            if first:
                self.first = asyncio.Event()
            loop = asyncio.get_running_loop()
            future = loop.run_in_executor(self.pool, _timed, self.fn, args, kwargs)
            try:
                result, elapsed = await _bounded(future, timeout)
            finally:
                if first:
                    self.first.set()  # type: ignore[union-attr]
            if not self.pinned and not self.inline:
                self.probes.append(elapsed)
                if first and elapsed < FAST_S:
                    self.inline = True
                elif len(self.probes) >= PROBE_CALLS:
                    self.inline = sorted(self.probes)[len(self.probes) // 2] < FAST_S
                    self.pinned = not self.inline
        if not isinstance(result, _PLAIN) and inspect.isawaitable(result):
            # a sync function that handed back a coroutine
            return await _bounded(result, timeout)
        return result
