"""Cluster-wide rate limits on Dask: one set of buckets per (run, wrapped client).

A wrapped client asks `limiter_for(client_id, rpm, tpm)` before each request; in a Dask
batch, `LIMITERS` holds `cluster_limiters(token)`, so the answer is a `ClusterLimiter`: the
same requests and tokens buckets as the local `LocalLimiter` (`_runner/_limits.Bucket`: a
burst of one second's worth, at least 1), but their levels are kept on the scheduler, in the
run's `Guarded` map (`_shared.py`: a `distributed.Variable` changed under a
`distributed.Lock`) from each wrapped client to its buckets, so every worker books against
one budget. A booking is four scheduler round trips; a `settle` correction is booked without
waiting. The bookings use the wall clock (`time.time()`), the one clock the workers share.

Why this and not a semaphore whose leases are released 60/rpm seconds after they are taken:
a lease is one request, so it cannot book tokens (`tokens_per_minute`, and the `settle`
correction after a reply); and the buckets give the local limiter's burst rule exactly.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from .._limits import Bucket, Limiter, LocalLimiter
from ._shared import Guarded, dist, forget_local

__all__ = ["ClusterLimiter", "cluster_limiters", "drop_limiters", "limits_name"]

log = logging.getLogger("evalbook")

_LIMITERS: dict[tuple[str, str, float | None, float | None], ClusterLimiter] = {}
_LOCK = threading.Lock()

State = list[list[float] | None]  # [requests [level, stamp], tokens [level, stamp]]


def limits_name(token: str) -> str:
    """The name of the shared map holding the rate limits of run `token`."""
    return f"evalbook-rate-{token}"


def _bucket(per_minute: float | None, state: list[float] | None, now: float) -> Bucket | None:
    if per_minute is None:
        return None
    bucket = Bucket(per_minute, now=now)
    if state is not None:
        bucket.level, bucket.stamp = state
    return bucket


def _state(bucket: Bucket | None) -> list[float] | None:
    return None if bucket is None else [bucket.level, bucket.stamp]


class ClusterLimiter:
    """Requests and tokens per minute over every worker of a run (see the module's doc).

    If the scheduler cannot be asked, bookings fall back to a limiter of this process
    (logged once): the limit then holds per worker process, not over the cluster.
    """

    def __init__(
        self, address: str, token: str, client_id: str, rpm: float | None, tpm: float | None
    ) -> None:
        self.shared = Guarded(address, limits_name(token), {})
        self.key = f"{client_id} {rpm} {tpm}"  # one client's buckets in the run's map
        self.rpm = rpm
        self.tpm = tpm
        self._fallback: LocalLimiter | None = None

    def _book(self, requests: float, tokens: float) -> Callable[[Any], tuple[Any, float]]:
        """The change of the run's map that books `requests` and `tokens`, and its wait."""

        def change(states: dict[str, State]) -> tuple[dict[str, State], float]:
            state = states.get(self.key) or [None, None]  # None: this client's first booking
            now = time.time()
            req = _bucket(self.rpm, state[0], now)
            tok = _bucket(self.tpm, state[1], now)
            wait = 0.0
            if req is not None and requests:
                wait = req.take(requests, now=now)
            if tok is not None:
                if requests:
                    wait = max(wait, tok.take(tokens, now=now))
                else:
                    tok.give(-tokens, now=now)  # a correction: tokens more (or back, if < 0)
            states[self.key] = [_state(req), _state(tok)]
            return states, wait

        return change

    def _local(self, exc: BaseException) -> LocalLimiter:
        if self._fallback is None:
            log.warning(
                "rate limit %s: the Dask scheduler could not be asked (%s: %s); this worker "
                "process limits its own requests from now on, so the limit holds per "
                "process, not over the cluster",
                self.shared.name,
                type(exc).__name__,
                exc,
            )
            self._fallback = LocalLimiter(self.rpm, self.tpm)
        return self._fallback

    def acquire(self, tokens: float) -> float:
        """Book one request and `tokens` in the run's shared buckets; the seconds to wait."""
        if self._fallback is not None:
            return self._fallback.acquire(tokens)
        try:
            wait: float = self.shared.update(self._book(1.0, tokens))
            return wait
        except Exception as exc:  # never fail the user's call for the limiter's sake
            return self._local(exc).acquire(tokens)

    def settle(self, tokens: float) -> None:
        """Book `tokens` more (real minus estimated) without waiting for the scheduler."""
        if self.tpm is None or tokens != tokens or not tokens:
            return
        if self._fallback is not None:
            self._fallback.settle(tokens)
            return
        try:
            self.shared.update_later(self._book(0.0, tokens)).add_done_callback(_log_failure)
        except Exception as exc:
            self._local(exc).settle(tokens)


def _log_failure(future: Any) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.debug("a rate limit's token correction was lost", exc_info=future.exception())


def cluster_limiters(token: str) -> Callable[[str, float | None, float | None], Limiter]:
    """The `LIMITERS` factory of run `token` in a batch on this worker (cached per process)."""
    address = dist().get_worker().scheduler.address

    def factory(client_id: str, rpm: float | None, tpm: float | None) -> Limiter:
        key = (token, client_id, rpm, tpm)
        with _LOCK:
            limiter = _LIMITERS.get(key)
            if limiter is None:
                limiter = _LIMITERS[key] = ClusterLimiter(address, token, client_id, rpm, tpm)
            return limiter

    return factory


def drop_limiters(token: str) -> None:
    """Forget run `token`'s limiters in this process (its plan is being removed)."""
    with _LOCK:
        gone = [k for k in _LIMITERS if k[0] == token]
        limiters = [_LIMITERS.pop(k) for k in gone]
    for limiter in limiters:
        limiter.shared.close()
    forget_local(token)
