"""`run.save()`: write (or complete) a run's folder from the run in memory."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._model._results import PENDING
from .._util._fs import write_text
from ._events import LineEncoder, replay
from ._layout import EVENTS, first_started_at, new_run_folder, now_iso
from ._load import stored_started_at
from ._sink import ended_event, finish_status, start_events, write_data
from ._summary import finish_files

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["save_run"]


def full_log(run: RunData, started_at: str, data_file: str | None) -> str:
    """The whole event log of a run, rebuilt from memory (one attempt line per case)."""
    results = run._results
    encoder = LineEncoder(run.definitions, results.case_ids)
    parts = [
        start_events(
            run.id, run.name, started_at, results.case_ids, run.options, run.definitions, data_file
        )
    ]
    for pos in np.flatnonzero(results.outcome != PENDING):
        p = int(pos)
        parts.append(
            encoder.case_started(
                p, int(results.attempts[p]), round(float(results.started_at[p]) * 1e6)
            )
        )
        parts.append(encoder.case_ended(p, results))
    parts.append(ended_event(results, now_iso(), finish_status(results)))
    return "".join(parts)


def _log_matches(folder: Path, run: RunData) -> bool:
    """True when the folder's log already holds every finished case of the run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log = replay(folder / EVENTS)
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return log.case_ids == run._results.case_ids and bool(
        np.array_equal(log.results.outcome, run._results.outcome)
    )


def save_run(run: RunData, store: str | os.PathLike[str] = "runs") -> Path:
    """Write the run's folder and return its path (a new folder for an in-memory run)."""

    if run.path is None:
        folder = new_run_folder(store, run.name)
        started_at = first_started_at(run._results)
    else:
        folder = run.path
        folder.mkdir(parents=True, exist_ok=True)
        started_at = stored_started_at(folder) or first_started_at(run._results)
    data_file = write_data(run.data, folder)
    if run.path is None or not _log_matches(folder, run):
        write_text(folder / EVENTS, full_log(run, started_at, data_file))
    run.path = folder
    finish_files(run, started_at, now_iso(), finish_status(run._results))
    return folder
