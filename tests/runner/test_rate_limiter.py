"""The local rate limiter (`_runner/_limits.py`) on a fake clock: burst, rate, tokens, settle."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

import pytest

# the limiter on a fake clock: its timing cannot be driven through a client
from evalbook._runner._limits import (
    LIMITERS,
    Bucket,
    Limiter,
    LocalLimiter,
    limiter_for,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def schedule(limiter: LocalLimiter, clock: Clock, n: int, tokens: float = 0.0) -> list[float]:
    """When each of n back-to-back callers may send (each waits what acquire says)."""
    return [clock.now + limiter.acquire(tokens) for _ in range(n)]


def test_the_burst_is_one_second_worth_then_the_rate() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=150, tpm=None, clock=clock)  # 2.5 a second
    sends = schedule(limiter, clock, 24)
    assert sends[:3] == [0.0, 0.0, pytest.approx(0.2)]  # a burst of 2.5 requests
    gaps = [b - a for a, b in itertools.pairwise(sends[2:])]
    assert gaps == pytest.approx([0.4] * 21)
    assert (len(sends) - 1) / (sends[-1] - sends[0]) <= 2.5 * 1.1


def test_a_slow_rate_still_allows_one_request_at_once() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=6, tpm=None, clock=clock)  # one every 10 s; burst at least 1
    assert schedule(limiter, clock, 3) == [0.0, pytest.approx(10.0), pytest.approx(20.0)]


def test_time_refills_up_to_the_burst_only() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=120, tpm=None, clock=clock)
    schedule(limiter, clock, 2)
    clock.now = 3600.0  # an idle hour earns no more than one second's worth
    assert [limiter.acquire(0) for _ in range(3)] == [0.0, 0.0, pytest.approx(0.5)]


def test_tokens_wait_and_settle_corrects_the_estimate() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=None, tpm=600, clock=clock)  # 10 tokens a second, burst 10
    assert limiter.acquire(10) == 0.0
    assert limiter.acquire(20) == pytest.approx(2.0)  # larger than the burst: waits its share
    limiter.settle(-20)  # the call used nothing (an error reply): its tokens come back
    assert limiter.acquire(5) == pytest.approx(0.5)  # back at 0, not at -20: 5 wait 0.5 s
    limiter.settle(30)  # a call used 30 more than estimated: later callers wait for it
    assert limiter.acquire(0) == pytest.approx(3.5)


def test_the_longer_of_the_two_waits_is_taken() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=60, tpm=60, clock=clock)  # 1 request and 1 token a second
    assert limiter.acquire(1) == 0.0
    assert limiter.acquire(5) == pytest.approx(5.0)  # the tokens, not the request, bind


def test_bucket_doctest_numbers() -> None:
    b = Bucket(60, now=0.0)
    assert (b.take(1, now=0.0), b.take(1, now=0.0), b.take(1, now=0.5)) == (0.0, 1.0, 1.5)


def test_threads_share_one_budget() -> None:
    clock = Clock()
    limiter = LocalLimiter(rpm=60, tpm=None, clock=clock)
    waits: list[float] = []
    lock = threading.Lock()

    def ask() -> None:
        for _ in range(25):
            w = limiter.acquire(0)
            with lock:
                waits.append(w)

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # 100 bookings at one instant, one a second: every slot 0..99 s given out exactly once
    assert sorted(round(w) for w in waits) == list(range(100))


def test_limiter_for_shares_per_client_id_and_honours_the_factory() -> None:
    a = limiter_for("client-a", 60.0, None)
    assert limiter_for("client-a", 60.0, None) is a
    assert limiter_for("client-b", 60.0, None) is not a
    made: list[tuple[str, float | None, float | None]] = []

    def factory(client_id: str, rpm: float | None, tpm: float | None) -> Limiter:
        made.append((client_id, rpm, tpm))
        return a

    factory_t: Callable[[str, float | None, float | None], Limiter] = factory
    token = LIMITERS.set(factory_t)
    try:
        assert limiter_for("client-c", 1.0, 2.0) is a
    finally:
        LIMITERS.reset(token)
    assert made == [("client-c", 1.0, 2.0)]
