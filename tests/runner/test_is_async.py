"""The one async detection: what counts as an async callable."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pytest

# an async callable run as sync is still awaited: only the unit tells the two apart
from evalbook._util._callables import is_async


async def coro(x: int = 0) -> int:
    return x


def plain(x: int = 0) -> int:
    return x


class AsyncCallable:
    async def __call__(self) -> None:
        return None


class SyncCallable:
    def __call__(self) -> None:
        return None


@functools.wraps(coro)
def wrapped(*args: Any) -> Any:
    return coro(*args)


class Methods:
    async def amethod(self) -> None:
        return None

    def method(self) -> None:
        return None


@pytest.mark.parametrize(
    "fn",
    [
        coro,
        functools.partial(coro, 1),
        functools.partial(functools.partial(coro), 1),
        wrapped,
        AsyncCallable(),
        functools.partial(AsyncCallable()),
        Methods().amethod,
    ],
)
def test_async_callables_are_seen_as_async(fn: Callable[..., Any]) -> None:
    assert is_async(fn)


@pytest.mark.parametrize(
    "fn",
    [plain, functools.partial(plain, 1), SyncCallable(), Methods().method, len, AsyncCallable],
)
def test_sync_callables_are_not(fn: Callable[..., Any]) -> None:
    assert not is_async(fn)
