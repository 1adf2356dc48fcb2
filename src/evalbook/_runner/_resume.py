"""`resume=`: continue an interrupted run, keeping every case that has a final outcome."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .._errors import ConfigurationError
from .._model._results import PENDING, Results
from .._model._run_data import RunData
from .._store._layout import EVENTS, FINAL_FILES, first_started_at, new_run_folder
from .._store._load import read_run, run_folder, stored_started_at
from .._store._log import LogFile
from .._store._sink import Prepared, RunStart, lock_log, open_existing, open_new

if TYPE_CHECKING:
    from ._plan import Plan

__all__ = ["resume_source"]


def _stored_folder(resume: Any) -> Path | None:
    """The run folder a resume continues in place; None for a Run held only in memory."""
    if isinstance(resume, RunData):
        return resume.path
    if isinstance(resume, str | os.PathLike):
        path = Path(resume).expanduser()
        if not path.exists():
            raise ConfigurationError(
                f"resume={str(resume)!r}: there is no run folder at {path.resolve()}; pass the "
                "path of a stored run (see eb.runs()) or a Run"
            )
        try:
            return run_folder(path)
        except FileNotFoundError as exc:
            raise ConfigurationError(f"resume={str(resume)!r}: {exc}") from None
    raise ConfigurationError(
        f"resume= takes the path of a stored run or a Run, not {type(resume).__name__}"
    )


def _lock(folder: Path) -> LogFile | None:
    """Lock the folder's log before its state is read: a second resume is refused here.

    Reading first let two processes read the same state, then each ran (and logged) the
    cases the log lacked, one after the other. A folder with no log and no final files is
    no run: nothing is created, `read_run` says so.
    """
    if not (folder / EVENTS).exists() and not all((folder / f).exists() for f in FINAL_FILES):
        return None
    try:
        return lock_log(folder, append=True, cut=False)  # the read warns of a cut line
    except OSError as exc:  # a FIFO, a device or a symlink as log: never written through
        raise ConfigurationError(
            f"resume={str(folder)!r}: cannot continue its log ({exc})"
        ) from None


def _read(resume: Any, folder: Path) -> RunData:
    try:
        return read_run(folder, warn_incomplete=False)  # resuming runs the rest
    except FileNotFoundError as exc:
        raise ConfigurationError(f"resume={str(resume)!r}: {exc}") from None


def _examples(ids: set[str]) -> str:
    shown = sorted(ids)[:3]
    return ", ".join(repr(i) for i in shown) + (" …" if len(ids) > 3 else "")


def _check_same(source: RunData, plan: Plan) -> None:
    stored = [d.model_dump(mode="json") for d in source.definitions]
    now = [d.model_dump(mode="json") for d in plan.definitions]
    if stored != now:
        old = ", ".join(d.name for d in source.definitions) or "(none)"
        new = ", ".join(d.name for d in plan.definitions) or "(none)"
        detail = f"stored: {old}; now: {new}" if old != new else "their definitions differ"
        raise ConfigurationError(
            f"resume= needs the same scores as the stored run {source.name!r} ({detail}). "
            "Pass the same scorers and scores, or use run.rescore(...) to score stored "
            "outputs with other scorers"
        )
    old_ids, new_ids = set(source._results.case_ids), set(plan.case_ids)
    if old_ids != new_ids:
        missing, extra = old_ids - new_ids, new_ids - old_ids
        parts = []
        if missing:
            parts.append(f"{len(missing)} stored cases are not in data ({_examples(missing)})")
        if extra:
            parts.append(
                f"{len(extra)} cases of data are not in the stored run ({_examples(extra)})"
            )
        raise ConfigurationError(
            f"resume= needs the same cases as the stored run {source.name!r}: " + "; ".join(parts)
        )


def resume_source(
    resume: Any,
    plan: Plan,
    frame: pd.DataFrame,
    options: dict[str, Any],
    store: str | os.PathLike[str] | None,
) -> Prepared:
    """Pre-fill a run's results from a stored (or in-memory) run; only the rest will run.

    A stored run's log is locked first, then read; a resume that fails releases it.
    """
    folder = _stored_folder(resume)
    if folder is None:
        return _from_memory(resume, plan, frame, options, store)
    log = _lock(folder)
    try:
        source = _read(resume, folder)
        _check_same(source, plan)
        results, todo = _kept(source, plan)
        started_at = stored_started_at(folder) or first_started_at(source._results)
        start = RunStart(
            source.name, source.id, started_at, options, plan.definitions, plan.case_ids
        )
    except BaseException:
        if log is not None:
            log.close()
        raise
    return open_existing(folder, start, frame, results, todo, log)


def _kept(source: RunData, plan: Plan) -> tuple[Results, list[int]]:
    """The plan's results with every stored case that has a final outcome, and the rest."""
    src = source._results
    results = Results(plan.case_ids, len(plan.definitions), plan.text)  # one warning a run
    where = {cid: i for i, cid in enumerate(src.case_ids)}
    todo: list[int] = []
    for pos, cid in enumerate(plan.case_ids):
        i = where[cid]
        if src.outcome[i] == PENDING:
            todo.append(pos)
            continue
        results.set_case(pos, src.finished(i))
    return results, todo


def _from_memory(
    source: RunData,
    plan: Plan,
    frame: pd.DataFrame,
    options: dict[str, Any],
    store: str | os.PathLike[str] | None,
) -> Prepared:
    """Resume a Run that has no folder: in memory, or into a new folder of `store`."""
    _check_same(source, plan)
    src = source._results
    results, todo = _kept(source, plan)
    started_at = first_started_at(src)
    if store is None:
        return Prepared(source.name, source.id, None, results, todo, None, started_at)
    run_id = uuid.uuid4().hex[:12]
    start = RunStart(source.name, run_id, started_at, options, plan.definitions, plan.case_ids)
    return open_new(new_run_folder(store, source.name), start, frame, results, todo)
