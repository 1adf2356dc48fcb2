"""`eb.import_results`: another harness's results as an evalbook `Run`."""

from __future__ import annotations

import os

from .._interop._formats import import_run
from ._run import Run, as_run

__all__ = ["import_results"]


def import_results(
    path: str | os.PathLike[str], *, format: str | None = None, name: str | None = None
) -> Run:
    """Read results another harness wrote into a `Run` (tables, summary, compare, gate).

    Formats (docs/interop.md): `"inspect"` (Inspect AI `.eval` / `.json` logs), `"lm-eval"`
    (lm-evaluation-harness `samples_*.jsonl`), `"promptfoo"` (`promptfoo eval -o
    results.json`), `"harbor"` (Harbor trials with `reward.json`) and `"evalscope"`
    (EvalScope reviews). With `format=None` the format is detected. Every value goes through
    the score contract: a value outside [0, 1], a boolean or a label is an `invalid_score`
    record, never coerced. Parts that cannot be read are skipped with one warning that counts
    them. The run is in memory: `run.save()` stores it.

    Args:
        path: A results file or folder.
        format: One of the names above, or None to detect it.
        name: The run's name (default: the harness's task or eval name).

    Raises:
        FileNotFoundError: nothing at `path`.
        FormatError: not of the format (a ConfigurationError naming what was expected).
    """
    return as_run(import_run(path, format=format, name=name))
