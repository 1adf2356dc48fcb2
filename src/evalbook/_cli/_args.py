"""What every CLI command shares: exit codes, the one-line user error, argument types, and
the options several commands take (RUN, `--store`, `--by` / `--cluster`).

Exit codes: 0 success · 1 a gate condition failed · 2 bad usage or a user error (missing
file, unknown run, bad number, unknown score, configuration error) · 3 an unexpected error.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import NoReturn

from .._api._refs import column_names
from .._model._origin import ORIGINS
from ._exit import (
    EXIT_GATE_FAILED,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_UNEXPECTED,
    EXIT_USAGE,
)

__all__ = [
    "EXIT_GATE_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNEXPECTED",
    "EXIT_USAGE",
    "RUN_HELP",
    "CliError",
    "Parser",
    "count",
    "drop",
    "format_option",
    "fraction",
    "one_line",
    "positive_int",
    "say_error",
    "seconds",
    "slice_columns",
    "slice_options",
    "store_option",
    "usd",
]


class CliError(Exception):
    """A user error: reported as one line on stderr, with exit code `code`."""

    def __init__(self, message: str, code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.code = code


def one_line(text: str) -> str:
    """`text` with its whitespace (newlines too) squeezed to single spaces."""
    return " ".join(str(text).split())


def say_error(message: str, prog: str = "evalbook") -> None:
    """Write `prog: error: message` as one line on stderr."""
    sys.stderr.write(f"{prog}: error: {one_line(message)}\n")
    sys.stderr.flush()


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line on stderr (exit 2)."""

    def error(self, message: str) -> NoReturn:
        say_error(f"{message} (see '{self.prog} --help')", prog=self.prog)
        raise SystemExit(EXIT_USAGE)


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _whole(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = low - 1
    if value < low:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {low}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _whole(text, 1)


def count(text: str) -> int:
    """An integer >= 0."""
    return _whole(text, 0)


def seconds(text: str) -> float:
    """A number of seconds > 0."""
    value = _number(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, got {text!r}")
    return value


def usd(text: str) -> float:
    """An amount of US dollars >= 0, written `5`, `0.25` or `$0.25` (`--max-cost`).

    Example:
        >>> usd("2.5"), usd("$0.25"), usd("0")
        (2.5, 0.25, 0.0)
    """
    raw = text.strip().removeprefix("$")
    try:
        value = _number(raw)
    except argparse.ArgumentTypeError:
        value = -1.0
    if value < 0:
        raise argparse.ArgumentTypeError(
            f"expected an amount of US dollars >= 0 (e.g. 5 or 0.25), got {text!r}"
        )
    return value


def fraction(text: str) -> float:
    """A fraction in [0, 1], written `0.8` or `80%`.

    Example:
        >>> fraction("80%"), fraction("0.25")
        (0.8, 0.25)
    """
    raw = text.strip()
    percent = raw.endswith("%")
    value = _number(raw[:-1] if percent else raw)
    if percent:
        value /= 100
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(
            f"expected a fraction between 0 and 1 (e.g. 0.8 or 80%), got {text!r}"
        )
    return value


def drop(text: str) -> float:
    """A drop for `--max-drop`: a fraction above 0 and at most 1 (`0.05` or `5%`)."""
    value = fraction(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"expected a drop above 0 (e.g. 0.05 or 5%), got {text!r}: a non-inferiority margin "
            "of 0 asks for an improvement; use --min-ci-low for that"
        )
    return value


# -- the options several commands take -------------------------------------------------------

RUN_HELP = "a run folder, or a run name in the store (the latest run of that name wins)"


def store_option(p: argparse.ArgumentParser) -> None:
    """`--store DIR`, where RUN names are looked up (default `./runs`)."""
    p.add_argument(
        "--store",
        metavar="DIR",
        default="runs",
        help="run store where RUN names are looked up (default: ./runs)",
    )


def format_option(p: argparse.ArgumentParser) -> None:
    """`--format markdown|json` (`show`, `compare`): a PR comment or data for a CI script."""
    p.add_argument(
        "--format",
        choices=("markdown", "json"),
        help="print GitHub-flavoured Markdown for a PR comment (at most 60,000 characters) "
        "or JSON (the summary, the comparison and the check's verdict) instead of the tables",
    )


def slice_options(p: argparse.ArgumentParser) -> None:
    """`--by COL` and `--cluster COL` (`show`, `compare`)."""
    p.add_argument(
        "--by",
        metavar="COL",
        help="one row per (slice, score): a column of the run's input data (or several, "
        "comma-separated); slices with fewer than 10 counted cases are flagged small",
    )
    p.add_argument(
        "--cluster",
        metavar="COL",
        help="a column of the input data whose cases are not independent (e.g. a passage): "
        "cluster-robust intervals on its clusters (default: the run's own cluster column)",
    )


def slice_columns(text: str | None) -> list[str]:
    """`--by a,b` as its column names ([] without `--by`): `_api._refs.column_names`, the
    magics' parser too, so that both say the same of the same mistake."""
    return column_names(text)


def origins(text: str) -> frozenset[str]:
    """Failure origins, comma-separated (`--origin provider,environment`).

    Example:
        >>> sorted(origins("provider, environment"))
        ['environment', 'provider']
    """
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in ORIGINS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(
            f"expected origins among {', '.join(ORIGINS)} (comma-separated), got {text!r}"
        )
    return frozenset(names)
