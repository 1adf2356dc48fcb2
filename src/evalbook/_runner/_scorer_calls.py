"""Calling one scorer for a sample: its records, or the awaitable a sync scorer handed back.

The engine (`_engine`) places the records; these functions only call and interpret.
`is_sample_error` decides whether an exception from user code is the sample's or the run's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, cast

from .._errors import SkipScore
from .._model._contract import (
    Rec,
    error_rec,
    handed_back_awaitable,
    interpret,
    raised_rec,
    safe_repr,
    skip_rec,
)
from ._binding import call_args
from ._meter import source
from ._plan import BoundScorer

__all__ = ["INVALID", "awaitable_again", "is_sample_error", "scored_async", "scored_sync"]

INVALID = "invalid_score"  # the reason of a record whose scorer returned no valid score


def _source_of(bound: BoundScorer) -> str:
    """The usage source of a scorer's calls: its score's name (for several, the names
    joined by commas: their calls cannot be told apart)."""
    return ",".join(d.name for d in bound.scorer.definitions)


def scored_sync(bound: BoundScorer, values: dict[str, Any]) -> list[Rec] | Awaitable[Any]:
    """One sync scorer's records for a case, or the awaitable it handed back."""
    defs = bound.scorer.definitions
    try:
        args, kwargs = call_args(bound.binding, values)
        with source(_source_of(bound)):
            result = bound.scorer.fn(*args, **kwargs)
    except SkipScore as exc:
        return [skip_rec(exc)] * len(defs)
    except BaseException as exc:
        if not is_sample_error(exc):
            raise
        return [raised_rec(exc)] * len(defs)
    if handed_back_awaitable(result):  # never raises, even for a hostile __class__
        return cast(Awaitable[Any], result)
    return interpret(result, defs)


async def scored_async(
    bound: BoundScorer, values: dict[str, Any], pending: Awaitable[Any] | None = None
) -> list[Rec]:
    """One async scorer's records for a case (or those of a coroutine a sync one returned).

    The result is awaited once: a sync wrapper of async code (`lambda output: judge(...)`)
    is scored, an awaitable that gives another awaitable is `invalid_score`.
    """
    defs = bound.scorer.definitions
    try:
        with source(_source_of(bound)):  # its calls are recorded under its score's name
            if pending is None:
                args, kwargs = call_args(bound.binding, values)
                pending = bound.scorer.fn(*args, **kwargs)
            result = await pending
    except SkipScore as exc:
        return [skip_rec(exc)] * len(defs)
    except BaseException as exc:
        if not is_sample_error(exc):
            raise
        return [raised_rec(exc)] * len(defs)
    if handed_back_awaitable(result):
        return [error_rec(INVALID, awaitable_again("scorer", result))] * len(defs)
    return interpret(result, defs)


def awaitable_again(who: str, value: object) -> str:
    """Why an awaited result that is itself awaitable is refused (evalbook awaits once)."""
    return (
        f"invalid result {safe_repr(value)}: the {who}'s result was awaited and gave another "
        f"awaitable; evalbook awaits a {who}'s result once: await the inner one in the {who}"
    )


def is_sample_error(exc: BaseException) -> bool:
    """Whether an exception from user code is that sample's error rather than the run's stop.

    KeyboardInterrupt and SystemExit stop the run; so does a CancelledError when this task is
    being cancelled (Ctrl-C, a deadline). Any other BaseException (a custom one, GeneratorExit,
    a CancelledError that user code raised itself) is the sample's error, not the run's.
    """
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        return False
    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # in a worker thread: no task here is being cancelled
            return True
        return task is None or task.cancelling() == 0
    return True
