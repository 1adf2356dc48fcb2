"""The fix a message gives, in the words of whoever reads it: Python (a notebook, a script)
or the `evalbook` command, which says so while it runs a command (`_cli/_main.py`).

A warning from the library reaches both: `evalbook show` loading an incomplete run should say
`evalbook run FILE --resume PATH`, a notebook `eb.run(..., resume=path)`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["advice", "from_the_command_line"]

# True while the `evalbook` command runs one of its commands; a context variable, so a run's
# event loop and the tasks it starts (which copy the context) see it too
_COMMAND_LINE: ContextVar[bool] = ContextVar("evalbook_command_line", default=False)


def advice(python: str, command: str) -> str:
    """`command` while the `evalbook` command runs, else `python`.

    Example:
        >>> advice("eb.runs()", "evalbook runs")
        'eb.runs()'
        >>> with from_the_command_line():
        ...     advice("eb.runs()", "evalbook runs")
        'evalbook runs'
    """
    return command if _COMMAND_LINE.get() else python


@contextmanager
def from_the_command_line() -> Iterator[None]:
    """Within it, `advice` speaks to a user of the `evalbook` command."""
    token = _COMMAND_LINE.set(True)
    try:
        yield
    finally:
        _COMMAND_LINE.reset(token)
