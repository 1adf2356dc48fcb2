"""The `evalbook` command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from ._demo import demo_eval

    run = demo_eval().run(store=None, progress=False)
    print(run.headline.text)
    print()
    print(run.summary().to_string(index=False))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="evalbook", description="Run, inspect and gate evaluations of LLM and AI systems."
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = sub.add_parser("demo", help="run the bundled offline example end to end")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `evalbook` console script and `python -m evalbook`."""
    args = _parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
