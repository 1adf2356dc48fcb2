"""The score contract: the one place that turns what a scorer produced into records.

A record is a plain tuple (see `Rec`) so that the hot path allocates nothing heavier.
"""

from __future__ import annotations

import inspect
import json
import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any, NamedTuple

import numpy as np

from .._errors import SkipScore
from .._util._text import safe_str
from ._definitions import Grader, ScoreDefinition
from ._origin import GRADER, TASK, failure_origin

__all__ = [
    "ERROR",
    "SCORED",
    "STATUSES",
    "UNSCORED",
    "InvalidScore",
    "Rec",
    "Score",
    "ScoreError",
    "Unscored",
    "error_rec",
    "handed_back_awaitable",
    "interpret",
    "record_of",
    "safe_repr",
    "validate_on_scale",
    "validate_value",
]

SCORED, UNSCORED, ERROR = 0, 1, 2
STATUSES = ("scored", "unscored", "error")


class Rec(NamedTuple):
    """One (case, score) result before it is placed into the run's columns."""

    status: int
    value: float = math.nan
    reason: str | None = None
    message: str | None = None
    rationale: str | None = None
    metadata: dict[str, Any] | None = None
    grader: Grader | None = None
    # an error record's origin (`_origin.ORIGINS`); None: not said yet (the engine fills it)
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class Score:
    """A score value with its rationale, a display label and metadata.

    Example:
        >>> import evalbook as eb
        >>> eb.Score(0.5, rationale="half the facts are right").value
        0.5
    """

    value: Any
    rationale: str | None = None
    label: str | None = None
    metadata: Mapping[str, Any] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class Unscored:
    """Return this from a scorer to leave the (case, score) unscored with a reason.

    Example:
        >>> import evalbook as eb
        >>> eb.Unscored("no_reference").reason
        'no_reference'
    """

    reason: str


class InvalidScore(ValueError):
    """A value broke the score contract; the message names it with repr()."""


_MAX_REPR = 200


def safe_repr(value: object) -> str:
    """repr() that never raises and never floods a table."""
    try:
        text = repr(value)
    except Exception:  # a user's __repr__ may raise anything
        text = f"<{type(value).__name__} object with a failing __repr__>"
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 1] + "…"
    return text


def _invalid(value: object, why: str, low: float = 0, high: float = 1) -> InvalidScore:
    return InvalidScore(
        f"invalid score {safe_repr(value)} ({type(value).__name__}): {why}; "
        f"a score must be a finite real number in [{low}, {high}]"
    )


def validate_value(value: object) -> float:
    """Check one score value against the contract and return it as a float.

    Valid: ints 0/1, floats, numpy reals, `Decimal` and `Fraction` in [0, 1]. Everything else
    (bools, numpy bools, strings, None, NaN, inf, out-of-range numbers, containers, other
    objects) raises `InvalidScore` whose message names the value with `repr()`.

    Example:
        >>> validate_value(1)
        1.0
        >>> try:
        ...     validate_value("0.5")
        ... except InvalidScore as exc:
        ...     print(str(exc)[:60])
        invalid score '0.5' (str): strings are not scores, even nume
    """
    kind = type(value)
    if kind is float:  # fast path; NaN fails both comparisons
        if 0.0 <= value <= 1.0:  # type: ignore[operator,unused-ignore]
            return value  # type: ignore[return-value]
    elif kind is int and (value == 0 or value == 1):
        return float(value)  # type: ignore[arg-type,unused-ignore]
    return validate_on_scale(value, 0, 1)


def validate_on_scale(value: object, low: float, high: float) -> float:
    """Check a raw value against the closed scale [low, high], by the rules of `validate_value`.

    Judges use it for their declared raw scale (e.g. 0–100) before normalising.

    Example:
        >>> validate_on_scale(95, 0, 100)
        95.0
    """
    if isinstance(value, bool | np.bool_):
        raise _invalid(value, "booleans are not scores", low, high)
    if isinstance(value, str | bytes):
        raise _invalid(value, "strings are not scores, even numeric ones", low, high)
    if not isinstance(value, numbers.Real | Decimal):
        raise _invalid(value, "not a real number", low, high)
    kind: type = type(value)
    if kind is int or kind is Fraction or kind is Decimal:
        # exact types, compared exactly: a Fraction just above 1 is out although float() is 1.0
        try:
            finite = value.is_finite() if isinstance(value, Decimal) else True
            in_range = finite and low <= value <= high  # type: ignore[operator]
            number = float(value) if in_range else math.nan
        except (ArithmeticError, TypeError, ValueError):
            raise _invalid(value, "not a comparable real number", low, high) from None
    else:
        # Anything else (numpy reals, subclasses, registered reals) is converted once, and
        # that float alone is checked and stored: a value whose __float__ or comparisons lie
        # cannot pass one check and store another number.
        try:
            number = float(value)
        except Exception as exc:  # a user's __float__ may raise anything
            why = f"float() of it raised {type(exc).__name__}"
            raise _invalid(value, why, low, high) from None
        finite = math.isfinite(number)
        in_range = finite and low <= number <= high
    if not finite:
        raise _invalid(value, "not finite", low, high)
    if not in_range:
        raise _invalid(value, "out of range", low, high)
    return number


def error_rec(reason: str, message: str, **extra: Any) -> Rec:
    """An error record with a code (`reason`) and a readable message."""
    return Rec(ERROR, math.nan, reason, message, **extra)


# `json.dumps(data, default=safe_repr, ensure_ascii=False)`, its encoder made once (a dumps
# call with options builds one each time: a third of the round trip for a small dict)
_METADATA = json.JSONEncoder(default=safe_repr, ensure_ascii=False)


class _BadMetadata(Exception):
    """Metadata that cannot be kept; the message says why."""


def _json_safe(metadata: object) -> dict[str, Any]:
    """`metadata` as plain JSON data (a fresh copy), or `_BadMetadata` naming why not.

    Values JSON cannot hold are stored by their `repr()`; what cannot be read or encoded at
    all (not a mapping, iteration that raises, a container holding itself, an int beyond
    Python's 4,300-digit limit) is refused, so that record alone becomes an error.
    """
    if not isinstance(metadata, Mapping):
        raise _BadMetadata(f"metadata must be a mapping, not {type(metadata).__name__}")
    try:
        data = {safe_str(k): v for k, v in metadata.items()}
    except Exception as exc:  # a user's Mapping may raise anything while iterated
        raise _BadMetadata(f"reading the metadata raised {type(exc).__name__}") from None
    try:
        # one round trip: plain data only, nothing of the user's objects kept; raw characters
        # (ensure_ascii=False), else two lone surrogates would come back joined into one
        text = _METADATA.encode(data)
        loaded: dict[str, Any] = json.loads(text)
    except (ValueError, TypeError, RecursionError) as exc:
        raise _BadMetadata(
            f"the metadata cannot be stored as JSON ({type(exc).__name__}: {safe_str(exc)})"
        ) from None
    return loaded


@dataclass(frozen=True, slots=True)
class ScoreError:
    """An error a scorer reports with its own code (judges: `invalid_judge_output`, ...).

    Internal: `record_of` turns it into an error record carrying the code and message.
    """

    code: str
    message: str
    rationale: str | None = None
    metadata: Mapping[str, Any] | None = None
    origin: str | None = None  # None: the grader's (a judge says `provider` for its client's)


def record_of(result: object, grader: Grader | None = None) -> Rec:
    """Interpret one value (number, Score, Unscored, ScoreError) for one definition.

    Never raises: a value whose methods raise while it is read is `invalid_score`.
    """
    try:
        return _record_of(result, grader)
    except Exception as exc:  # a hostile object (its __class__, __float__, ...) raised
        return error_rec("invalid_score", _unreadable(result, exc))


def _unreadable(value: object, exc: Exception) -> str:
    return (
        f"invalid score {safe_repr(value)}: reading it raised {type(exc).__name__}: {safe_str(exc)}"
    )


def _record_of(result: object, grader: Grader | None) -> Rec:
    if isinstance(result, Unscored):
        return Rec(UNSCORED, math.nan, safe_str(result.reason))
    if isinstance(result, ScoreError):
        try:
            extra = _json_safe(result.metadata) if result.metadata else None
        except _BadMetadata as exc:
            extra = {"unstorable": str(exc)}
        return error_rec(
            result.code,
            result.message,
            rationale=_text(result.rationale),
            metadata=extra,
            origin=result.origin,
        )
    if isinstance(result, Score):
        rationale = _text(result.rationale)
        try:
            value = validate_value(result.value)
        except InvalidScore as exc:
            return error_rec("invalid_score", str(exc), rationale=rationale)
        meta: dict[str, Any] | None = None
        if result.metadata is not None:
            try:
                meta = _json_safe(result.metadata) or None
            except _BadMetadata as exc:
                return error_rec("invalid_score", f"invalid score: {exc}", rationale=rationale)
        if result.label is not None:
            meta = {**(meta or {}), "label": safe_str(result.label)}
        return Rec(SCORED, value, None, None, rationale, meta, grader)
    try:
        return Rec(SCORED, validate_value(result), grader=grader)
    except InvalidScore as exc:
        return error_rec("invalid_score", str(exc))


def _text(value: object) -> str | None:
    return None if value is None else safe_str(value)


def interpret(result: object, definitions: Sequence[ScoreDefinition]) -> list[Rec]:
    """Turn what a scorer returned into exactly one record per bound definition.

    A scorer bound to one definition returns a number, `Score` or `Unscored`; a scorer bound
    to several returns a dict keyed by name or definition. Anything else is `invalid_score`.
    Never raises: a returned object whose methods raise is `invalid_score` for each.
    """
    try:
        return _interpret(result, definitions)
    except Exception as exc:  # a hostile Mapping (its items(), its keys' __eq__) raised
        return [error_rec("invalid_score", _unreadable(result, exc)) for _ in definitions]


def _interpret(result: object, definitions: Sequence[ScoreDefinition]) -> list[Rec]:
    if len(definitions) == 1:
        if type(result) is float and 0.0 <= result <= 1.0:  # the common case, fast
            return [Rec(SCORED, result)]
        if not isinstance(result, Mapping):
            return [record_of(result)]
    if not isinstance(result, Mapping):
        names = ", ".join(d.name for d in definitions)
        msg = str(_invalid(result, f"a scorer bound to several scores ({names}) returns a dict"))
        return [error_rec("invalid_score", msg) for _ in definitions]
    by_name: dict[str, object] = {}
    unknown: list[str] = []
    wanted = {d.name for d in definitions}
    for key, item in result.items():
        name = key.name if isinstance(key, ScoreDefinition) else key
        if isinstance(name, str) and name in wanted:
            by_name[name] = item
        else:
            unknown.append(safe_repr(key))
    if unknown:
        msg = str(
            _invalid(result, f"keys {', '.join(unknown)} are not scores this scorer is bound to")
        )
        return [error_rec("invalid_score", msg) for _ in definitions]
    out: list[Rec] = []
    for d in definitions:
        if d.name in by_name:
            out.append(record_of(by_name[d.name]))
        else:
            msg = (
                f"invalid score: the scorer returned no value for {d.name!r} in {safe_repr(result)}"
            )
            out.append(error_rec("invalid_score", msg))
    return out


def handed_back_awaitable(result: object) -> bool:
    """Whether a sync scorer handed back an awaitable; never raises.

    An object that cannot even be inspected (its `__class__` raises) is not awaitable: it
    goes to `interpret`, which makes it `invalid_score`.
    """
    try:
        return inspect.isawaitable(result)
    except Exception:  # a hostile __class__ makes isinstance() raise
        return False


def skip_rec(exc: SkipScore) -> Rec:
    """The record for a scorer that raised `SkipScore`."""
    return Rec(UNSCORED, math.nan, safe_str(exc.reason))


def raised_rec(exc: BaseException, code: str = "scorer_raised") -> Rec:
    """The record for a scorer that raised: the exception type and message (`safe_str`).

    Its origin is the grader's, unless what it raised is a provider's or environment's
    failure (`failure_origin`: a judge call inside the scorer that got a 429).
    """
    origin = failure_origin(exc)
    return error_rec(
        code,
        f"{type(exc).__name__}: {safe_str(exc)}",
        origin=GRADER if origin == TASK else origin,
    )
