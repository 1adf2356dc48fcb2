"""Running a coroutine to completion from sync code: `eb.run` and `run.rescore`.

Outside an event loop this is `asyncio.run`; inside one (Jupyter) the coroutine runs on a
fresh loop in a worker thread, and Ctrl-C cancels it there.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Generic, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


class _Boxed(Generic[T]):
    """A finished run as a task result whose repr costs nothing.

    On Python 3.11, `asyncio.run` reprs its main task twice on the way out (through
    `signal.getsignal`), and a task's repr includes its result: a `Run` would render its
    summary for nobody, twice per run.
    """

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<evalbook run>"


async def _boxed(coro: Coroutine[Any, Any, T]) -> _Boxed[T]:
    return _Boxed(await coro)


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also inside a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_boxed(coro)).value
    started = threading.Event()
    handle: dict[str, Any] = {}

    async def main() -> T:
        handle["loop"], handle["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await coro

    ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalbook-run")
    future = ex.submit(asyncio.run, main())
    try:
        return future.result()
    except KeyboardInterrupt:
        # An interrupt reaches this thread only: cancel the run on its own loop and wait for it
        # to wind down, so the store records an incomplete, resumable run.
        if started.wait(5):
            handle["loop"].call_soon_threadsafe(handle["task"].cancel)
        with contextlib.suppress(BaseException):
            future.result(timeout=30)
        raise
    finally:
        ex.shutdown(wait=False)
