"""`resume=`: continue an interrupted run, keeping every case that has a final outcome.

`RetryErrors` is the same machinery pointed at a new run: it keeps a stored run's passed
and failed cases and runs the rest (errored, timed out, never run) into a new folder.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._results import ERRORED, FAILED, PASSED, PENDING, TIMED_OUT, Results
from .._model._run_data import RunData
from .._model._transcript import Transcript
from .._store._door import (
    Prepared,
    RunStart,
    first_started_at,
    new_run_id,
    open_run,
    reopen,
    run_folder,
)
from .._util._advice import advice

if TYPE_CHECKING:
    from ._plan import Plan

__all__ = ["RetryErrors", "resume_source"]


@dataclass(frozen=True)
class RetryErrors:
    """A `resume=` that re-runs a stored run's errored and timed-out cases into a new run.

    The new run (named `name`, with a new id and folder) keeps every passed and failed case
    of `source` as it is (output, records, times) and runs the others: errored, timed out,
    and those that never ran, as a resume does. `source` is only read. The same mismatches
    that a resume refuses are refused (a `ConfigurationError` starting with `label`);
    `ready` is called once they are checked, before any case runs.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> def task(x):
        ...     if x == 2:
        ...         raise ValueError("flaky")
        ...     return x
        >>> df = pd.DataFrame({"x": [1, 2]})
        >>> first = eb.run(df, task=task, scorers=[lambda output: 1.0], store=None,
        ...                progress=False)
        >>> RetryErrors(first, "again").counts()
        {'errored': 1, 'timed_out': 0, 'not_run': 0}
        >>> eb.run(df, task=lambda x: x, scorers=[lambda output: 1.0], store=None,
        ...        resume=RetryErrors(first, "again"), progress=False).headline.text
        'lambda 100% · completed 100%'
    """

    source: RunData
    name: str
    label: str = "retrying errors"
    ready: Callable[[], None] | None = None
    # only errored and timed-out samples of these origins run again (None: of any origin);
    # the others are kept as they are, as passed and failed ones are (`--origin`)
    origins: frozenset[str] | None = None

    def counts(self) -> dict[str, int]:
        """How many of the source's samples run again, by why: errored, timed out, not run."""
        src = self.source.results
        outcome = src.outcome
        again = np.array([self.again(src, i) for i in range(src.n_samples)], dtype=bool)
        return {
            "errored": int(((outcome == ERRORED) & again).sum()),
            "timed_out": int(((outcome == TIMED_OUT) & again).sum()),
            "not_run": int((outcome == PENDING).sum()),
        }

    def again(self, src: Results, pos: int) -> bool:
        """Whether sample `pos` of the source runs again: not run, or errored or timed out
        (of one of `origins`, when given)."""
        outcome = src.outcome[pos]
        if outcome == PENDING:
            return True
        if outcome not in (ERRORED, TIMED_OUT):
            return False
        return self.origins is None or src.origin[pos] in self.origins


def _stored_folder(resume: Any) -> Path | None:
    """The run folder a resume continues in place; None for a Run held only in memory."""
    if isinstance(resume, RunData):
        return resume.path
    if isinstance(resume, str | os.PathLike):
        path = Path(resume).expanduser()
        if not path.exists():
            raise ConfigurationError(
                f"resume={str(resume)!r}: there is no run folder at {path.resolve()}; pass the "
                f"path of a stored run (see {advice('eb.runs()', 'evalbook runs')}) or a Run"
            )
        try:
            return run_folder(path)
        except FileNotFoundError as exc:
            raise ConfigurationError(f"resume={str(resume)!r}: {exc}") from None
    raise ConfigurationError(
        f"resume= takes the path of a stored run or a Run, not {type(resume).__name__}"
    )


def _examples(ids: set[str]) -> str:
    shown = sorted(ids)[:3]
    return ", ".join(repr(i) for i in shown) + (" …" if len(ids) > 3 else "")


def _check_same(
    source: RunData,
    plan: Plan,
    options: dict[str, Any],
    what: str = "resume=",
    damage: str | None = None,
) -> None:
    stored = [d.model_dump(mode="json") for d in source.definitions]
    now = [d.model_dump(mode="json") for d in plan.definitions]
    if not stored and now and damage is not None:
        raise ConfigurationError(
            f"{what} cannot continue the stored run {source.name!r}: its log is damaged "
            f"before its score definitions ({damage}), so no result it holds can be tied to "
            f"a score. {advice('eb.load_run(path)', 'evalbook show RUN')} shows what it holds; "
            "run again into a new folder"
        )
    if stored != now:
        old = ", ".join(d.name for d in source.definitions) or "(none)"
        new = ", ".join(d.name for d in plan.definitions) or "(none)"
        detail = f"stored: {old}; now: {new}" if old != new else "their definitions differ"
        raise ConfigurationError(
            f"{what} needs the same scores as the stored run {source.name!r} ({detail}). "
            "Pass the same scorers and scores, or use run.rescore(...) to score stored "
            "outputs with other scorers"
        )
    old_ids, new_ids = set(source.results.case_ids), set(plan.case_ids)
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
            f"{what} needs the same cases as the stored run {source.name!r}: " + "; ".join(parts)
        )
    stored_k, k = source.results.epochs, options.get("epochs", 1)
    if stored_k != k:
        raise ConfigurationError(
            f"{what} needs the same epochs as the stored run {source.name!r} (stored: "
            f"epochs={stored_k}; now: epochs={k}); pass epochs={stored_k}"
        )


def resume_source(
    resume: Any,
    plan: Plan,
    frame: pd.DataFrame,
    options: dict[str, Any],
    store: str | os.PathLike[str] | None,
) -> Prepared:
    """Pre-fill a run's results from a stored (or in-memory) run; only the rest will run.

    A stored run is reopened by the store (its log locked, then read once); a resume that
    fails a check releases it. A `RetryErrors` reads nothing more and starts a new run (see
    `_retry`).
    """
    if isinstance(resume, RetryErrors):
        return _retry(resume, plan, frame, options, store)
    folder = _stored_folder(resume)
    if folder is None:
        return _from_memory(resume, plan, frame, options, store)
    with reopen(folder, f"resume={str(resume)!r}") as stored:
        _check_same(stored.run, plan, options, damage=stored.damage_note)
        results, todo = _kept(stored.run, plan)
        return stored.append(options, plan.definitions, frame, results, todo)


def _kept(
    source: RunData,
    plan: Plan,
    keep: frozenset[int] = frozenset((PASSED, FAILED, ERRORED, TIMED_OUT)),
    again: Callable[[Results, int], bool] | None = None,
) -> tuple[Results, list[int]]:
    """The plan's results with every stored case whose outcome is in `keep`, and the rest.

    A resume keeps every final outcome; a retry of errors only the passed and failed cases,
    or (`again`, a retry of some origins) every sample `again` does not pick.
    """
    src = source.results
    k = src.epochs  # the same as the plan's (`_check_same`)
    results = Results(plan.case_ids, len(plan.definitions), plan.text, k)  # one warning a run
    where = {cid: i for i, cid in enumerate(src.case_ids)}
    todo: list[int] = []
    kept: list[tuple[int, int]] = []
    for pos in range(results.n_samples):  # samples in the plan's order (data may be reordered)
        i = where[plan.case_ids[pos // k]] * k + pos % k
        if (src.outcome[i] not in keep) if again is None else again(src, i):
            todo.append(pos)
            continue
        results.set_case(pos, src.finished(i))
        kept.append((pos, i))
    if src.has_transcripts:  # the kept samples' transcripts: the source's, read on first use
        results.transcripts = None
        results.transcript_source = partial(_kept_transcripts, src, kept, results.n_samples)
    return results, todo


def _kept_transcripts(src: Results, kept: list[tuple[int, int]], n: int) -> list[Transcript | None]:
    """The transcripts of the kept samples (`(pos, source pos)`), by their new positions."""
    out: list[Transcript | None] = [None] * n
    for pos, i in kept:
        out[pos] = src.transcript_of(i)
    return out


def _from_memory(
    source: RunData,
    plan: Plan,
    frame: pd.DataFrame,
    options: dict[str, Any],
    store: str | os.PathLike[str] | None,
) -> Prepared:
    """Resume a Run that has no folder: in memory, or into a new folder of `store`."""
    _check_same(source, plan, options)
    results, todo = _kept(source, plan)
    # in memory it is the same run, so it keeps its id; in a new folder, a new stored run
    run_id = source.id if store is None else new_run_id()
    started_at = first_started_at(source)
    start = RunStart(source.name, options, plan.definitions, plan.case_ids, run_id, started_at)
    return open_run(store, start, frame, results, todo)


def _retry(
    retry: RetryErrors,
    plan: Plan,
    frame: pd.DataFrame,
    options: dict[str, Any],
    store: str | os.PathLike[str] | None,
) -> Prepared:
    """A new run holding the source's passed and failed cases; the rest is its todo.

    It is a new run, so it starts now, with a new id, and records which run it retried
    (`retried_from` among its options, as a rescore records `rescored_from`).
    """
    source = retry.source
    _check_same(source, plan, options, retry.label)
    results, todo = _kept(source, plan, frozenset((PASSED, FAILED)), retry.again)
    options["retried_from"] = source.id  # the run's own dict: stored and returned alike
    start = RunStart(retry.name, options, plan.definitions, plan.case_ids)  # a new id, now
    prepared = open_run(store, start, frame, results, todo)
    if retry.ready is not None:  # every check passed (the name's too); no case has run
        retry.ready()
    return prepared
