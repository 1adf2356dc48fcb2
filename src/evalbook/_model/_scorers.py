"""Scorers: functions bound to one or more score definitions."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, overload

from .._errors import ConfigurationError
from ._definitions import ScoreDefinition, define_score

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DataCheck", "Scorer", "as_scorers", "func_name", "scorer"]

# What a built-in scorer checks of the run's data before any case runs: called with the input
# data (as the run keeps it) and the case ids in row order; raises ConfigurationError.
DataCheck = Callable[["pd.DataFrame", Sequence[str]], None]


def func_name(fn: Callable[..., Any]) -> str:
    """The readable name of a function (its qualified name when it has one)."""
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn))


class Scorer:
    """A function bound to one or more score definitions.

    Build one with `@eb.scorer(...)`; a plain function in `scorers=[...]` is wrapped the same way.
    Calling a `Scorer` calls the function unchanged. `check`, when given, looks at the run's
    data before any case runs (`DataCheck`; `eb.tool_calls_match` checks its column).
    """

    __slots__ = ("check", "definitions", "fn", "is_async", "name")
    fn: Callable[..., Any]
    check: DataCheck | None

    def __init__(
        self,
        fn: Callable[..., Any],
        definitions: Iterable[ScoreDefinition],
        name: str | None = None,
        check: DataCheck | None = None,
    ) -> None:
        while isinstance(fn, Scorer):  # re-binding a scorer binds its function
            check = check or fn.check
            fn = fn.fn
        self.fn = fn
        self.check = check
        self.definitions = tuple(definitions)
        if not self.definitions:
            raise ConfigurationError(f"scorer {func_name(fn)!r} is bound to no score")
        self.name = name or func_name(fn)
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004 - callable objects with async __call__
        )

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        names = ", ".join(d.name for d in self.definitions)
        return f"<Scorer {self.name} -> {names}>"


def _definition(item: ScoreDefinition | str) -> ScoreDefinition:
    if isinstance(item, ScoreDefinition):
        return item
    if isinstance(item, str):
        return define_score(item)
    raise ConfigurationError(
        f"@eb.scorer takes score definitions or names, not {item!r}; "
        'use eb.define_score("name", ...) to make one'
    )


@overload
def scorer(fn: Callable[..., Any], /) -> Scorer: ...


@overload
def scorer(*definitions: ScoreDefinition | str) -> Callable[[Callable[..., Any]], Scorer]: ...


def scorer(*definitions: Any) -> Scorer | Callable[[Callable[..., Any]], Scorer]:
    """Bind a function to one or more score definitions (or names).

    Parameters are bound by name: a DataFrame column, `output`, `row`, `case_id`, `epoch`,
    `transcript` (the sample's `eb.Transcript`, None without one), `**kwargs`.
    Bare `@eb.scorer` uses the function's name as the score name.

    Example:
        >>> import evalbook as eb
        >>> correct = eb.define_score("correct")
        >>> @eb.scorer(correct)
        ... def exact(output, expected):
        ...     return 1.0 if output == expected else 0.0
        >>> exact.definitions[0].name
        'correct'
    """
    if (
        len(definitions) == 1
        and callable(definitions[0])
        and not isinstance(definitions[0], ScoreDefinition | str)
    ):
        fn = definitions[0]
        return Scorer(fn, [_definition(_score_name(fn))])
    defs = [_definition(d) for d in definitions]

    def wrap(fn: Callable[..., Any]) -> Scorer:
        return Scorer(fn, defs or [_definition(_score_name(fn))])

    return wrap


def _score_name(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__name__", None) or type(fn).__name__
    return "lambda" if name == "<lambda>" else name


def as_scorers(items: Iterable[Scorer | Callable[..., Any]]) -> list[Scorer]:
    """Wrap plain functions; lambdas are named `lambda`, `lambda_2`, ... in order."""
    out: list[Scorer] = []
    lambdas = 0
    for item in items:
        if isinstance(item, Scorer):
            out.append(item)
        elif callable(item):
            name = _score_name(item)
            if name == "lambda":
                lambdas += 1
                name = "lambda" if lambdas == 1 else f"lambda_{lambdas}"
            out.append(Scorer(item, [_definition(name)], name=name))
        else:
            raise ConfigurationError(
                f"scorers=[...] takes functions or @eb.scorer objects, not {item!r}"
            )
    return out
