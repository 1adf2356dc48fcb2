"""Writing a stored run as it goes: its log (`StoreSink`), opened new or continued.

`open_new()` starts a run's log (`run.started`, `score.defined`), `open_existing()` continues
one (`run.resumed`); the `StoreSink` of either appends each finished case to `events.jsonl`,
and `Prepared.finish()` logs `run.ended` and writes the final files. See
docs/file-formats.md for every file.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._results import PENDING, Finished, Results
from .._model._scores import ScoreDefinition
from .._model._scoring import outcome_counts
from .._version import __version__
from ._events import LineEncoder, event_line
from ._layout import DATA, EVENTS, FINAL_FILES, now_iso
from ._log import LogFile, LogInUse
from ._parquet import write_parquet
from ._summary import finish_files

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = [
    "Prepared",
    "RunStart",
    "StoreSink",
    "ended_event",
    "finish_status",
    "lock_log",
    "open_existing",
    "open_new",
    "start_events",
    "write_data",
]


class StoreSink:
    """Appends a run's events to its `events.jsonl`; one write per finished case.

    Each finished case (the `case.started` lines noted since the last write, its
    `score.recorded` lines, then `case.ended`) is one `os.write`, done before `case_ended`
    returns, so a crash of the process loses at most the cases in flight (see
    `_log.LogFile`). A failing write (e.g. a full disk) warns once and turns the sink off:
    the run itself carries on in memory.
    """

    def __init__(
        self, folder: Path, encoder: LineEncoder, *, append: bool, log: LogFile | None = None
    ) -> None:
        self.folder = folder
        self.path = folder / EVENTS
        self.encoder = encoder
        # a resume passes the log it locked before reading the stored state
        self._log = log if log is not None else lock_log(folder, append=append)
        self._started: list[tuple[int, int, int]] = []  # (pos, attempt, at_us) not yet written
        # an attempt's start is only noted (its line goes out with the next write): the
        # list's own append, so that noting it costs no Python call
        self.case_started: Callable[[tuple[int, int, int]], None] = self._started.append
        self._block = encoder.case_block
        self.error: BaseException | None = None

    def write(self, text: str) -> None:
        """Append whole event lines (ASCII, as `_events` writes them)."""
        if self.error is not None:
            return
        try:
            self._log.write(text.encode())
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.error = exc
        warnings.warn(
            f"evalbook could not write the run log {self.path} ({exc}); the run carries on in "
            "memory, but the stored run is incomplete. Call run.save() once the problem is "
            "fixed.",
            RuntimeWarning,
            stacklevel=2,
        )

    def case_ended(self, pos: int, case: Finished) -> None:
        """Log a finished case, after the `case.started` lines noted since the last write."""
        if self.error is not None:
            return
        try:
            data = self._block(pos, case, self._started).encode()
            self._started.clear()
            self._log.write(data)
        except Exception as exc:  # never let the log break a run
            self._fail(exc)

    def close(self) -> None:
        """Write the `case.started` lines still noted, then close the log."""
        if self._started and self.error is None:
            at = self.encoder.case_started
            self.write("".join(at(p, a, t) for p, a, t in self._started))
            self._started.clear()
        self._log.close()


def lock_log(folder: Path, *, append: bool, cut: bool = True) -> LogFile:
    """Open (and lock) a run's `events.jsonl`; ConfigurationError while another writer has it."""
    try:
        return LogFile(folder / EVENTS, append=append, cut=cut)
    except LogInUse:
        raise ConfigurationError(
            f"cannot write {folder}: another run (or a resume) is writing to it right now; "
            "wait for it to end, or resume into a new folder with "
            "resume=eb.load_run(path), store=..."
        ) from None


def write_data(frame: pd.DataFrame, folder: Path) -> str | None:
    """Store the input data (so a loaded run can be rescored); None when Parquet cannot."""
    try:
        write_parquet(frame, folder / DATA, "data", index=True)
    except Exception as exc:  # columns pyarrow cannot hold (mixed objects): go on without
        (folder / DATA).unlink(missing_ok=True)
        warnings.warn(
            f"evalbook could not store the input data in {folder / DATA} ({exc}); the run is "
            "stored without it, so a loaded copy has no data columns to rescore with (rescore "
            "the run in memory, or pass data Parquet can hold)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return DATA


def start_events(
    run_id: str,
    name: str,
    started_at: str,
    case_ids: Sequence[str],
    options: dict[str, Any],
    definitions: Sequence[Any],
    data_file: str | None,
) -> str:
    """The `run.started` line and one `score.defined` line per definition."""
    lines = [
        event_line(
            "run.started",
            run_id=run_id,
            name=name,
            started_at=started_at,
            evalbook_version=__version__,
            scores=[d.name for d in definitions],
            options=options,
            data_file=data_file,
            case_ids=list(case_ids),
        )
    ]
    lines += [
        event_line("score.defined", position=j, definition=d.model_dump(mode="json"))
        for j, d in enumerate(definitions)
    ]
    return "".join(lines)


@dataclass(frozen=True, slots=True)
class RunStart:
    """Who a run is, as its log's first lines say: `open_new` and `open_existing` take it."""

    name: str
    run_id: str
    started_at: str
    options: dict[str, Any]
    definitions: Sequence[ScoreDefinition]
    case_ids: Sequence[str]


@dataclass
class Prepared:
    """A run ready to execute: its identity, results (maybe pre-filled) and sink."""

    name: str
    run_id: str
    path: Path | None
    results: Results
    todo: Sequence[int]
    sink: StoreSink | None
    started_at: str

    def close(self) -> None:
        """Close the log without ending the run (an exception or cancellation)."""
        if self.sink is not None:
            self.sink.close()

    def finish(self, run: RunData) -> None:
        """Log `run.ended` and write the final files."""
        if self.sink is None:
            return
        sink = self.sink
        status = finish_status(run._results)
        ended_at = now_iso()
        sink.write(ended_event(run._results, ended_at, status))
        sink.close()
        if sink.error is not None:
            return
        try:
            finish_files(run, self.started_at, ended_at, status)
        except Exception as exc:
            warnings.warn(
                f"evalbook could not write the final files of {run.path} ({exc}); the run log "
                "is complete, so eb.load_run() still works. Call run.save() to retry.",
                RuntimeWarning,
                stacklevel=2,
            )


def ended_event(results: Results, ended_at: str, status: str) -> str:
    """The `run.ended` line: how the run ended and its outcome counts."""
    counts = outcome_counts(results)
    return event_line(
        "run.ended", ended_at=ended_at, status=status, n_cases=results.n_cases, counts=counts
    )


def finish_status(results: Results) -> str:
    """`complete` when every case has a final outcome, else `incomplete`."""
    return "incomplete" if bool(np.any(results.outcome == PENDING)) else "complete"


def open_new(
    folder: Path, run: RunStart, frame: pd.DataFrame, results: Results, todo: Sequence[int] | None
) -> Prepared:
    """Start the log of a new stored run (cases already in `results` are logged at once)."""
    data_file = write_data(frame, folder)
    encoder = LineEncoder(run.definitions, run.case_ids)
    sink = StoreSink(folder, encoder, append=False)
    head = start_events(
        run.run_id, run.name, run.started_at, run.case_ids, run.options, run.definitions, data_file
    )
    done = np.flatnonzero(results.outcome != PENDING)
    sink.write(head + "".join(encoder.case_ended(int(p), results) for p in done))
    if todo is None:
        todo = range(results.n_cases)
    return Prepared(run.name, run.run_id, folder, results, todo, sink, run.started_at)


def open_existing(
    folder: Path,
    run: RunStart,
    frame: pd.DataFrame,
    results: Results,
    todo: Sequence[int],
    log: LogFile | None = None,
) -> Prepared:
    """Continue the log of a stored run (resume): its final files go until the run ends.

    `log` is the log `lock_log` opened before the stored state was read (a resume takes the
    lock first, so that two processes cannot both run what the log lacks).
    """
    # opening locks the log (ConfigurationError if another process writes it) and cuts
    # what a crash left after the last complete line
    encoder = LineEncoder(run.definitions, run.case_ids)
    sink = StoreSink(folder, encoder, append=True, log=log)
    try:
        if log is not None:  # locked uncut, so that reading it warned of a truncated line
            log.cut_partial_line()
        for name in FINAL_FILES:
            (folder / name).unlink(missing_ok=True)
        data_file = write_data(frame, folder)
    except BaseException:  # a failed resume releases its lock: a second try may then run
        sink.close()
        raise
    sink.write(
        event_line(
            "run.resumed",
            at=now_iso(),
            options=run.options,
            data_file=data_file,
            kept=results.n_cases - len(todo),
            to_run=len(todo),
            case_ids=list(run.case_ids),
        )
    )
    return Prepared(run.name, run.run_id, folder, results, todo, sink, run.started_at)
