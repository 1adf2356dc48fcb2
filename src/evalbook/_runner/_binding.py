"""Bind task and scorer parameters by name, checked once before any case runs."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ScorerSignatureError
from .._model._scorers import func_name

__all__ = ["Binding", "bind"]

# Names every case provides besides its columns.
SPECIAL = ("output", "row", "case_id", "epoch", "ctx", "transcript")


@dataclass(frozen=True, slots=True)
class Binding:
    """How to call one function for a case.

    `params` pairs each keyword with the name of the value it receives; `positional` lists the
    positional-only parameters in order; `var_kw` is True when the function takes `**kwargs`.
    """

    params: tuple[tuple[str, str], ...]
    positional: tuple[str, ...]
    var_kw: bool
    wants_row: bool


def bind(
    fn: Callable[..., Any], columns: Sequence[str], *, kind: str, allow: Sequence[str] = SPECIAL
) -> Binding:
    """Check that every required parameter of `fn` can be bound and say how.

    Raises:
        ScorerSignatureError: a required parameter matches no column nor special name; the
            message names the function, the parameter and the names available.
    """
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ScorerSignatureError(
            f"cannot read the signature of {kind} {func_name(fn)!r}: {exc}"
        ) from None
    available = [*columns, *(a for a in allow if a not in columns)]
    known = set(available)
    params: list[tuple[str, str]] = []
    positional: list[str] = []
    var_kw = False
    for p in sig.parameters.values():
        if p.kind is p.VAR_KEYWORD:
            var_kw = True
            continue
        if p.kind is p.VAR_POSITIONAL:
            continue
        if p.name in known:
            if p.kind is p.POSITIONAL_ONLY:
                positional.append(p.name)
            else:
                params.append((p.name, p.name))
            continue
        if p.default is p.empty:
            shown = ", ".join(available) if available else "(none)"
            raise ScorerSignatureError(
                f"{kind} {func_name(fn)!r} has a required parameter {p.name!r} that no case "
                f"can supply. Available names: {shown}. Rename the parameter after one of "
                f"them, give it a default, or take **kwargs."
            )
        if p.kind is p.POSITIONAL_ONLY:
            raise ScorerSignatureError(
                f"{kind} {func_name(fn)!r}: positional-only parameter {p.name!r} with a default "
                "cannot be bound by name; make it a regular parameter"
            )
    wants_row = var_kw or any(src == "row" for _, src in params) or "row" in positional
    return Binding(tuple(params), tuple(positional), var_kw, wants_row)


def call_args(binding: Binding, values: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The positional and keyword arguments for one call, from the case's named values."""
    if binding.var_kw:
        kwargs = dict(values)
        args = tuple(kwargs.pop(n) for n in binding.positional)
        return args, kwargs
    args = tuple([values[n] for n in binding.positional]) if binding.positional else ()
    return args, {k: values[src] for k, src in binding.params}
