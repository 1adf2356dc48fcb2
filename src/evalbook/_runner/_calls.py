"""Calling user functions: async ones on the event loop, sync ones in a worker thread, always.

A sync function never runs on the event loop, so a blocking call stalls only its own case and
`timeout=` holds at the deadline for sync and async tasks alike. A call that runs past its
deadline is abandoned, not stopped (Python cannot stop a thread): its thread finishes the call
and its result is dropped.

The worker threads are the process's, shared by every run (`_POOL`). A thread is made only when
no idle one is free, so there are as many as calls were ever outstanding at once: at most
`concurrency` live ones per run, plus timed-out calls still running (a fixed cap would let
abandoned calls starve the cases after them). Results come back to each run's loop through its
`Inbox`, in batches: one loop wake-up carries every call that finished meanwhile, so a thread
hop costs a few microseconds where `loop.run_in_executor` costs tens (benchmarks/README.md).

A call with a deadline runs as a task of its own (`within`), so that the deadline holds even for
a coroutine that swallows its cancellation: at the deadline the task is cancelled once and left
behind, not awaited (as a sync call's thread is). An abandoned task is kept referenced until it
ends and its late exception is retrieved; when the run ends, the coroutines of abandoned tasks
that still run are closed (`close_abandoned`), so that the loop can close without waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import os
import queue
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["PLAIN", "AttemptTimeout", "Started", "Threads", "call", "close_abandoned", "within"]

T = TypeVar("T")

# Results that are certainly not awaitable (checked first: inspect.isawaitable is slower).
PLAIN = (float, int, str, bytes, dict, list, tuple, type(None))


class AttemptTimeout(Exception):
    """The call ran past the run's `timeout` (a user's own TimeoutError is not this).

    `started` says whether the call began at all: a sync call waits for a worker thread,
    and one that never got one did not take "longer than the timeout" itself.
    """

    def __init__(self, started: bool = True) -> None:
        super().__init__(started)
        self.started = started


class _Carried(Exception):
    """A GeneratorExit from a worker-thread call, on its way to the awaiting case.

    A future's exception is thrown into the awaiting task's coroutine, and a thrown
    GeneratorExit closes every coroutine in the chain instead of reaching the case's handler
    (PEP 380): it travels wrapped and is raised again, plainly, by `call`.
    """

    def __init__(self, exc: BaseException) -> None:
        super().__init__()
        self.exc = exc


class Started:
    """Set by the worker thread when it begins a call (one flag per tracked call)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = False


class Inbox:
    """Where worker-thread calls come back to one event loop, in batches."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.done: list[tuple[asyncio.Future[Any], bool, Any]] = []
        self.waking = False  # a delivery is scheduled on the loop

    def put(self, future: asyncio.Future[Any], ok: bool, value: Any) -> None:
        """From a worker thread: hand a result over; wakes the loop once per batch."""
        with self.lock:
            self.done.append((future, ok, value))
            wake, self.waking = not self.waking, True
        if wake:
            # a closed loop raises RuntimeError: nobody waits for this result any more
            with contextlib.suppress(RuntimeError):
                self.loop.call_soon_threadsafe(self._deliver)

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


_Job = tuple[
    Inbox,
    "asyncio.Future[Any]",
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
    "Started | None",
    contextvars.Context,
]


class _Pool:
    """The process's worker threads (see the module docstring)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """No threads yet (also in a forked child, which has none of its parent's threads)."""
        self.jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.idle = 0  # threads waiting for a job, less the jobs already handed to them
        self.threads = 0

    def put(self, job: _Job) -> None:
        with self.lock:
            spawn = self.idle == 0
            if spawn:
                self.threads += 1
            else:
                self.idle -= 1
        if spawn:  # daemon: an abandoned call never keeps the interpreter from exiting
            name = f"evalbook-{self.threads}"
            threading.Thread(target=self._work, name=name, daemon=True).start()
        self.jobs.put(job)

    def _work(self) -> None:
        while True:
            inbox, future, fn, args, kwargs, started, context = self.jobs.get()
            if started is not None:
                started.value = True
            try:  # in the caller's context: the sample's usage meter and source go along
                ok, value = True, context.run(fn, *args, **kwargs)
            except StopIteration as exc:  # a future cannot hold it: as a coroutine would (PEP 479)
                ok, value = False, RuntimeError(f"raised StopIteration: {exc!r}")
                value.__cause__ = exc
            except GeneratorExit as exc:  # see _Carried
                ok, value = False, _Carried(exc)
            except BaseException as exc:  # handed to the awaiting case, which sorts it out
                ok, value = False, exc
            del fn, args, kwargs, context  # an idle thread holds on to no case's data
            with self.lock:
                self.idle += 1
            inbox.put(future, ok, value)
            del inbox, future, value


_POOL = _Pool()
# A forked child has none of the parent's threads: it starts with a pool of its own.
os.register_at_fork(after_in_child=_POOL.reset)


class Threads:
    """A run's way to the worker threads: `await threads.submit(fn, *args)`."""

    def __init__(self) -> None:
        self.inbox = Inbox(asyncio.get_running_loop())

    def submit(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> asyncio.Future[Any]:
        """Call `fn(*args, **kwargs)` in a worker thread; the future resolves on the loop."""
        return self.submit_tracked(fn, args, kwargs, None)

    def submit_tracked(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        started: Started | None,
    ) -> asyncio.Future[Any]:
        """`submit`, and set `started.value` once a worker thread begins the call."""
        future: asyncio.Future[Any] = self.inbox.loop.create_future()
        _POOL.put((self.inbox, future, fn, args, kwargs, started, contextvars.copy_context()))
        return future

    async def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`await submit(fn, ...)`, with a GeneratorExit from `fn` raised plainly (`_Carried`)."""
        try:
            return await self.submit_tracked(fn, args, kwargs, None)
        except _Carried as carried:
            raise carried.exc from None


# Tasks abandoned at a deadline that have not ended yet: referenced here so that none is
# destroyed while pending (asyncio keeps only weak references to tasks).
_ABANDONED: set[asyncio.Task[Any]] = set()


def _ended(task: asyncio.Task[Any]) -> None:
    """An abandoned task ended: forget it, and retrieve its exception (nobody awaits it)."""
    _ABANDONED.discard(task)
    if not task.cancelled():
        task.exception()


def _abandon(task: asyncio.Task[Any]) -> None:
    """Cancel `task` once and leave it behind: nobody waits for it to end."""
    if task.done():  # ended meanwhile: only its exception is left to retrieve
        _ended(task)
        return
    task.cancel()
    _ABANDONED.add(task)
    task.add_done_callback(_ended)


async def within(
    awaitable: Awaitable[T], timeout: float | None, started: Started | None = None
) -> T:
    """Await `awaitable` for at most `timeout` seconds (None: no limit); past it raise
    `AttemptTimeout`.

    It runs as a task of its own, which is cancelled and abandoned at the deadline and when
    the awaiting task is cancelled itself (an outer deadline, Ctrl-C): neither waits for
    whatever the awaitable does with its cancellation. Its result or exception is handed on
    as it is.
    """
    task = asyncio.ensure_future(awaitable)
    loop = task.get_loop()
    # a plain future to wait on (what asyncio.wait does, without its sets): cancelling this
    # task cancels the waiter, never the call, and the deadline only wakes this task up
    waiter: asyncio.Future[None] = loop.create_future()

    def wake(_: object = None) -> None:
        if not waiter.done():
            waiter.set_result(None)

    task.add_done_callback(wake)
    deadline = None if timeout is None else loop.call_later(timeout, wake)
    try:
        await waiter
    except BaseException:  # this task is cancelled (Ctrl-C, an outer deadline): let it go
        _abandon(task)
        raise
    finally:
        task.remove_done_callback(wake)
        if deadline is not None:
            deadline.cancel()
    if not task.done():
        _abandon(task)
        raise AttemptTimeout(True if started is None else started.value)
    return task.result()


async def close_abandoned() -> int:
    """Close the coroutines of the tasks abandoned on this loop that still run; how many.

    Awaited when a run ends: its loop may be about to close (`asyncio.run` then cancels every
    task left and waits for each to end, which a coroutine that swallows its cancellation
    never does). Closing runs the coroutine's `finally` blocks; its task then ends at its next
    step, which this waits for (so that no task ends during `asyncio.run`'s shutdown). A
    coroutine that ignores even GeneratorExit is left as it is.
    """
    loop = asyncio.get_running_loop()
    closing: list[asyncio.Task[Any]] = []
    for task in [t for t in _ABANDONED if t.get_loop() is loop and not t.done()]:
        coro = task.get_coro()
        try:
            if inspect.iscoroutine(coro):
                coro.close()
        except Exception:  # its finally block raised, or it ignored GeneratorExit: left as is
            continue
        task.cancel()  # wakes the task, which finds its coroutine closed and ends
        closing.append(task)
    if closing:
        # one step each; the bound only guards against a future that refuses to be cancelled
        await asyncio.wait(closing, timeout=1.0)
    return len(closing)


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
    if timeout is not None:
        started = Started()
        return await within(_call(fn, is_async, args, kwargs, threads, started), timeout, started)
    return await _call(fn, is_async, args, kwargs, threads, None)


async def _call(
    fn: Callable[..., Any],
    is_async: bool,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    threads: Threads,
    started: Started | None,
) -> Any:
    if is_async:
        if started is not None:
            started.value = True
        return await fn(*args, **kwargs)
    try:
        result = await threads.submit_tracked(fn, args, kwargs, started)
    except _Carried as carried:
        raise carried.exc from None
    if not isinstance(result, PLAIN) and inspect.isawaitable(result):
        return await result  # a sync function that handed back a coroutine
    return result
