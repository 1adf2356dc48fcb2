"""The `evalbook` command line: thin commands over the public API."""

from __future__ import annotations

import signal
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
    # lazy on purpose: the import is the start-up a Ctrl-C may interrupt. While it loads, a
    # Ctrl-C is noted, not raised: raised, it can land inside importlib's own lock callbacks,
    # where Python prints it as an ignored exception with a traceback. The load ends (a second
    # at most) and the command stops as interrupted.
    interrupted: list[int] = []
    noting = False
    try:
        previous = signal.getsignal(signal.SIGINT)
        try:
            signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
            noting = True
        except ValueError:  # not the main thread (main() called from a thread): no handler
            pass
        from ._main import main as run_command  # lazy: the start-up a Ctrl-C may interrupt
    except KeyboardInterrupt:  # one that came before the handler above was set
        interrupted.append(2)
    finally:
        if noting:
            signal.signal(signal.SIGINT, previous)
    if interrupted:
        sys.stderr.write("evalbook: error: interrupted\n")
        return EXIT_INTERRUPTED
    return run_command(argv)
