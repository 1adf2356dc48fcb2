"""The one way evalbook pauses cyclic garbage collection while it builds something large."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["paused_gc"]


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """No cyclic garbage collection inside the block: what is built there is kept (or freed by
    reference counting), and each gen-2 collection would walk all of it again (an import's
    millions of rows). Collection is on again after the block if it was before.

    Example:
        >>> import gc
        >>> with paused_gc():
        ...     gc.isenabled()
        False
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
