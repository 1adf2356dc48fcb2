"""Where model calls report their usage: the sample's meter and the run's ledger.

The engine gives every sample a `Meter` and makes it the current one (a context variable)
while the sample's task and scorers run, and names the current source: `"task"` while the
task runs, the score's name while a scorer or judge runs. A client wrapped by
`eb.wrap_openai`, a judge built on `eb.openai_client` and `ctx.record_usage` all call
`current_meter()` and `Meter.record`; outside a run there is no meter and nothing is
recorded. The worker threads carry the context over (`_calls.Threads`), so sync tasks and
clients report like async ones.

The `Ledger` is the run's: its prices, its `max_cost=` budget and the cost recorded so far
(shared by every sample, so the budget holds across concurrent samples).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
from collections.abc import Collection, Mapping
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import Any

from .._model._results import Results
from .._model._tally import (
    TASK,
    InvalidUsage,
    Prices,
    Tally,
    amount,
    cost_of,
    sample_totals,
    token_counts,
)
from .._util._advice import advice
from .._util._warn import warn

__all__ = [
    "Ledger",
    "Meter",
    "Setting",
    "current_meter",
    "current_source",
    "known_cost",
    "metering",
    "source",
    "warn_usage",
]

log = logging.getLogger("evalbook")

_METER: ContextVar[Meter | None] = ContextVar("evalbook_meter", default=None)
_SOURCE: ContextVar[str] = ContextVar("evalbook_source", default=TASK)


def current_meter() -> Meter | None:
    """The meter of the sample running in this context; None outside a run."""
    return _METER.get()


def current_source() -> str:
    """The source calls are recorded under here: `"task"`, or the running score's name."""
    return _SOURCE.get()


class Setting:
    """Sets a context variable for a `with` block (a plain class: it runs per scorer call)."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: ContextVar[Any], value: Any) -> None:
        self._var, self._value = var, value

    def __enter__(self) -> Any:
        self._token = self._var.set(self._value)
        return self._value

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._token)


def source(name: str) -> AbstractContextManager[str]:
    """Record the calls made inside under `name` (a judge's or scorer's score name)."""
    return Setting(_SOURCE, name)


class Ledger:
    """A run's prices, budget and recorded cost; shared by all of its samples' meters.

    Example:
        >>> ledger = Ledger(prices={"m": (1.0, 2.0)}, max_cost=0.01)
        >>> meter = ledger.meter("c1", 1)
        >>> meter.record(input_tokens=10_000, output_tokens=0, model="m")
        >>> round(ledger.spent, 6), ledger.exhausted()
        (0.01, True)
    """

    def __init__(
        self, prices: Prices | None = None, max_cost: float | None = None, spent: float = 0.0
    ) -> None:
        self.prices = prices
        self.max_cost = max_cost
        self.spent = spent  # the run's recorded cost (samples kept by a resume included)
        self.unpriced: dict[str, int] = {}  # model -> calls with tokens but no price
        self.not_started = 0  # samples the budget kept from starting
        self._lock = threading.Lock()
        self._warned_invalid = False

    def meter(self, case_id: str, epoch: int) -> Meter:
        """A fresh meter for one sample."""
        return Meter(self, case_id, epoch)

    def exhausted(self) -> bool:
        """Whether the budget is reached: then no new sample starts."""
        return self.max_cost is not None and self.spent >= self.max_cost

    def spend(self, cost: float, model: str | None, priced: bool) -> None:
        """Add one call's cost (NaN: unknown; an unpriced model is counted by name)."""
        with self._lock:
            if cost == cost:
                self.spent += cost
            elif model is not None and not priced and self.prices is not None:
                self.unpriced[model] = self.unpriced.get(model, 0) + 1

    def note_invalid(self, case_id: str, message: str) -> None:
        """Warn (once per run) that a call reported usage that is not valid."""
        with self._lock:
            first, self._warned_invalid = not self._warned_invalid, True
        if first:
            log.warning(
                "invalid usage recorded for case %r: %s (that call's usage counts as unknown; "
                "logged once per run, every one is in run.usage()['invalid'])",
                case_id,
                message,
            )


def _model_name(value: object) -> str | None:
    """A model name as a plain str, None when not text: a str subclass's hooks (`__hash__`,
    `__eq__`, looked up in `prices=`) never run, nor an object's `__class__` (isinstance)."""
    return str.__str__(value) if issubclass(type(value), str) else None


class Meter:
    """One sample's usage, by source; `record` is safe from any thread."""

    __slots__ = ("_lock", "_seen", "case_id", "closed", "epoch", "ledger", "usage")

    def __init__(self, ledger: Ledger, case_id: str, epoch: int) -> None:
        self.ledger = ledger
        self.case_id = case_id
        self.epoch = epoch
        self.usage: dict[str, Tally] = {}
        self.closed = False  # the sample has finished: later calls are paid, not tallied
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def record(
        self,
        usage: object = None,
        *,
        input_tokens: object = None,
        output_tokens: object = None,
        cost: object = None,
        model: object = None,
        response_model: object = None,
        cached: bool = False,
        retries: int = 0,
        source: str | None = None,
    ) -> None:
        """Add one call. `usage` is a usage object or dict (read for tokens, see
        `token_counts`); explicit amounts win. A cached call costs 0 and uses 0 tokens.

        An amount that is not a finite number >= 0 makes that call's usage unknown (the
        call still counts), noted in the tally's `invalid` and warned of once per run;
        it never raises.
        """
        name = current_source() if source is None else source
        model, response_model = _model_name(model), _model_name(response_model)
        reported_in, reported_out = token_counts(usage)
        try:
            tin = amount("input_tokens", reported_in if input_tokens is None else input_tokens)
            tout = amount("output_tokens", reported_out if output_tokens is None else output_tokens)
            paid = amount("cost", cost)
            bad = None
        except InvalidUsage as exc:
            tin = tout = paid = None
            bad = str(exc)
        t_in = math.nan if tin is None else tin
        t_out = math.nan if tout is None else tout
        priced = False
        if cached:
            t_in = t_out = value = 0.0
        elif paid is not None:
            value = paid
        else:
            value = cost_of(self.ledger.prices, (model, response_model), t_in, t_out)
            # whether the model has a price, known tokens or not: a retried call that reported
            # no tokens is of unknown cost, not of an unpriced model
            prices = self.ledger.prices or {}
            priced = value == value or any(m in prices for m in (model, response_model) if m)
        if bad is None and not cached:
            self.ledger.spend(value, model or response_model, priced or paid is not None)
        with self._lock:
            if self.closed:  # a call left behind at a deadline: paid, but the sample is logged
                return
            tally = self.usage.get(name)
            if tally is None:
                tally = self.usage[name] = Tally()
            paid_now = value if bad is None else math.nan
            tally.add(t_in, t_out, paid_now, cached=cached, retries=retries)
            if bad is not None and tally.invalid is None:
                tally.invalid = bad
        if bad is not None:
            self.ledger.note_invalid(self.case_id, bad)

    def occurrence(self, key: str) -> int:
        """How many calls with this key this sample made before (0 for the first).

        A response cache keys the n-th identical request of a sample by n, so repeated
        calls (votes, deliberate re-asks) stay independent and a re-run replays them in turn.
        """
        with self._lock:
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
            return n

    def keep(self, usage: Mapping[str, Tally] | None, sources: Collection[str]) -> None:
        """Start from a source run's usage (a rescore): the task's and `sources`' tallies."""
        if usage:
            with self._lock:
                for name, tally in usage.items():
                    if name == TASK or name in sources:
                        self.usage[name] = dataclasses.replace(tally)

    def close(self) -> dict[str, Tally] | None:
        """End the sample: its usage (None when nothing was recorded)."""
        with self._lock:
            self.closed = True
            return dict(self.usage) if self.usage else None


def known_cost(results: Results) -> float:
    """The cost the samples of `results` have recorded (known amounts only)."""
    return math.fsum(c for u in results.usage if u for c in (sample_totals(u)[2],) if c == c)


def warn_usage(ledger: Ledger, name: str) -> None:
    """At a run's end: one warning if the budget stopped samples, one for unpriced models."""
    if ledger.not_started:
        warn(
            f"run {name!r} reached its budget max_cost=${ledger.max_cost:g} "
            f"(${ledger.spent:.4g} recorded): {ledger.not_started} sample(s) did not start "
            "and the run is incomplete; resume it with a higher budget, e.g. "
            + advice(
                "eb.run(..., resume=run, max_cost=...)",
                "evalbook run FILE --resume RUN --max-cost USD",
            ),
            RuntimeWarning,
        )
    if ledger.unpriced:
        models = ", ".join(f"{m!r} ({n} calls)" for m, n in sorted(ledger.unpriced.items()))
        warn(
            f"run {name!r}: no price for {models}; their cost is unknown (NaN), so cost totals "
            "cover the priced calls only; add them to prices={model: (usd_per_1M_in, "
            "usd_per_1M_out)}",
            RuntimeWarning,
        )


def metering(meter: Meter) -> AbstractContextManager[Meter]:
    """Make `meter` the current one inside (the engine, around a sample's task and scorers)."""
    return Setting(_METER, meter)
