"""Setting a run up before any case runs: a new folder, or what `resume=` continues."""

from __future__ import annotations

import os
import uuid
from typing import Any

import pandas as pd

from .._model._results import Results
from .._store._layout import new_run_folder, now_iso
from .._store._sink import Prepared, RunStart, open_new
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
    run_id = uuid.uuid4().hex[:12]
    started_at = now_iso()
    if store is None:
        return Prepared(name, run_id, None, results, range(results.n_samples), None, started_at)
    start = RunStart(name, run_id, started_at, options, plan.definitions, plan.case_ids)
    return open_new(new_run_folder(store, name), start, frame, results, None)
