"""Where sync functions run: threads first, inline once proven fast, back to threads if slow."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from evalbook._runner._calls import PROBE_CALLS, SLOW_S, SLOW_STREAK, Caller


def _calls(fn: Any, n: int, concurrency: int = 1) -> tuple[Caller, list[str]]:
    pool = ThreadPoolExecutor(max_workers=8)
    caller = Caller(fn, False, pool)
    names: list[str] = []

    async def main() -> None:
        async def one(i: int) -> None:
            names.append(await caller((i,), {}))

        for start in range(0, n, concurrency):
            await asyncio.gather(*(one(i) for i in range(start, min(n, start + concurrency))))

    asyncio.run(main())
    pool.shutdown()
    return caller, names


def where(i: int) -> str:
    return threading.current_thread().name


def test_a_fast_function_goes_inline_after_its_first_call() -> None:
    caller, names = _calls(where, 20)
    assert caller.inline and not caller.pinned
    assert names[0] != threading.main_thread().name
    assert set(names[1:]) == {threading.main_thread().name}


def test_a_slow_function_stays_in_threads() -> None:
    def slow(i: int) -> str:
        time.sleep(0.003)
        return where(i)

    caller, names = _calls(slow, PROBE_CALLS + 4, concurrency=4)
    assert caller.pinned and not caller.inline
    assert threading.main_thread().name not in names


def test_a_function_that_turns_slow_goes_back_to_threads() -> None:
    def sometimes(i: int) -> str:
        if i >= 5:
            time.sleep(SLOW_S * 2)
        return where(i)

    caller, names = _calls(sometimes, 5 + SLOW_STREAK + 5)
    assert caller.pinned and not caller.inline
    main = threading.main_thread().name
    assert names[1 : 5 + SLOW_STREAK] == [main] * (4 + SLOW_STREAK)
    assert main not in names[5 + SLOW_STREAK :]
