"""The runner's one way into the store: open a run for writing, or reopen a stored one.

`open_run` starts a run: in a new folder of a store, or in memory only (`store=None`).
`reopen` continues a stored run's folder (a resume): it takes the log's lock, reads the log
once, and hands back the stored state (`Reopened.run`) and, once the runner has decided what
to keep and what to run, a `Prepared` run that appends to the same log (`Reopened.append`).
The runner decides (same scores? which samples to keep?); how the folder is locked, read,
cut and set aside is the store's alone. See docs/file-formats.md for the files.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._results import Results
from .._model._run_data import RunData
from ._layout import EVENTS, FINAL_FILES, first_started_at, new_run_folder
from ._load import not_a_run, read_stored, run_folder, summary_of
from ._log._file import LogFile
from ._log._read import DamagedLog, EventLog, NotARunLog, replay
from ._sink import Prepared, RunStart, lock_log, new_run_id, open_existing, open_new

__all__ = [
    "Prepared",
    "Reopened",
    "RunStart",
    "first_started_at",
    "new_run_id",
    "open_run",
    "reopen",
    "run_folder",
]


def open_run(
    store: str | os.PathLike[str] | None,
    start: RunStart,
    frame: pd.DataFrame,
    results: Results,
    todo: Sequence[int] | None = None,
) -> Prepared:
    """A run ready to execute: in a new folder of `store` (its log started), or in memory.

    `results` may hold samples already (a resume or a retry into a new run); `todo` is what
    is left to run (None: every sample). Raises ConfigurationError on a bad name or store.
    """
    if store is None:
        todo = range(results.n_samples) if todo is None else todo
        return Prepared(start.name, start.run_id, None, results, todo, None, start.started_at)
    return open_new(new_run_folder(store, start.name), start, frame, results, todo)


class Reopened:
    """A stored run reopened for a resume: its log locked and read once.

    Use it as a context manager: leaving the block without `append` (a resume refused by the
    runner's checks) releases the lock, so a second try may run.
    """

    def __init__(
        self, folder: Path, log: LogFile, found: EventLog, run: RunData, started_at: str
    ) -> None:
        self.folder = folder
        self.run = run  # the stored state: from the final files, or from the log
        self.started_at = started_at
        self._log: LogFile | None = log
        self._found = found

    @property
    def damage_note(self) -> str | None:
        """Where and how the log is damaged, as a message names it (None: it is not)."""
        damage = self._found.damage
        return None if damage is None else f"{damage.path}, line {damage.line}: {damage.reason}"

    def append(
        self,
        options: dict[str, Any],
        definitions: Sequence[ScoreDefinition],
        frame: pd.DataFrame,
        results: Results,
        todo: Sequence[int],
    ) -> Prepared:
        """Continue the log with `results` kept and `todo` to run (the run's cases are
        `results`' and its scores `definitions`); the run keeps its name, id and start."""
        log, self._log = self._log, None
        if log is None:
            raise RuntimeError("a reopened run is appended to once")
        start = RunStart(
            self.run.name,
            options,
            definitions,
            results.case_ids,
            run_id=self.run.id,
            started_at=self.started_at,
        )
        return open_existing(self.folder, start, frame, results, todo, log, self._found)

    def close(self) -> None:
        """Release the lock (nothing appended)."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Reopened:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def reopen(folder: Path, label: str) -> Reopened:
    """Lock a stored run's log, then read the run once; ConfigurationError if it cannot.

    The lock comes first: reading first let two processes read the same state, then each
    ran (and logged) the samples the log lacked. The one read of the log gives the stored
    state (unless the final files hold it), where the log ends and where it is damaged, so
    appending needs no second read. `label` starts the errors (e.g. `resume='path'`).
    """
    if not (folder / EVENTS).exists() and not all((folder / f).exists() for f in FINAL_FILES):
        raise ConfigurationError(f"{label}: {not_a_run(folder)}")  # nothing is created
    try:
        log = lock_log(folder, append=True, cut=False)  # the read warns of a cut line
    except OSError as exc:  # a FIFO, a device or a symlink as log: never written through
        raise ConfigurationError(
            f"resume={str(folder)!r}: cannot continue its log ({exc})"
        ) from None
    try:
        found = replay(folder / EVENTS, warn=False)  # warned of once it is known what decides
        run = read_stored(folder, found)
        started = found.started_at  # the log's run.started says it as summary.json does
        if started is None:  # a log written before it did
            summary = summary_of(folder)
            started = summary.get("started_at") if summary is not None else None
        started_at = str(started) if started is not None else first_started_at(run)
    except (FileNotFoundError, NotARunLog, DamagedLog) as exc:  # nothing here to continue
        log.close()
        raise ConfigurationError(f"{label}: {exc}") from None
    except BaseException:  # a failed read releases the lock: a second try may then run
        log.close()
        raise
    return Reopened(folder, log, found, run, started_at)
