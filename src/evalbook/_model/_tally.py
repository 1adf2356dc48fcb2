"""What a sample's model calls used: tokens, cost, calls, per source (docs/cost.md).

A sample's usage is a `{source: Tally}` map: `"task"` for the task's calls and a judge's
(or scorer's) score name for its calls. Amounts add up over the calls that reported them;
an amount no call reported stays NaN (unknown), never 0. Nothing here does I/O or asyncio:
the runner's meter (`_runner/_meter.py`) fills tallies, the store writes them, the tables
read them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from .._util._text import visible
from ._contract import safe_repr

__all__ = [
    "TASK",
    "InvalidUsage",
    "Prices",
    "Tally",
    "amount",
    "check_prices",
    "cost_of",
    "sample_totals",
    "tally_from_json",
    "token_counts",
    "usage_from_json",
    "usage_json",
]

TASK = "task"  # the source of the task's own calls
Prices = Mapping[str, tuple[float, float]]  # model -> (USD per 1M input tokens, per 1M output)
# The largest amount one call may report: 2**53, the largest count a float holds exactly.
# Sums of such amounts stay finite (an infinite total could not be stored or read back).
_MAX_AMOUNT = float(2**53)
_AMOUNTS = ("input_tokens", "output_tokens", "cost")
_COUNTS = ("calls", "cached_calls", "retries")


class InvalidUsage(ValueError):
    """A usage amount that is not a finite number in [0, 2**53] (the call's usage is unknown)."""


def amount(name: str, value: object) -> float | None:
    """A reported amount as a float; None when not reported; `InvalidUsage` when invalid.

    Example:
        >>> amount("input_tokens", 12), amount("cost", None)
        (12.0, None)
        >>> amount("cost", -1)
        Traceback (most recent call last):
        ...
        evalbook._model._tally.InvalidUsage: cost must be a finite number >= 0, got -1
    """
    if value is None:
        return None
    try:
        # int and float are reals (the ABC check is the slow part of a call's record)
        if (
            type(value) is not float
            and type(value) is not int
            and (isinstance(value, bool) or not isinstance(value, numbers.Real))
        ):
            raise TypeError
        number = float(value)
    except Exception:  # not a real, or one whose isinstance/float() fails (10**400, a hook)
        raise InvalidUsage(
            f"{name} must be a finite number >= 0, got {_shown(value)} ({_type_name(value)})"
        ) from None
    if not math.isfinite(number) or number < 0:
        raise InvalidUsage(f"{name} must be a finite number >= 0, got {_shown(value)}")
    if number > _MAX_AMOUNT:
        raise InvalidUsage(
            f"{name} must be a finite number >= 0 and at most 2**53, got {_shown(value)}"
        )
    return number


def _shown(value: object) -> str:
    """The value in a message, escaped: a user's repr may hold controls or lone surrogates,
    and the message is stored in the run log (UTF-8) and shown in views."""
    return visible(safe_repr(value))


def _type_name(value: object) -> str:
    try:
        return type(value).__name__
    except Exception:  # a hostile metaclass
        return "object"


def _reader(usage: object) -> Callable[[str], object]:
    """How to read a field of a usage dict or object (one isinstance check per usage)."""
    try:
        mapping = isinstance(usage, Mapping)
    except Exception:  # a hostile __class__: nothing can be read
        return lambda name: None

    def read(name: str) -> object:
        try:
            return usage.get(name) if mapping else getattr(usage, name, None)  # type: ignore[attr-defined]
        except Exception:  # a hostile mapping or property: the amount is unknown
            return None

    return read


def token_counts(usage: object) -> tuple[object, object]:
    """(input, output) tokens of an OpenAI-style usage object or dict, as reported.

    Chat completions say `prompt_tokens`/`completion_tokens`, the Responses API and others
    `input_tokens`/`output_tokens`; the first name present wins.

    Example:
        >>> token_counts({"prompt_tokens": 10, "completion_tokens": 5})
        (10, 5)
    """
    if usage is None:
        return None, None
    read = _reader(usage)
    found_in = read("prompt_tokens")
    found_out = read("completion_tokens")
    if found_in is None:
        found_in = read("input_tokens")
    if found_out is None:
        found_out = read("output_tokens")
    return found_in, found_out


def check_prices(prices: object) -> dict[str, tuple[float, float]] | None:
    """`prices=` checked before any case runs: `{model: (usd_per_1M_in, usd_per_1M_out)}`.

    Example:
        >>> check_prices({"gpt-4o-mini": (0.15, 0.6)})
        {'gpt-4o-mini': (0.15, 0.6)}
    """
    if prices is None:
        return None
    how = (
        "prices= takes {'model-name': (usd_per_1M_input_tokens, usd_per_1M_output_tokens)}, "
        "e.g. prices={'gpt-4o-mini': (0.15, 0.60)}"
    )
    if not isinstance(prices, Mapping):
        raise ConfigurationError(f"{how}; got {safe_repr(prices)}")
    out: dict[str, tuple[float, float]] = {}
    for model, price in prices.items():
        if not isinstance(model, str) or not model:
            raise ConfigurationError(f"{how}; a key is {safe_repr(model)}, not a model name")
        if isinstance(price, str | bytes) or not isinstance(price, tuple | list) or len(price) != 2:
            raise ConfigurationError(f"{how}; the price of {model!r} is {safe_repr(price)}")
        try:
            pair = (amount("input price", price[0]), amount("output price", price[1]))
        except InvalidUsage as exc:
            raise ConfigurationError(f"{how}; the price of {model!r}: {exc}") from None
        if pair[0] is None or pair[1] is None:
            raise ConfigurationError(f"{how}; the price of {model!r} is {safe_repr(price)}")
        out[model] = (pair[0], pair[1])
    return out


def cost_of(
    prices: Prices | None, models: tuple[str | None, ...], tokens_in: float, tokens_out: float
) -> float:
    """The cost of a call from its tokens, by the first of `models` with a price; else NaN.

    Example:
        >>> cost_of({"m": (1.0, 2.0)}, ("m",), 1_000_000, 500_000)
        2.0
    """
    if prices is None or tokens_in != tokens_in or tokens_out != tokens_out:
        return math.nan
    for model in models:
        if model is not None and model in prices:
            p_in, p_out = prices[model]
            return (tokens_in * p_in + tokens_out * p_out) / 1e6
    return math.nan


def _add(a: float, b: float) -> float:
    """NaN + known = known: amounts add up over the calls that reported them."""
    if a != a:
        return b
    return a if b != b else a + b


@dataclass(slots=True)
class Tally:
    """One source's usage within one sample. NaN amounts are unknown (never read as 0).

    `invalid` holds the first message of a call whose usage was refused (the call still
    counts in `calls`; its amounts stay unknown).
    """

    calls: int = 0
    cached_calls: int = 0
    input_tokens: float = math.nan
    output_tokens: float = math.nan
    cost: float = math.nan
    retries: int = 0
    invalid: str | None = None

    def add(
        self,
        tokens_in: float,
        tokens_out: float,
        cost: float,
        *,
        cached: bool = False,
        retries: int = 0,
        calls: int = 1,
    ) -> None:
        """Add one call (amounts NaN when unknown)."""
        self.calls += calls
        self.cached_calls += int(cached)
        self.retries += retries
        self.input_tokens = _add(self.input_tokens, tokens_in)
        self.output_tokens = _add(self.output_tokens, tokens_out)
        self.cost = _add(self.cost, cost)

    def to_json(self) -> dict[str, Any]:
        """The tally as the store writes it: unknown amounts left out, counts when not 0."""
        out: dict[str, Any] = {"calls": self.calls}
        if self.cached_calls:
            out["cached_calls"] = self.cached_calls
        if self.retries:
            out["retries"] = self.retries
        for name in _AMOUNTS:
            v = getattr(self, name)
            if v == v:
                out[name] = int(v) if name != "cost" and float(v).is_integer() else v
        if self.invalid is not None:
            out["invalid"] = self.invalid
        return out


def tally_from_json(data: object) -> Tally:
    """A stored tally; ValueError for anything `Tally.to_json` does not write.

    Example:
        >>> tally_from_json({"calls": 2, "input_tokens": 30})
        Tally(calls=2, cached_calls=0, input_tokens=30.0, output_tokens=nan, cost=nan, retries=0, invalid=None)
    """  # noqa: E501
    if not isinstance(data, dict):
        raise ValueError(f"a usage tally is {type(data).__name__}, not an object")
    unknown = set(data) - {*_COUNTS, *_AMOUNTS, "invalid"}
    if unknown:
        raise ValueError(f"a usage tally has unknown keys {sorted(unknown)}")
    t = Tally()
    for name in _COUNTS:
        v = data.get(name, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"usage {name} is {v!r}, not a count")
        setattr(t, name, v)
    for name in _AMOUNTS:
        try:
            v = amount(name, data.get(name))
        except InvalidUsage as exc:
            raise ValueError(f"usage {exc}") from None
        setattr(t, name, math.nan if v is None else v)
    invalid = data.get("invalid")
    if invalid is not None and not isinstance(invalid, str):
        raise ValueError(f"usage 'invalid' is {type(invalid).__name__}, not text")
    t.invalid = invalid
    if t.cached_calls > t.calls:
        raise ValueError(f"usage has {t.cached_calls} cached calls of {t.calls}")
    return t


def usage_json(usage: Mapping[str, Tally]) -> dict[str, Any]:
    """A sample's usage as the store writes it (`{source: tally}`)."""
    return {source: t.to_json() for source, t in usage.items()}


def usage_from_json(data: object) -> dict[str, Tally]:
    """A sample's stored usage; ValueError for anything `usage_json` does not write."""
    if not isinstance(data, dict) or not data:
        raise ValueError("usage is not an object of sources")
    out: dict[str, Tally] = {}
    for source, tally in data.items():
        if not isinstance(source, str) or not source:
            raise ValueError(f"a usage source is {source!r}, not a name")
        out[source] = tally_from_json(tally)
    return out


def sample_totals(usage: Mapping[str, Tally] | None) -> tuple[float, float, float]:
    """(input_tokens, output_tokens, cost) of a sample over its sources; NaN where unknown."""
    tin = tout = cost = math.nan
    if usage:
        for t in usage.values():
            tin, tout, cost = (
                _add(tin, t.input_tokens),
                _add(tout, t.output_tokens),
                _add(cost, t.cost),
            )
    return tin, tout, cost
