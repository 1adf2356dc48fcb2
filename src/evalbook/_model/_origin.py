"""Where a failure came from: the `origin` of an errored sample and of an error record.

`task` (the user's code raised), `provider` (a model API call failed: 429, 5xx, a timeout, a
connection error, seen by `eb.wrap_openai` or a judge client), `environment` (the task raised
`eb.EnvironmentFailure` or a type listed in `environment_errors=`), `grader` (a scorer or judge
failed), `harness` (evalbook itself). docs/origin.md.

A provider error is recognised by a mark the wrapped client (or the judge) puts on the exception
object itself (`mark_provider`), never by its text: a user's task that catches it and raises
another error `from` it keeps the mark reachable through `__cause__` / `__context__`, which
`failure_origin` walks. The mark is an attribute, so it survives pickling (Dask workers).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import numpy as np

from .._errors import EnvironmentFailure

__all__ = [
    "ENVIRONMENT",
    "GRADER",
    "HARNESS",
    "INFRA",
    "INFRA_SHARE",
    "ORIGINS",
    "PROVIDER",
    "TASK",
    "environment_types",
    "failure_origin",
    "infra_note",
    "infra_warning",
    "is_provider",
    "mark_provider",
    "origin_codes",
    "record_origin",
]

ORIGINS = ("task", "provider", "environment", "grader", "harness")
TASK, PROVIDER, ENVIRONMENT, GRADER, HARNESS = ORIGINS
INFRA = (PROVIDER, ENVIRONMENT)  # failures outside the model and outside the user's code
_MARK = "_evalbook_origin"
INFRA_SHARE = 0.10  # above this share of samples failing outside the model, a warning
_MAX_CHAIN = 32  # exceptions looked at along __cause__ / __context__


def mark_provider(exc: BaseException) -> None:
    """Note on `exc` that a model API call raised it (never raises)."""
    with contextlib.suppress(Exception):  # a type without a __dict__ goes unrecognised
        setattr(exc, _MARK, PROVIDER)


def is_provider(exc: BaseException) -> bool:
    """Whether `exc` itself carries the provider mark (never raises)."""
    try:
        return exc.__dict__.get(_MARK) == PROVIDER
    except Exception:  # a hostile __dict__
        return False


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, then what it was raised from or during (breadth first, each once, bounded)."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < _MAX_CHAIN:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        for name in ("__cause__", "__context__"):
            try:  # a hostile exception's property may raise anything
                nxt = getattr(e, name, None)
                if isinstance(nxt, BaseException):
                    todo.append(nxt)
            except Exception:
                continue


def environment_types(value: object) -> tuple[type[BaseException], ...]:
    """`environment_errors=` as a tuple of exception types; TypeError naming what is not one."""
    items: Sequence[object]
    if isinstance(value, type):
        items = (value,)
    elif isinstance(value, list | tuple | set | frozenset):
        items = tuple(value)
    else:
        raise TypeError(
            f"environment_errors= takes exception types (e.g. (ConnectionError,)), "
            f"not {type(value).__name__}"
        )
    out: list[type[BaseException]] = []
    for item in items:
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise TypeError(
                f"environment_errors= takes exception types; {_shown(item)} is not one "
                "(pass the class, e.g. ConnectionError, not an instance or a name)"
            )
        out.append(item)
    return tuple(out)


def _shown(item: object) -> str:
    try:
        return repr(item)[:80]
    except Exception:  # a hostile __repr__
        return f"a {type(item).__name__}"


def failure_origin(
    exc: BaseException, environment_errors: tuple[type[BaseException], ...] = ()
) -> str:
    """The origin of an exception a task raised: environment, provider or task.

    The exception and those it was raised from or during are looked at, the outermost
    first; the first that is an environment failure or carries the provider mark decides.
    Never raises.
    """
    try:
        return _origin_of(exc, environment_errors)
    except Exception:  # whatever a hostile exception does: the task's, as before
        return TASK


def _origin_of(exc: BaseException, environment_errors: tuple[type[BaseException], ...]) -> str:
    for e in _chain(exc):
        try:
            if isinstance(e, EnvironmentFailure) or (
                environment_errors and isinstance(e, environment_errors)
            ):
                return ENVIRONMENT
        except Exception:  # a hostile __class__
            continue
        if is_provider(e):
            return PROVIDER
    return TASK


# error codes of records that a case's outcome decides (their origin is the sample's)
_CASE_CODES = frozenset({"case_errored", "case_timed_out", "invalid_transcript"})


def record_origin(reason: str | None, sample_origin: str | None) -> str | None:
    """The origin of an error record that does not say: by its code.

    A record that errored because its case did takes the sample's origin; `record_missing`
    (a log without the record) is evalbook's; any other code is a scorer's or judge's
    failure (`grader`). `component_error:x` records are given their component's origin by
    the engine; read from a log that does not say, they count as the grader's.
    """
    if reason in _CASE_CODES:
        return sample_origin
    if reason == "record_missing":
        return HARNESS
    return GRADER


def origin_codes(values: Sequence[str | None]) -> np.ndarray:
    """Each origin's code in `ORIGINS` (-1: none), as int16."""
    codes = np.full(len(values), -1, dtype=np.int16)
    if list(values).count(None) == len(values):
        return codes
    lookup = {o: k for k, o in enumerate(ORIGINS)}
    for i, v in enumerate(values):
        if v is not None:
            codes[i] = lookup.get(v, -1)
    return codes


def infra_note(counts: dict[str, int]) -> str | None:
    """`N samples failed outside the model (provider 30, environment 10)`, or None.

    `counts` holds the failed samples by origin.
    """
    parts = [(o, counts.get(o, 0)) for o in INFRA if counts.get(o, 0)]
    if not parts:
        return None
    n = sum(k for _, k in parts)
    which = ", ".join(f"{o} {k}" for o, k in parts)
    noun = "sample" if n == 1 else "samples"
    return f"{n} {noun} failed outside the model ({which})"


def infra_warning(note: str | None, share: float | None, run: str | None = None) -> str | None:
    """The warning for a run whose provider + environment failures exceed `INFRA_SHARE` of
    its samples (None below it); `run` names it in the command to retry (default `RUN`)."""
    if note is None or share is None or share <= INFRA_SHARE:
        return None
    return (
        f"{note}, {share:.0%} of the samples: the result may reflect infrastructure, not the "
        f"model; run them again with evalbook run FILE --retry-errors {run or 'RUN'} "
        "--origin provider,environment"
    )
