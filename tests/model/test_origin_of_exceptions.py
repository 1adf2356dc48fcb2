"""`failure_origin` (`_model/_origin.py`): the walk along `__cause__` / `__context__` that
finds a provider's mark or an environment failure never raises and always ends, whatever an
exception does (docs/design.md: user code cannot break a run)."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._origin import failure_origin, mark_provider


class Hostile(Exception):
    @property
    def __cause__(self) -> Any:  # type: ignore[override]
        raise RuntimeError("no cause for you")

    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        raise RuntimeError("no dict either")


def test_a_hostile_exception_is_the_tasks() -> None:
    assert failure_origin(Hostile()) == "task"
    mark_provider(Hostile())  # never raises


def test_a_cycle_of_contexts_ends() -> None:
    a, b = ValueError("a"), KeyError("b")
    a.__context__, b.__context__ = b, a
    assert failure_origin(a) == "task"
    b.__cause__ = eb.EnvironmentFailure("x")
    assert failure_origin(a) == "environment"


@given(depth=st.integers(0, 60), where=st.integers(0, 60), kind=st.sampled_from(["p", "e"]))
def test_the_outermost_mark_within_the_bound_decides(depth: int, where: int, kind: str) -> None:
    chain: list[BaseException] = [RuntimeError(str(i)) for i in range(depth + 1)]
    if where <= depth:
        marked: BaseException = eb.EnvironmentFailure("env") if kind == "e" else OSError("5xx")
        if kind == "p":
            mark_provider(marked)
        chain[where] = marked
    for outer, inner in itertools.pairwise(chain):
        outer.__cause__ = inner
    found = failure_origin(chain[0])
    if where <= depth and where < 32:  # 32 exceptions are looked at, the outermost first
        assert found == ("environment" if kind == "e" else "provider")
    else:  # none marked, or beyond the bound
        assert found == "task"
