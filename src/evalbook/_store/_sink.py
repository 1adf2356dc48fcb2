"""Writing a stored run as it goes: its log (`StoreSink`), opened new or continued.

`open_new()` starts a run's log (`run.started`, `score.defined`), `open_existing()` continues
one (`run.resumed`); the `StoreSink` of either appends each finished case to `events.jsonl`,
and `Prepared.finish()` logs `run.ended` and writes the final files. See
docs/file-formats.md for every file.
"""

from __future__ import annotations

import errno
import os
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._results import PENDING, Finished, Results
from .._model._scoring_rule import outcome_counts
from .._util._fs import remove_stale_temps, stage_bytes
from .._util._warn import warn
from .._version import __version__
from ._layout import DATA, EVENTS, FINAL_FILES, STORE_FILES, now_iso, open_regular
from ._log._file import LogFile, LogInUse
from ._log._read import EventLog, prepare_append
from ._log._write import LineEncoder, event_line
from ._parquet import parquet_bytes
from ._summary import finish_files
from ._transcripts import TranscriptFile, all_transcripts, transcript_line

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = [
    "Prepared",
    "RunStart",
    "StoreSink",
    "disk_full",
    "encode_data",
    "ended_event",
    "finish_status",
    "lock_log",
    "new_run_id",
    "open_existing",
    "open_new",
    "stage_data",
    "start_events",
    "write_data",
]

# a full disk, or the user's quota on it: what was written stays, the run goes on in memory
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def disk_full(exc: BaseException) -> bool:
    """True when `exc` says the disk (or the quota) is full."""
    return isinstance(exc, OSError) and exc.errno in _FULL


def _cause(exc: BaseException) -> str:
    """What went wrong, in words (a full disk said as such)."""
    if disk_full(exc):
        assert isinstance(exc, OSError)
        return f"the disk is full ({exc.strerror})"
    return f"{type(exc).__name__}: {exc}"


def _warn_not_stored(exc: BaseException, what: str | Path, folder: Path, kept: str) -> None:
    """The one warning of a run whose store stops taking writes: it goes on in memory."""
    warn(
        f"evalbook could not write {what}: {_cause(exc)}. The run goes on in memory and "
        f"returns every case; {kept}. To store the whole run: {_elsewhere(folder)}.",
        RuntimeWarning,
    )


def _elsewhere(folder: Path) -> str:
    """How to store a run that its own folder cannot hold."""
    return (
        "run.save(store) writes it into a new folder of another store (on a disk with "
        f"space), or run.save() completes {folder} once there is space"
    )


class StoreSink:
    """Appends a run's events to its `events.jsonl`; one write per finished case.

    Each finished case (the `case.started` lines noted since the last write, its
    `score.recorded` lines, then `case.ended`) is one `os.write`, done before `case_ended`
    returns, so a crash of the process loses at most the cases in flight (see
    `_log._file.LogFile`). A failing write (e.g. a full disk) leaves no partial line, warns once
    and turns the sink off: what was logged stays, the run itself carries on in memory.
    `logged` counts the finished cases the log holds.
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
        self.logged = 0
        self.transcripts = TranscriptFile(folder)
        self.ties: dict[int, str] = {}  # sample -> the tie of the transcript line written

    def write(self, text: str) -> None:
        """Append whole event lines (ASCII, as `_log._write` writes them)."""
        if self.error is not None:
            return
        try:
            self._log.write(text.encode())
        except OSError as exc:
            self._fail(exc)

    def _fail(self, exc: BaseException) -> None:
        self.fail(exc, f"the run log {self.path}")

    def fail(self, exc: BaseException, what: str | Path) -> None:
        """Turn the log off after a failed write to `what`, with the run's one warning."""
        if self.error is not None:
            return
        self.error = exc
        kept = f"the stored run keeps what was logged before ({self.logged} cases; it loads "
        _warn_not_stored(exc, what, self.folder, kept + "as an incomplete run)")

    def case_ended(self, pos: int, case: Finished) -> None:
        """Log a finished case, after the `case.started` lines noted since the last write.

        Its transcript goes first, to `transcripts.jsonl`, and its `case.ended` names it.
        """
        if self.error is not None:
            return
        try:
            tie = self.transcript(pos, case)
            data = self._block(pos, case, self._started, tie).encode()
            self._started.clear()
            self._log.write(data)
        except Exception as exc:  # never let the log break a run
            self._fail(exc)
            return
        self.logged += 1

    def transcript(self, pos: int, case: Finished) -> str | None:
        """Write the sample's transcript line (if it has a transcript); its tie.

        A transcript this folder holds already (a sample a resume kept) is not written again.
        """
        if case.transcript is None:
            ref = case.stored_transcript
            return None if ref is None else ref.tie
        cid, epoch = self.encoder.case_ids[pos // self.encoder.epochs], pos % self.encoder.epochs
        line, tie = transcript_line(cid, epoch + 1, case.transcript)
        self.transcripts.write(line)
        self.ties[pos] = tie
        return tie

    def close(self) -> None:
        """Write the `case.started` lines still noted, then close the log."""
        if self._started and self.error is None:
            at = self.encoder.case_started
            self.write("".join(at(p, a, t) for p, a, t in self._started))
            self._started.clear()
        self._log.close()
        self.transcripts.close()


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


def encode_data(frame: pd.DataFrame, folder: Path) -> bytes | None:
    """The input data as the bytes of `data.parquet`, in memory; None when Parquet cannot.

    Encoding first means that no file is made for data that cannot be stored, and that a
    run's log, not its data, is the first file of its folder.
    """
    try:
        return parquet_bytes(frame, "data", index=True)
    except Exception as exc:  # columns pyarrow cannot hold (mixed objects): go on without
        warn(
            f"evalbook could not store the input data in {folder / DATA} ({exc}); the run is "
            "stored without it, so a loaded copy has no data columns to rescore with (rescore "
            "the run in memory, or pass data Parquet can hold)",
            RuntimeWarning,
        )
        return None


def _holds(path: Path, content: bytes) -> bool:
    """True when the file at `path` already holds exactly `content` (nothing to write)."""
    try:
        fd = open_regular(path)
    except OSError:  # absent, or not a file evalbook wrote
        return False
    with os.fdopen(fd, "rb") as f:
        if os.fstat(f.fileno()).st_size != len(content):
            return False
        return f.read(len(content) + 1) == content


def stage_data(folder: Path, content: bytes | None) -> Path | None:
    """Write new data next to `data.parquet` (a temporary file), for a rename into place.

    None when there is nothing to write: no data, or the stored file holds these bytes
    already (a resume with the same data keeps its file untouched). Raises OSError (a full
    disk) with nothing left behind: the stored file, if any, stays as it was.
    """
    if content is None or _holds(folder / DATA, content):
        return None
    return stage_bytes(folder / DATA, content)


def write_data(frame: pd.DataFrame, folder: Path) -> str | None:
    """Store the input data (so a loaded run can be rescored); None when Parquet cannot.

    The old `data.parquet` stays until the new one is whole (a full disk: OSError, and the
    old file is kept).
    """
    content = encode_data(frame, folder)
    if content is None:
        return None
    staged = stage_data(folder, content)
    if staged is not None:
        os.replace(staged, folder / DATA)
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


def new_run_id() -> str:
    """A new run's id: 12 hex digits, random (two runs of one name never share one)."""
    return uuid.uuid4().hex[:12]


@dataclass(frozen=True, slots=True)
class RunStart:
    """Who a run is, as its log's first lines say: `open_new` and `open_existing` take it.

    A new run gets a new id and starts now unless told otherwise (a resume keeps both).
    """

    name: str
    options: dict[str, Any]
    definitions: Sequence[ScoreDefinition]
    case_ids: Sequence[str]
    run_id: str = field(default_factory=new_run_id)
    started_at: str = field(default_factory=now_iso)


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
        status = finish_status(run.results)
        stopped = run.options.get("stopped")
        if isinstance(stopped, dict) and stopped.get("decision") != "undecided":
            status = "stopped"  # early, by stop_when= (docs/spend-less.md)
        ended_at = now_iso()
        sink.write(ended_event(run.results, ended_at, status, stopped))
        sink.close()
        for pos, tie in sink.ties.items():  # the final cases.parquet names them too
            run.results.ties[pos] = tie
        if sink.error is not None:
            return
        try:
            finish_files(run, self.started_at, ended_at, status)
        except Exception as exc:  # none of the final files is left: the log decides
            warn(
                f"evalbook could not write the final files of {run.path}: {_cause(exc)}. The run "
                f"log is complete, so eb.load_run() still works. To store them too: "
                f"{_elsewhere(sink.folder)}.",
                RuntimeWarning,
            )


def ended_event(results: Results, ended_at: str, status: str, stopped: Any = None) -> str:
    """The `run.ended` line: how the run ended and its outcome counts (and an early stop's
    decision, `stopped`, which a read of the log puts into the run's options)."""
    counts = outcome_counts(results)
    extra = {} if stopped is None else {"stopped": stopped}
    return event_line(
        "run.ended",
        ended_at=ended_at,
        status=status,
        n_cases=results.n_cases,
        counts=counts,
        **extra,
    )


def finish_status(results: Results) -> str:
    """`complete` when every case has a final outcome, else `incomplete`."""
    return "incomplete" if bool(np.any(results.outcome == PENDING)) else "complete"


def open_new(
    folder: Path, run: RunStart, frame: pd.DataFrame, results: Results, todo: Sequence[int] | None
) -> Prepared:
    """Start the log of a new stored run (cases already in `results` are logged at once).

    The log is the folder's first file, and it appears with its `run.started` and
    `score.defined` lines (written to a temporary file, then renamed: never an empty log);
    `data.parquet` comes second. A kill in between leaves a run that loads (without its data
    columns, with a warning), never a folder of data without a log.
    """
    content = encode_data(frame, folder)  # in memory: no file yet
    encoder = LineEncoder(run.definitions, run.case_ids, results.epochs)
    head = start_events(
        run.run_id,
        run.name,
        run.started_at,
        run.case_ids,
        run.options,
        run.definitions,
        None if content is None else DATA,
    )
    done = np.flatnonzero(results.outcome != PENDING)
    if todo is None:
        todo = range(results.n_samples)
    transcripts = TranscriptFile(folder)
    try:  # those of samples already in `results` (kept from another folder), before the log
        if results.has_transcripts:
            transcripts.write(all_transcripts(results))
    except OSError as exc:
        _warn_not_stored(exc, transcripts.path, folder, "nothing of it is stored")
        return Prepared(run.name, run.run_id, folder, results, todo, None, run.started_at)
    finally:
        transcripts.close()
    head += "".join(encoder.case_ended(int(p), results) for p in done)
    try:
        os.replace(stage_bytes(folder / EVENTS, head.encode()), folder / EVENTS)
    except OSError as exc:  # not even the head fits: nothing is stored, the folder is empty
        _warn_not_stored(exc, folder / EVENTS, folder, "nothing of it is stored")
        return Prepared(run.name, run.run_id, folder, results, todo, None, run.started_at)
    sink = StoreSink(folder, encoder, append=True)  # locks the log its head is already in
    sink.logged = len(done)
    try:
        staged = stage_data(folder, content)
        if staged is not None:
            os.replace(staged, folder / DATA)
    except OSError as exc:  # the log says data.parquet: a load warns that it is missing
        sink.fail(exc, folder / DATA)
    return Prepared(run.name, run.run_id, folder, results, todo, sink, run.started_at)


def open_existing(
    folder: Path,
    run: RunStart,
    frame: pd.DataFrame,
    results: Results,
    todo: Sequence[int],
    log: LogFile,
    found: EventLog,
) -> Prepared:
    """Continue the log of a stored run (resume): its final files go until the run ends.

    `log` is the log `lock_log` opened before the stored state was read (a resume takes the
    lock first, so that two processes cannot both run what the log lacks), and `found` what
    that one read of it found (where it ends, where it is damaged). With the lock
    held, temporary files a killed writer left are removed. Nothing stored is changed
    until it can all be: new data is written next to `data.parquet` first, then
    `run.resumed` is logged, and only then does the new data replace the old and the final
    files go. A failure on the way (a full disk) leaves the stored run as it was; the run
    then goes on in memory, with one warning.
    """
    encoder = LineEncoder(run.definitions, run.case_ids, results.epochs)
    sink = StoreSink(folder, encoder, append=True, log=log)
    try:
        # locked uncut, so that reading it warned of a truncated line; now cut there, and a
        # damaged log set aside
        relog = prepare_append(log, encoder, results, found)
        remove_stale_temps(folder, STORE_FILES)  # the lock is held: no writer uses them
        content = encode_data(frame, folder)
    except BaseException:  # a failed resume releases its lock: a second try may then run
        sink.close()
        raise
    try:
        _continue(sink, run, folder, content, results, todo, relog)
    except BaseException as exc:  # a failed resume releases its lock: a second try may then run
        sink.close()
        if isinstance(exc, OSError):
            raise ConfigurationError(
                f"resume={str(folder)!r}: cannot replace its stored files "
                f"({type(exc).__name__}: {exc}); make the folder writable (or free the path) "
                "and resume again: nothing of the run was lost"
            ) from None
        raise
    return Prepared(run.name, run.run_id, folder, results, todo, sink, run.started_at)


def _continue(
    sink: StoreSink,
    run: RunStart,
    folder: Path,
    content: bytes | None,
    results: Results,
    todo: Sequence[int],
    relog: str,
) -> None:
    """Log `run.resumed` (and the kept cases a cut log lost), then swap in the new data and
    set the final files aside: from now on the log decides until the run ends."""
    sink.logged = results.n_samples - len(todo)
    staged: Path | None = None
    try:
        staged = stage_data(folder, content)
    except OSError as exc:
        sink.fail(exc, folder / DATA)
    sink.write(
        event_line(
            "run.resumed",
            at=now_iso(),
            options=run.options,
            data_file=None if content is None else DATA,
            kept=results.n_samples - len(todo),
            to_run=len(todo),
            case_ids=list(run.case_ids),
        )
    )
    if relog:
        sink.write(relog)
    if sink.error is not None:
        if staged is not None:
            staged.unlink(missing_ok=True)
    else:
        if staged is not None:
            os.replace(staged, folder / DATA)
        elif content is None:  # data Parquet cannot hold: the stored file is not this data
            (folder / DATA).unlink(missing_ok=True)
        for name in FINAL_FILES:  # stale from now on: the log decides until the run ends
            (folder / name).unlink(missing_ok=True)
