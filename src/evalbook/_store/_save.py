"""`run.save()`: write (or complete) a run's folder from the run in memory."""

from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._errors import ConfigurationError
from .._model._results import PENDING
from .._util._fs import remove_stale_temps, write_text
from ._labels import given_labels, label_line
from ._layout import (
    EVENTS,
    LABELS,
    STORE_FILES,
    TRANSCRIPTS,
    first_started_at,
    new_run_folder,
    now_iso,
)
from ._listing import stored_started_at
from ._log._file import set_aside
from ._log._read import DamagedLog, replay
from ._log._write import LineEncoder
from ._sink import disk_full, ended_event, finish_status, lock_log, start_events, write_data
from ._summary import finish_files
from ._transcripts import all_transcripts

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["save_run"]


def full_log(run: RunData, started_at: str, data_file: str | None) -> str:
    """The whole event log of a run, rebuilt from memory (one attempt line per case that
    says when it started)."""
    results = run.results
    encoder = LineEncoder(run.definitions, results.case_ids, results.epochs)
    parts = [
        start_events(
            run.id, run.name, started_at, results.case_ids, run.options, run.definitions, data_file
        )
    ]
    for pos in np.flatnonzero(results.outcome != PENDING):
        p = int(pos)
        started = float(results.started_at[p])
        if started == started:  # an imported sample may not say when it started: no such line
            parts.append(encoder.case_started(p, int(results.attempts[p]), round(started * 1e6)))
        parts.append(encoder.case_ended(p, results))
    parts.append(ended_event(results, now_iso(), finish_status(results)))
    return "".join(parts)


def _log_matches(folder: Path, run: RunData) -> bool:
    """True when the folder's log already holds every finished case of the run."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            log = replay(folder / EVENTS)
    except DamagedLog:  # rewritten below: the damaged log is kept whole beside it
        set_aside(folder / EVENTS, None)
        return False
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if log.damage is not None:
        set_aside(folder / EVENTS, None)
        return False
    return log.case_ids == run.results.case_ids and bool(
        np.array_equal(log.results.outcome, run.results.outcome)
    )


def _in_place(run: RunData, store: str | os.PathLike[str] | None) -> bool:
    """A stored run is completed in its own folder unless `store` names another store."""
    if run.path is None:
        return False
    if store is None:
        return True
    return Path(store).expanduser().resolve() == run.path.parent.resolve()


def save_run(run: RunData, store: str | os.PathLike[str] | None = None) -> Path:
    """Write the run's folder and return its path.

    An in-memory run gets a new folder in `store` (default `runs`). A stored run is
    completed in place (`store` None or its own store), with its log locked and the
    temporary files a killed writer left there removed; given another `store`, it is
    written whole into a new folder there (e.g. its own disk is full) and `run.path` moves.

    Raises:
        OSError: the folder cannot be written (a full disk: the message says so and where);
            what was stored before stays whole.
    """
    if _in_place(run, store):
        assert run.path is not None
        folder = run.path
        folder.mkdir(parents=True, exist_ok=True)
        try:  # a run (or a resume) writing it right now: ConfigurationError
            log = lock_log(folder, append=True, cut=False)
        except OSError as exc:  # a FIFO, a device or a symlink as log: never written through
            raise ConfigurationError(
                f"cannot save into {folder}: its log cannot be written ({exc}); pass another "
                "store: run.save(store)"
            ) from None
        try:
            remove_stale_temps(folder, STORE_FILES)
            started_at = stored_started_at(folder) or first_started_at(run)
            _write(run, folder, started_at, rewrite_log=not _log_matches(folder, run))
        finally:
            log.close()
        return folder
    if run.path is None:
        started_at = first_started_at(run)
    else:  # a stored run copied elsewhere keeps when it started
        started_at = stored_started_at(run.path) or first_started_at(run)
    folder = new_run_folder("runs" if store is None else store, run.name)
    try:
        _write(run, folder, started_at, rewrite_log=True)
    except BaseException:  # the new folder holds nothing else: no half-saved run stays
        for name in STORE_FILES:
            (folder / name).unlink(missing_ok=True)
        remove_stale_temps(folder, STORE_FILES)
        with contextlib.suppress(OSError):
            folder.rmdir()
        raise
    run.path = folder
    return folder


def _write(run: RunData, folder: Path, started_at: str, *, rewrite_log: bool) -> None:
    """The data, the log (when it lacks cases) and the final files of `run` in `folder`."""
    saved_path = run.path
    try:
        data_file = write_data(run.data, folder)
        if rewrite_log:
            if run.results.has_transcripts:  # before the log that names their lines
                write_text(folder / TRANSCRIPTS, all_transcripts(run.results))
            labels = given_labels(run)  # a copy keeps its human labels (`eb.review`)
            if labels and folder != saved_path:
                write_text(folder / LABELS, "".join(label_line(x) for x in labels))
            write_text(folder / EVENTS, full_log(run, started_at, data_file))
        run.path = folder
        finish_files(run, started_at, now_iso(), finish_status(run.results))
    except OSError as exc:
        run.path = saved_path
        if not disk_full(exc):
            raise
        raise OSError(
            exc.errno,
            f"cannot save run {run.name!r} in {folder}: the disk is full ({exc.strerror}); "
            "free some space, or pass another store: run.save(store)",
        ) from exc
