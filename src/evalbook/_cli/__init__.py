"""The `evalbook` command line: thin commands over the public API."""

from ._main import main

__all__ = ["main"]
