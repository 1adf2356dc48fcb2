"""The one way evalbook warns: the warning points at the user's line, never at evalbook's.

Python's `stacklevel` counts frames, which differ by path (a run from a notebook, from
`eb.run`, from a resume, from the CLI); `warn` counts them itself: the warning is attributed
to the first frame outside this package, so `warnings` filters by module and the message's
`file:line` name the user's call.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
import warnings
from pathlib import Path

__all__ = ["warn"]

_PACKAGE = str(Path(__file__).resolve().parent.parent) + "/"
# what runs between the user's call and evalbook's code without being either: a run goes
# through an event loop (and a sync task through a worker thread) on its way
_PASSED_THROUGH = (
    *(str(Path(str(m.__file__)).resolve().parent) + "/" for m in (asyncio, concurrent.futures)),
    str(Path(threading.__file__).resolve()),
)


def warn(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """`warnings.warn(message, category)`, attributed to the first caller outside evalbook.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     warn("careful")
        >>> caught[0].filename.endswith("_warn.py"), str(caught[0].message)
        (False, 'careful')
    """
    frame = sys._getframe(1)
    level = 2  # stacklevel 2 is `warn`'s caller
    while frame.f_back is not None and _inside(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    warnings.warn(message, category, stacklevel=level)


def _inside(filename: str) -> bool:
    return filename.startswith(_PACKAGE) or filename.startswith(_PASSED_THROUGH)
