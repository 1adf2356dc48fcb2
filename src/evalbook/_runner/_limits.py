"""Rate limits shared by every call of one wrapped client: requests and tokens per minute.

A `Limiter` hands out reservations: `acquire(tokens)` books one request and an estimate of
its tokens and answers how many seconds the caller must wait before sending it (sync callers
`time.sleep`, async ones `await asyncio.sleep`); `settle(delta)` corrects the token booking
once the reply says what the call really used (`delta` = real minus estimated, < 0 gives
tokens back). Bookings are made in arrival order under one lock, so threads and event loops
share one budget.

`limiter_for(client_id, rpm, tpm)` gives the limiter of a client: the factory in `LIMITERS`
when one is set (a Dask worker sets a cluster-wide one), else a process-wide `LocalLimiter`
per `client_id` (copies of one wrapped client, pickled or not, share it). See docs/cost.md.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Protocol

__all__ = ["LIMITERS", "Bucket", "Limiter", "LocalLimiter", "limiter_for"]


class Limiter(Protocol):
    """What a wrapped client asks before each request (and each retry)."""

    def acquire(self, tokens: float) -> float:
        """Reserve one request and `tokens`; the seconds to wait before sending it."""
        ...

    def settle(self, tokens: float) -> None:
        """Book `tokens` more (real minus estimated; may be < 0) once the reply is known."""
        ...


LIMITERS: ContextVar[Callable[[str, float | None, float | None], Limiter] | None] = ContextVar(
    "evalbook_limiters", default=None
)


class Bucket:
    """A token bucket refilled at `per_minute / 60` a second, holding one second's worth.

    The level may go below zero: a reservation is always granted and the debt says how long
    its holder waits, so callers are served in the order they asked and a request larger
    than the bucket (a long prompt under a small `tokens_per_minute`) waits its share
    instead of never fitting.

    Example:
        >>> b = Bucket(60, now=0.0)  # one a second, a burst of 1
        >>> b.take(1, now=0.0), b.take(1, now=0.0), b.take(1, now=0.5)
        (0.0, 1.0, 1.5)
    """

    __slots__ = ("capacity", "level", "rate", "stamp")

    def __init__(self, per_minute: float, *, now: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)  # the burst: one second's worth, at least 1
        self.level = self.capacity
        self.stamp = now

    def _refill(self, now: float) -> None:
        if now > self.stamp:
            self.level = min(self.capacity, self.level + (now - self.stamp) * self.rate)
            self.stamp = now

    def take(self, amount: float, *, now: float) -> float:
        """Book `amount`; the seconds until the bucket has covered it."""
        self._refill(now)
        self.level -= amount
        return 0.0 if self.level >= 0 else -self.level / self.rate

    def give(self, amount: float, *, now: float) -> None:
        """Book `-amount` (a correction after the fact; `amount` may be < 0)."""
        self._refill(now)
        self.level = min(self.capacity, self.level + amount)


class LocalLimiter:
    """Requests and tokens per minute within this process (thread-safe; any event loop).

    Example:
        >>> limiter = LocalLimiter(rpm=120, tpm=None)  # 2 a second, a burst of 2
        >>> [round(limiter.acquire(0), 1) for _ in range(4)]
        [0.0, 0.0, 0.5, 1.0]
    """

    def __init__(
        self, rpm: float | None, tpm: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._clock = clock
        now = clock()
        self._requests = None if rpm is None else Bucket(rpm, now=now)
        self._tokens = None if tpm is None else Bucket(tpm, now=now)
        self._lock = threading.Lock()

    def acquire(self, tokens: float) -> float:
        """Reserve one request and `tokens`; the seconds to wait (the longer of the two)."""
        with self._lock:
            now = self._clock()
            wait = 0.0
            if self._requests is not None:
                wait = self._requests.take(1.0, now=now)
            if self._tokens is not None:
                wait = max(wait, self._tokens.take(tokens, now=now))
            return wait

    def settle(self, tokens: float) -> None:
        """Book the difference between the real and the estimated tokens of a call."""
        if self._tokens is not None and tokens == tokens:
            with self._lock:
                self._tokens.give(-tokens, now=self._clock())


_LOCAL: dict[tuple[str, float | None, float | None], LocalLimiter] = {}
_LOCAL_LOCK = threading.Lock()


def limiter_for(client_id: str, rpm: float | None, tpm: float | None) -> Limiter:
    """The limiter of the wrapped client `client_id` (made on first use, then shared)."""
    factory = LIMITERS.get()
    if factory is not None:
        return factory(client_id, rpm, tpm)
    key = (client_id, rpm, tpm)
    with _LOCAL_LOCK:
        limiter = _LOCAL.get(key)
        if limiter is None:
            limiter = _LOCAL[key] = LocalLimiter(rpm, tpm)
        return limiter
