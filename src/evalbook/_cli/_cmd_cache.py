"""`evalbook cache info PATH` and `evalbook cache clear PATH [--yes]`: the response cache.

The folder is the one given as `cache=` to `eb.judge` or `eb.wrap_openai` (docs/judges.md,
"Cache"). A missing folder, or one that is not a cache (no `evalbook-cache.json`), is a user
error (exit 2): `clear` never deletes anything from a folder that is not a cache.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._judges._cache import CacheFolderError, cache_clear, cache_info
from ._args import EXIT_OK, CliError
from ._terminal import Out, for_terminal

__all__ = ["DESCRIPTION", "HELP", "NAME", "add_arguments", "format_size", "run"]


NAME = "cache"
HELP = "what a response cache folder holds, or empty it"
DESCRIPTION = (
    "Inspect or empty a response cache: the folder given as cache= to "
    "eb.judge or eb.wrap_openai. Every entry is safe to delete (a deleted one is asked "
    "again on the next run)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The actions `info PATH` and `clear PATH [--yes]`."""
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    info = actions.add_parser(
        "info",
        help="entries, size, models and dates of a cache folder",
        description="Print how many replies a cache folder holds, their size, the models "
        "that gave them and when the oldest and newest were written.",
    )
    info.add_argument("path", metavar="PATH", help="the cache folder")
    clear = actions.add_parser(
        "clear",
        help="delete every entry of a cache folder",
        description="Delete every cached reply in PATH (and the sub-folders left empty); "
        "files that are not the cache's stay. Asks first on a terminal, unless --yes.",
    )
    clear.add_argument("path", metavar="PATH", help="the cache folder")
    clear.add_argument("--yes", action="store_true", help="do not ask for confirmation")


def run(args: argparse.Namespace) -> int:
    """`evalbook cache info|clear PATH`: the action's one block or one line."""
    if args.action == "clear":
        return _clear(args)
    return _info_block(args)


def format_size(n: int) -> str:
    """A byte count for people: bytes, KB or MB (1 KB = 1024 bytes).

    Example:
        >>> format_size(512), format_size(2048), format_size(3 * 1024**2)
        ('512 bytes', '2.0 KB', '3.0 MB')
    """
    if n < 1024:
        return f"{n} bytes"
    if n < 1024**2:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024**2:.1f} MB"


def _os_error(doing: str, path: str, exc: OSError) -> CliError:
    return CliError(
        f"cannot {doing} the cache folder {path!r}: {exc.strerror or exc}"
        + (f" ({exc.filename})" if exc.filename and str(exc.filename) != path else "")
    )


def _info(path: str) -> dict[str, Any]:
    try:
        return cache_info(path)
    except CacheFolderError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:  # a sub-folder that cannot be listed, say
        raise _os_error("read", path, exc) from None


def _info_block(args: argparse.Namespace) -> int:
    """`evalbook cache info PATH`: one block."""
    info = _info(args.path)
    out = Out(sys.stdout)
    out.line(f"cache   {for_terminal(info['path'])}")
    out.line(f"entries {info['entries']} ({format_size(info['bytes'])})")
    if info["unreadable"]:
        out.line(f"        {info['unreadable']} unreadable (asked again when needed)")
    models = ", ".join(f"{for_terminal(m, 60)} ({n})" for m, n in info["models"].items())
    out.line(f"models  {models or '-'}")
    if info["oldest"] is not None:
        out.line(f"written {for_terminal(info['oldest'])} to {for_terminal(info['newest'])} (UTC)")
    return EXIT_OK


def _clear(args: argparse.Namespace) -> int:
    """`evalbook cache clear PATH [--yes]`: one line."""
    info = _info(args.path)  # refuses a missing folder or one that is not a cache
    if not args.yes:
        if not sys.stdin.isatty():
            raise CliError(
                f"not clearing {args.path!r} without confirmation: add --yes "
                "(stdin is not a terminal to ask on)"
            )
        answer = input(f"delete {info['entries']} entries from {args.path}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            sys.stdout.write("nothing removed\n")
            return EXIT_OK
    try:
        n = cache_clear(args.path)
    except CacheFolderError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:  # an entry that cannot be deleted
        raise _os_error("clear", args.path, exc) from None
    sys.stdout.write(f"removed {n} entries from {args.path}\n")
    return EXIT_OK
