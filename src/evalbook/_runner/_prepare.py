"""Setting a run up before any case runs: a new folder, or what `resume=` continues."""

from __future__ import annotations

import os
from typing import Any

import pandas as pd

from .._model._results import Results
from .._store._door import Prepared, RunStart, open_run
from ._plan import Plan
from ._resume import resume_source

__all__ = ["prepare"]


def prepare(
    plan: Plan,
    frame: pd.DataFrame,
    name: str,
    options: dict[str, Any],
    *,
    store: str | os.PathLike[str] | None,
    resume: Any = None,
    epochs: int = 1,
) -> Prepared:
    """Set a run up before any case runs; raises ConfigurationError on a bad name or resume."""
    if resume is not None:
        return resume_source(resume, plan, frame, options, store)
    # the plan's text boundary: one warning a run
    results = Results(plan.case_ids, len(plan.definitions), plan.text, epochs)
    start = RunStart(name, options, plan.definitions, plan.case_ids)  # a new id, started now
    return open_run(store, start, frame, results)
