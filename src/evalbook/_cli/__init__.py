"""The `evalbook` command line: thin commands over the public API."""

from __future__ import annotations

import sys

from ._exit import EXIT_INTERRUPTED

TYPE_CHECKING = False  # not typing's: see evalbook/__init__.py
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `evalbook` console script and `python -m evalbook`.

    The commands load the library (pandas, pyarrow: about a second) here, so a Ctrl-C while
    they load is an interruption like any other: one line, exit 130, no traceback.

    Example:
        >>> main(["--version"])
        evalbook 0.1.0
        0
    """
    try:
        # lazy on purpose: the import is the start-up a Ctrl-C may interrupt
        from ._main import main as run_command
    except KeyboardInterrupt:
        sys.stderr.write("evalbook: error: interrupted\n")
        return EXIT_INTERRUPTED
    return run_command(argv)
