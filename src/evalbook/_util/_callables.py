"""The one answer to "is this callable async?" used by the runner and the judges."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

__all__ = ["is_async"]


def is_async(fn: Callable[..., Any]) -> bool:
    """True when calling `fn` gives a coroutine by declaration.

    Sees through `functools.partial` and decorators that set `__wrapped__` (`functools.wraps`),
    and looks at `__call__` of callable objects. A sync function that happens to return a
    coroutine is not async here; the runner awaits what it returns anyway.

    >>> async def f() -> None: ...
    >>> is_async(functools.partial(f)), is_async(len)
    (True, False)
    """
    seen: set[int] = set()
    obj: Any = fn
    while id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, functools.partial):
            obj = obj.func
            continue
        unwrapped = inspect.unwrap(obj)
        if unwrapped is not obj:
            obj = unwrapped
            continue
        if inspect.iscoroutinefunction(obj):
            return True
        if inspect.isfunction(obj) or inspect.ismethod(obj) or inspect.isbuiltin(obj):
            return False
        if isinstance(obj, type):  # a class is called to build an object, not awaited
            return False
        if getattr(type(obj), "__call__", None) is None:  # noqa: B004 - not a callable object
            return False
        obj = obj.__call__  # the bound method, to see through its decorators
    return False
