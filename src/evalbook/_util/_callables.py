"""The one answer to "is this callable async?" used by the runner and the judges, and the
"did you mean" of a public function's keyword arguments."""

from __future__ import annotations

import difflib
import functools
import inspect
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar, cast

__all__ = ["is_async", "suggest_keywords"]

P = ParamSpec("P")
R = TypeVar("R")


def suggest_keywords(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn`, whose unknown keyword argument is the TypeError Python gives, with the name the
    user probably meant (`epoch=5` -> "did you mean epochs=?"); its signature is kept.

    Example:
        >>> @suggest_keywords
        ... def run(data, *, epochs=1): ...
        >>> run([], epoch=5)
        Traceback (most recent call last):
        TypeError: run() got an unexpected keyword argument 'epoch'; did you mean epochs=?
    """
    params = inspect.signature(fn).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return fn  # it takes any keyword: it says itself which it does not know
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    known = frozenset(names)

    def check(kwargs: dict[str, Any]) -> None:
        for key in kwargs:
            if key not in known:
                near = difflib.get_close_matches(key, names, n=1, cutoff=0.8)
                hint = f"; did you mean {near[0]}=?" if near else ""
                name = fn.__qualname__.removesuffix(".__init__")
                raise TypeError(f"{name}() got an unexpected keyword argument {key!r}{hint}")

    if inspect.iscoroutinefunction(fn):
        coro: Callable[P, Coroutine[Any, Any, Any]] = fn

        @functools.wraps(fn)
        async def checked_async(*args: P.args, **kwargs: P.kwargs) -> Any:
            check(kwargs)
            return await coro(*args, **kwargs)

        return cast(Callable[P, R], checked_async)

    @functools.wraps(fn)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        check(kwargs)
        return fn(*args, **kwargs)

    return checked


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
