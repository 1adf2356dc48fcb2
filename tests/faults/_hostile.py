"""Hostile objects shared by the fault tests (imported as `_hostile`; not a test module).

`ARMED` switches the objects whose mere inspection raises (`ClassRaises`, `Hostile`) on only
inside the code under test: hypothesis and pytest look at what they hold too. The fake reals
(`Changing`, `Liar`, `FloatRaises`, `FloatNotFloat`) are registered as `numbers.Real`.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

ARMED = [False]


@contextmanager
def armed() -> Iterator[None]:
    """Hostile objects raise inside this block only."""
    ARMED[0] = True
    try:
        yield
    finally:
        ARMED[0] = False


class ClassRaises:
    """An object whose `__class__` raises while armed, so isinstance() raises on it."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        if ARMED[0]:
            raise RuntimeError("no class")
        return ClassRaises


class Hostile:
    """While armed, every dunder a library might call on a value raises."""

    def _no(self, what: str) -> Any:
        if ARMED[0]:
            raise RuntimeError(f"no {what}")
        return None

    def __str__(self) -> str:
        return self._no("str") or "hostile"

    def __repr__(self) -> str:
        return self._no("repr") or "Hostile()"

    def __eq__(self, other: object) -> bool:
        return bool(self._no("eq")) or self is other

    def __hash__(self) -> int:
        return self._no("hash") or id(self)

    def __bool__(self) -> bool:
        return self._no("bool") or True

    def __len__(self) -> int:
        return self._no("len") or 1

    def __iter__(self) -> Iterator[Any]:
        self._no("iter")
        return iter(())

    def __float__(self) -> float:
        return self._no("float") or 0.5


class Custom(BaseException):
    """A user's BaseException (neither KeyboardInterrupt nor SystemExit)."""


class BadText:
    """Text whose `__str__` raises `kind` (RuntimeError unless told)."""

    def __init__(self, kind: type[BaseException] = RuntimeError) -> None:
        self.kind = kind

    def __str__(self) -> str:
        raise self.kind("no text")


class NotText:
    """Text whose `__str__` returns a number."""

    def __str__(self) -> str:
        return 7  # type: ignore[return-value]


class Sub(str):
    """A str subclass with a hostile `__str__`."""

    def __str__(self) -> str:
        raise RuntimeError("sub")


class StrRaises(Exception):
    """An exception whose message cannot be read."""

    def __str__(self) -> str:
        raise ValueError("no message")


class StrNotText(Exception):
    """An exception whose `__str__` returns a non-str."""

    def __str__(self) -> str:
        return None  # type: ignore[return-value]


class RaisingMapping(Mapping[str, Any]):
    """A Mapping whose every read raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("no item")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("no iteration")

    def __len__(self) -> int:
        raise RuntimeError("no length")


class Changing:
    """Answers 0.5 to the first float() and 7.0 to every later one."""

    def __init__(self) -> None:
        self.calls = 0

    def __float__(self) -> float:
        self.calls += 1
        return 0.5 if self.calls == 1 else 7.0


class Liar:
    """Claims to lie in [0, 1] whatever it is compared with; its float is 5.0."""

    def __float__(self) -> float:
        return 5.0

    def __le__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def __lt__(self, other: object) -> bool:
        return False

    def __gt__(self, other: object) -> bool:
        return False


class FloatRaises:
    """A real whose `__float__` raises `kind` (RuntimeError unless told)."""

    def __init__(self, kind: type[BaseException] = RuntimeError) -> None:
        self.kind = kind

    def __float__(self) -> float:
        raise self.kind("no float here")


class FloatNotFloat:
    """A real whose `__float__` returns a str."""

    def __float__(self) -> float:
        return "0.5"  # type: ignore[return-value]


# the fake reals are `numbers.Real`, as a user's number type may be
for _kind in (Changing, Liar, FloatRaises, FloatNotFloat):
    numbers.Real.register(_kind)
