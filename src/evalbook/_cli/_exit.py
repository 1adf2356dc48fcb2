"""The `evalbook` command's exit codes (docs/cli.md), in a module that imports nothing: the
entry point needs one before the library has loaded."""

from __future__ import annotations

__all__ = [
    "EXIT_GATE_FAILED",
    "EXIT_INCOMPLETE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_UNEXPECTED",
    "EXIT_USAGE",
]

EXIT_OK, EXIT_GATE_FAILED, EXIT_USAGE, EXIT_UNEXPECTED = 0, 1, 2, 3
EXIT_INCOMPLETE = 4  # `run`: the run stopped before every sample ran (its budget)
EXIT_INTERRUPTED = 130  # Ctrl-C, as a shell reports a process SIGINT ended (128 + 2)
