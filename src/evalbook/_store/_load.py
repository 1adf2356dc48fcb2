"""Reading the run store: `eb.load_run(path)` and `eb.runs(store)`."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._model._contract import ERROR, SCORED, STATUSES, InvalidScore, validate_value
from .._model._definitions import Grader, ScoreDefinition, reading_stored
from .._model._origin import ORIGINS, record_origin
from .._model._results import OUTCOMES, PENDING, Results
from .._model._run_data import RunData
from .._model._scoring_rule import outcome_counts
from .._model._tables import STEP_COUNT_COLUMNS
from .._model._tally import Tally, usage_from_json
from .._util._advice import advice
from .._util._text import clean
from .._util._warn import warn
from ._codec import OUTPUT_KINDS, read_file_outputs
from ._layout import (
    CASES,
    DATA,
    EVENTS,
    FINAL_FILES,
    PARQUET_CAP,
    SCORES,
    STEPS,
    SUMMARY,
    holds_no_run,
    read_regular,
)
from ._log._file import being_written
from ._log._read import (
    EventLog,
    SchemaVersionError,
    replay,
    tries_in_log,
    warn_invalid,
    warn_read,
)
from ._parquet import frame_of, read_parquet, text_list
from ._summary import read_summary, records
from ._ties import crc_of, mismatch
from ._transcripts import one_transcript_reader, steps_file_reader, transcript_reader

__all__ = ["read_run", "read_stored", "run_folder", "summary_of"]


def run_folder(path: str | os.PathLike[str]) -> Path:
    """The run folder `path` names (the folder itself, or a file in it); FileNotFoundError."""
    folder = Path(path).expanduser().resolve()
    if folder.is_file():
        folder = folder.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"no run folder at {folder}")
    return folder


def _data(folder: Path, data_file: str | None, case_ids: list[str]) -> pd.DataFrame:
    """The stored input data; without it (none stored, or a damaged file: a warning) the run
    loads with no data columns, since the log holds every result but not the input."""
    if data_file and (folder / DATA).exists():
        try:
            return frame_of(read_parquet(folder / DATA))
        except SchemaVersionError:
            raise
        except Exception as exc:  # garbage or cut short: the results are in the log anyway
            warn(
                f"{folder / DATA} cannot be read ({type(exc).__name__}: {exc}); the run loads "
                "without its data columns (rescoring needs them: pass the data again)",
                RuntimeWarning,
            )
    elif data_file:  # the log names it, but a kill (or a full disk) came before it was written
        warn(
            f"{folder / DATA} is missing (the run's log names it: the run was stopped while it "
            "started, or the disk was full); the run loads without its data columns "
            "(rescoring needs them: pass the data again)",
            RuntimeWarning,
        )
    return pd.DataFrame(index=pd.Index(case_ids, dtype=object))


def summary_of(folder: Path) -> dict[str, Any] | None:
    """The run's `summary.json`; None when absent, damaged, or not of the folder's log (a
    warning: the log decides)."""
    if not (folder / SUMMARY).exists():
        return None
    try:
        summary = read_summary(folder / SUMMARY)
    except SchemaVersionError:
        raise
    except (OSError, ValueError) as exc:  # e.g. cut short by a power cut
        warn(
            f"{folder / SUMMARY} cannot be read ({type(exc).__name__}: {exc}); using {EVENTS}",
            RuntimeWarning,
        )
        return None
    reason = mismatch(folder, summary)
    if reason is not None:
        warn(
            f"{folder}: the final files are not those of its log ({reason}); using {EVENTS}",
            RuntimeWarning,
        )
        return None
    return summary


def _codes(column: Any, names: tuple[str, ...], missing: int, strict: bool = True) -> np.ndarray:
    """Codes of a text column by position in `names`, vectorised for dictionary columns.

    Null is `missing`; an unknown value raises KeyError, or is `missing` when not `strict`.
    """

    code = {name: i for i, name in enumerate(names)}

    def one(v: Any) -> int:
        return missing if v is None else code[v] if strict else code.get(v, missing)

    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    out: np.ndarray
    if pa.types.is_dictionary(array.type) and pa.types.is_string(array.type.value_type):
        lookup = np.array([one(v) for v in array.dictionary.to_pylist()] + [missing], np.int8)
        indices = array.indices.fill_null(len(array.dictionary))
        out = lookup[indices.to_numpy(zero_copy_only=False)]
    else:
        out = np.array([one(v) for v in array.to_pylist()], dtype=np.int8)
    return out


def _sparse(column: Any, size: int) -> tuple[list[Any], np.ndarray]:
    """A mostly-null text column as a list (None where null) and the indices that are set."""
    if column.null_count == len(column):
        return [None] * size, np.zeros(0, dtype=np.intp)
    valid = column.is_valid().to_numpy(zero_copy_only=False)
    where = np.flatnonzero(valid)
    out: list[Any] = [None] * size
    for i, v in zip(where.tolist(), text_list(column.filter(valid)), strict=True):
        out[i] = v
    return out, where


def _seconds(column: Any) -> np.ndarray:
    """Epoch seconds of a timestamp column (NaN where null), the floats the run held.

    Whole seconds and the nanoseconds are split before the division: float64 cannot hold
    the nanoseconds since 1970 exactly, and their rounding changed the time in ~7% of cases.
    """

    ns = column.cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64())
    valid = ns.is_valid().to_numpy(zero_copy_only=False)
    whole = ns.fill_null(0).to_numpy(zero_copy_only=False)
    seconds: np.ndarray = (whole // 10**9).astype(np.float64) + (whole % 10**9) / 1e9
    seconds[~valid] = np.nan
    return seconds


def _raw_values(column: Any, where: np.ndarray) -> list[Any]:
    """The stored values at `where`, as Python objects (for a message)."""
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return [array[int(i)].as_py() for i in where]


def _checked_values(column: Any, status: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A `value` column as floats (NaN where not scored) and the scored rows it fails.

    Every scored value goes through the score contract again: a float column must hold
    values in [0, 1]; any other column type (bool, text, int) is checked value by value, so
    `true` or `"1"` are rejected rather than converted.
    """
    scored = status == SCORED
    if pa.types.is_floating(column.type) or pa.types.is_null(column.type):
        values = np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)
        ok = (values >= 0.0) & (values <= 1.0)  # NaN and ±inf fail both
        return values, np.flatnonzero(scored & ~ok)
    raw = column.to_pylist()
    values = np.full(len(raw), np.nan)
    bad: list[int] = []
    for i, v in enumerate(raw):
        if not scored[i]:
            continue
        try:
            values[i] = validate_value(v)
        except InvalidScore:
            bad.append(i)
    return values, np.asarray(bad, dtype=np.intp)


def _table(path: Path, recorded: Any, changed: list[str]) -> Any:
    """A final Parquet file; an error that cannot be read names it. Its CRC-32 is checked
    against the one `summary.json` recorded (`recorded`, the summary's `files` entry, if
    any): a file changed since is said in `changed` (the log then decides, if there is one)."""
    try:
        data = read_regular(path, PARQUET_CAP)
        arrow = read_parquet(path, data)
    except SchemaVersionError:
        raise
    except Exception as exc:  # pyarrow's errors do not always say which file
        raise ValueError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from exc
    if isinstance(recorded, dict) and recorded.get("crc") != crc_of(data):
        changed.append(
            f"{path} is not the file summary.json was written with (its checksum differs: "
            "it was changed or replaced after the run ended)"
        )
    return arrow


def _samples(folder: Path, ids: list[str], cases: Any) -> tuple[list[str], int]:
    """The case ids and epochs of `cases.parquet`'s rows (one per sample, case-major).

    ValueError unless its rows are exactly each case's epochs 1..K in order.
    """
    if "epoch" not in cases.column_names:  # schema_version 2: one epoch per case
        return ids, 1
    epoch = np.asarray(cases.column("epoch").to_numpy(zero_copy_only=False))
    k = max(1, int(epoch.max())) if epoch.size else 1
    unique = ids[::k]
    if (
        len(ids) != len(unique) * k
        or not np.array_equal(epoch, np.tile(np.arange(1, k + 1), len(unique)))
        or list(np.repeat(np.asarray(unique, dtype=object), k)) != ids
    ):
        raise ValueError(f"{folder / CASES}: its rows are not each case's epochs 1..{k} in order")
    return unique, k


def _results_from_files(folder: Path, n_scores: int, files: Any, changed: list[str]) -> Results:
    files = files if isinstance(files, dict) else {}
    cases = _table(folder / CASES, files.get(CASES), changed)
    scores = _table(folder / SCORES, files.get(SCORES), changed)
    ids = text_list(cases.column("case_id"))
    if not all(type(x) is str for x in ids):
        ids = [str(x) for x in ids]
    ids, epochs = _samples(folder, ids, cases)
    results = Results(ids, n_scores, epochs=epochs)
    if scores.num_rows != results.n_samples * n_scores:
        raise ValueError(
            f"{folder / SCORES} has {scores.num_rows} rows, expected {len(ids)} cases × "
            f"{epochs} epochs × {n_scores} scores"
        )
    results.outcome[:] = _codes(cases.column("outcome"), OUTCOMES, PENDING)
    attempts = cases.column("attempts")
    if attempts.null_count:
        attempts = attempts.to_pylist()  # None raises, as it always did
    results.attempts[:] = np.asarray(attempts, dtype=np.int32)
    kinds = _codes(cases.column("output_kind"), OUTPUT_KINDS, -1, strict=False)
    results.output = read_file_outputs(text_list(cases.column("output")), kinds)
    results.error_type = _sparse(cases.column("error_type"), results.n_samples)[0]
    results.error_message = _sparse(cases.column("error_message"), results.n_samples)[0]
    _origins_from_files(cases, scores, results)
    if "usage" in cases.column_names:  # the amount columns are derived from it
        results.usage = _usage(folder, cases.column("usage"), results.n_samples)
    if "transcript" in cases.column_names:
        _steps_from_files(folder, cases, results)
    results.started_at[:] = _seconds(cases.column("started_at"))
    results.duration_s[:] = cases.column("duration_s").to_numpy(zero_copy_only=False)
    results.status[:] = _codes(scores.column("status"), STATUSES, 0)
    # The records of samples that never started (a run stopped by max_cost=) hold no status
    # and no value: there is nothing to check, and no stored value was rejected.
    ran = np.repeat(results.outcome != PENDING, n_scores)
    values, invalid = _checked_values(scores.column("value"), np.where(ran, results.status, -1))
    results.value[:] = values

    size = scores.num_rows
    results.reason, set_reason = _sparse(scores.column("reason"), size)
    results.message, set_message = _sparse(scores.column("message"), size)
    if invalid.size:  # re-checked through the score contract: an error, never a number
        bad = [repr(x) for x in _raw_values(scores.column("value"), invalid)]
        results.status[invalid] = ERROR
        results.value[invalid] = np.nan
        for i, text in zip(invalid.tolist(), bad, strict=True):
            results.reason[i] = "invalid_score"
            results.message[i] = f"stored value rejected on load: invalid score {text}"
        set_reason = np.union1d(set_reason, invalid)
        warn_invalid(folder / SCORES, bad)
    results.rationale, set_rationale = _sparse(scores.column("rationale"), size)
    metadata, set_metadata = _sparse(scores.column("metadata"), size)
    for i in set_metadata.tolist():  # clean: JSON text may escape a lone surrogate
        metadata[i] = clean(json.loads(metadata[i]))
    results.metadata = metadata
    graders, set_grader = _sparse(scores.column("record_grader"), size)
    for i in set_grader.tolist():
        graders[i] = Grader.model_validate(clean(json.loads(graders[i])))
    results.grader = graders
    # after the sparse columns (assigning them resets it): the records that hold anything
    sets = (set_reason, set_message, set_rationale, set_metadata, set_grader)
    results.touched = np.unique(np.concatenate(sets)).tolist()
    return results


def _origins_from_files(cases: Any, scores: Any, results: Results) -> None:
    """The `origin` columns (schema_version 4); files written before have none: the samples'
    origin is then not known (NA), and an error record's is read off its code
    (`record_origin`: a scorer's error is the grader's, a case's is not known)."""
    if "origin" in cases.column_names:
        codes = _codes(cases.column("origin"), ORIGINS, -1, strict=False)
        results.origin = [None if c < 0 else ORIGINS[c] for c in codes.tolist()]
    if "origin" in scores.column_names:
        codes = _codes(scores.column("origin"), ORIGINS, -1, strict=False)
        results.rec_origin = [None if c < 0 else ORIGINS[c] for c in codes.tolist()]
        return
    status = _codes(scores.column("status"), STATUSES, 0)
    reasons = _sparse(scores.column("reason"), scores.num_rows)[0]
    for i in np.flatnonzero(status == ERROR).tolist():
        results.rec_origin[i] = record_origin(reasons[i], None)


def _steps_from_files(folder: Path, cases: Any, results: Results) -> None:
    """The transcripts' counts and ties (`n_steps, ...`, `transcript`); ValueError if damaged.

    Column-wise (a loaded run never reads its transcripts, and pays little for their counts).
    """
    tie_column = cases.column("transcript")
    has = np.asarray(tie_column.is_valid().to_numpy(zero_copy_only=False), dtype=bool)
    counts = np.stack(
        [cases.column(c).fill_null(-1).to_numpy(zero_copy_only=False) for c in STEP_COUNT_COLUMNS],
        axis=1,
    )
    lengths = pc.utf8_length(tie_column).fill_null(8).to_numpy(zero_copy_only=False)
    bad = np.flatnonzero((has & (counts < 0).any(axis=1)) | (lengths != 8))
    if bad.size:
        raise ValueError(
            f"{folder / CASES}, row {int(bad[0]) + 1}: the transcript's counts are damaged"
        )
    results.steps[has] = counts[has]
    ties = tie_column.to_pylist()
    results.ties = ties


def _usage(folder: Path, column: Any, size: int) -> list[Mapping[str, Tally] | None]:
    """The `usage` column: each sample's usage by source; ValueError naming the row."""
    texts, where = _sparse(column, size)
    out: list[Mapping[str, Tally] | None] = [None] * size
    for i in where.tolist():
        try:
            out[i] = usage_from_json(json.loads(texts[i]))
        except ValueError as exc:
            raise ValueError(
                f"{folder / CASES}, row {i + 1}: the usage is damaged ({exc})"
            ) from None
    return out


def _agrees(folder: Path, summary: dict[str, Any], run: RunData) -> None:
    """ValueError unless the tables read agree with `summary.json`: its case count, outcome
    counts and per-score means and counts (a damaged Parquet file must not load as a
    different run)."""
    results = run.results
    if summary.get("n_cases") != results.n_cases:
        raise ValueError(
            f"{folder / CASES} holds {results.n_cases} cases, {SUMMARY} says "
            f"{summary.get('n_cases')!r}"
        )
    counts = outcome_counts(results)
    if summary.get("counts") != counts:
        raise ValueError(
            f"{folder / CASES} holds the outcomes {counts}, {SUMMARY} says "
            f"{summary.get('counts')!r}"
        )
    stored = summary.get("summary")
    if not isinstance(stored, list):
        raise ValueError(f"{folder / SUMMARY} has no summary rows")
    table = run.summary(cluster=False)  # the data is not read yet; counts and means suffice
    for row, (_, now) in zip(stored, table.iterrows(), strict=False):
        for key in ("score", "mean", "counted", "errors", "unscored"):
            a, b = row.get(key) if isinstance(row, dict) else None, now[key]
            same = (
                (a is None and b != b) or a == b or (isinstance(a, float) and abs(a - b) <= 1e-12)
            )
            if not same:
                raise ValueError(
                    f"{folder / SCORES} disagrees with {SUMMARY} ({key} of "
                    f"{now['score']!r}: {b!r} read, {a!r} stored)"
                )
    if len(stored) != len(table):
        raise ValueError(f"{folder / SUMMARY} has {len(stored)} summary rows, not {len(table)}")
    usage = summary.get("usage")  # absent: no usage recorded (or an earlier writer)
    read = records(run.usage_summary())[0] if any(results.usage) else None
    if usage is not None or read is not None:
        for key in ("calls", "cached_calls", "input_tokens", "output_tokens", "cost", "retries"):
            a = usage.get(key) if isinstance(usage, dict) else None
            b = None if read is None else read[key]
            if not (a == b or (isinstance(a, float) and b is not None and abs(a - b) <= 1e-9)):
                raise ValueError(
                    f"{folder / CASES} disagrees with {SUMMARY} (usage {key}: {b!r} read, "
                    f"{a!r} stored)"
                )


def _from_files(folder: Path, log: EventLog | None = None) -> RunData:
    with reading_stored():
        return _read_files(folder, log)


def _read_files(folder: Path, log: EventLog | None) -> RunData:
    try:
        summary = read_summary(folder / SUMMARY)
        definitions = [ScoreDefinition.model_validate(d) for d in summary["definitions"]]
        name, run_id = str(summary["name"]), str(summary["run_id"])
    except SchemaVersionError:
        raise
    except Exception as exc:  # name the file: the log then decides
        raise ValueError(
            f"{folder / SUMMARY} cannot be read ({type(exc).__name__}: {exc})"
        ) from exc
    reason = mismatch(folder, summary, None if log is None else log.run_id)
    if reason is not None:
        raise ValueError(f"they are not those of its log: {reason}")
    changed: list[str] = []
    files = summary.get("files")
    results = _results_from_files(folder, len(definitions), files, changed)
    if isinstance(files, dict) and STEPS in files and results.has_transcripts:
        results.steps_file = steps_file_reader(folder, files[STEPS])
    run = RunData(
        name=name,
        id=run_id,
        definitions=definitions,
        data=pd.DataFrame(index=pd.Index(results.case_ids, dtype=object)),
        results=results,
        options=dict(summary.get("options") or {}),
        path=folder,
    )
    try:
        _agrees(folder, summary, run)
    except ValueError as exc:
        changed.append(str(exc))
    if changed:
        raise _Disagree("; ".join(changed), run, summary)
    run.data = _data(folder, summary.get("data_file"), results.case_ids)
    if np.any(results.attempts > 1):  # the retried samples' attempts are in the log only
        _tries_from_log(folder, results, log)
    return run


def _tries_from_log(folder: Path, results: Results, read: EventLog | None = None) -> None:
    """Fill `results.tries` from the log (`case.ended` lines' `tries`, docs/file-formats.md).

    The final files do not hold a retried sample's attempts. The lines that hold `tries` are
    read first (cheap: the others are not parsed); a log without them for some retried
    sample (written before attempts were logged) is replayed, for its `case.started` times.
    A sample whose logged attempts differ from the final files' is left without them, as is
    every sample when the log cannot be read (one warning: run.attempts() then shows their
    earlier attempts as not known). `read`: the log as a resume already read it (its
    replayed attempts; the file is not read again).
    """
    log = folder / EVENTS
    retried = np.flatnonzero(results.attempts > 1).tolist()
    k = results.epochs
    try:
        found = tries_in_log(log) if read is None else {}
        if any((results.case_id_of(p), p % k + 1) not in found for p in retried):
            replayed = (replay(log, warn=False) if read is None else read).results
            if replayed.epochs == k:
                for pos, tries in enumerate(replayed.tries):
                    if tries is not None:
                        found[replayed.case_id_of(pos), pos % k + 1] = tries
    except (OSError, ValueError) as exc:  # no log (an import), or one that cannot be read
        if log.exists():
            warn(
                f"{log} cannot be read ({exc}); run.attempts() shows the earlier attempts "
                "of retried samples as not known",
                RuntimeWarning,
            )
        return
    for pos in retried:
        tries = found.get((results.case_id_of(pos), pos % k + 1))
        if (
            tries is not None
            and len(tries) == results.attempts[pos]
            and tries[-1].outcome == results.outcome[pos]
        ):
            results.tries[pos] = tries


class _Disagree(ValueError):
    """The final files read, but disagree with each other: the log decides, if there is one."""

    def __init__(self, message: str, run: RunData, summary: dict[str, Any]) -> None:
        super().__init__(message)
        self.run, self.summary = run, summary


def _from_log(folder: Path, warn_damage: bool = True, read: EventLog | None = None) -> RunData:
    if read is None:
        log = replay(folder / EVENTS, warn_damage=warn_damage)
    else:  # read already (a resume, under its lock): its warnings are due now that it decides
        log = read
        warn_read(folder / EVENTS, log, warn_damage=warn_damage)
    return RunData(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=_data(folder, log.data_file, log.case_ids),
        results=log.results,
        options=log.options,
        path=folder,
    )


def read_run(path: str | os.PathLike[str], *, warn_incomplete: bool = True) -> RunData:
    """A stored run's data: from its Parquet files, or from its event log after a crash.

    A run with cases that have no final outcome (killed, or still running) warns once,
    naming the run and how many (`warn_incomplete=False`: a resume, which runs them; nor is a
    damaged log then warned of here: the resume sets it aside, saying so).
    """
    run = _read(run_folder(path), warn_damage=warn_incomplete)
    if warn_incomplete:
        missing = int(np.count_nonzero(run.results.outcome == PENDING))
        stopped = run.options.get("stopped")
        if isinstance(stopped, dict) and stopped.get("decision") != "undecided":
            missing = 0  # stopped early (docs/spend-less.md): decided, not interrupted
        if missing:
            what = "samples" if run.results.epochs > 1 else "cases"
            head = (
                f"run {run.name!r} ({run.path}) is incomplete: {missing} of "
                f"{run.results.n_samples} {what} have no final outcome"
            )
            imported = run.options.get("imported")
            if run.path is not None and being_written(run.path / EVENTS):
                tail = "; another process is running it right now: load it again once it ends"
            elif isinstance(imported, dict):  # no task of evalbook's can run them: say so
                harness = imported.get("format", "the harness")
                tail = (
                    f" (imported: its {harness} results do not hold them); run them with "
                    f"{harness} and import its results again"
                )
            else:
                tail = " (the run was interrupted); resume it: " + advice(
                    f"eb.run(..., resume={str(run.path)!r})",
                    f"evalbook run FILE --resume {run.path}",
                )
            warn(head + tail, RuntimeWarning)
    return run


def read_stored(folder: Path, log: EventLog) -> RunData:
    """A stored run's data as a resume reads it, its log `log` read once already (under the
    log's lock): from the final files when they read and agree, else from `log`. No warning
    that the run is incomplete (the resume runs the rest), nor of damage (it sets it aside)."""
    return _read(folder, warn_damage=False, log=log)


def not_a_run(folder: Path) -> FileNotFoundError:
    """The error for a folder that holds neither a log nor the final files."""
    try:
        stillborn = folder.is_dir() and holds_no_run(folder)
    except OSError:
        stillborn = False
    if stillborn:  # a run killed while it started: nothing of it ran
        return FileNotFoundError(
            f"{folder} is not a stored run: it is empty, as a run killed while it started leaves "
            f"its folder (before its {EVENTS} was written, so nothing of it ran); run it again "
            "(the next run in the store removes such a folder)"
        )
    return FileNotFoundError(
        f"{folder} is not a stored run: it has no {EVENTS} (see eb.runs() for the runs of a store)"
    )


def _read(folder: Path, warn_damage: bool = True, log: EventLog | None = None) -> RunData:
    run = _read_any(folder, warn_damage, log)
    results = run.results
    if results.has_transcripts:  # read on first use (run.steps(), the views), never here
        results.transcripts = None
        results.transcript_source = transcript_reader(folder, results)
        results.transcript_one = one_transcript_reader(folder, results)
    return run


def _read_any(folder: Path, warn_damage: bool, log: EventLog | None) -> RunData:
    if all((folder / name).exists() for name in FINAL_FILES):
        try:
            return _from_files(folder, log)
        except SchemaVersionError:
            raise
        except Exception as exc:  # e.g. a file cut short by a power cut: the log decides
            if not (folder / EVENTS).exists():
                if not isinstance(exc, _Disagree):
                    raise
                warn(
                    f"{folder}: the final files disagree ({exc}) and there is no {EVENTS}; "
                    "the run loads as its Parquet files hold it",
                    RuntimeWarning,
                )
                run = exc.run
                run.data = _data(folder, exc.summary.get("data_file"), run.results.case_ids)
                return run
            warn(
                f"{folder}: the final files cannot be read ({exc}); loading from {EVENTS}",
                RuntimeWarning,
            )
    if log is not None or (folder / EVENTS).exists():
        return _from_log(folder, warn_damage, log)
    raise not_a_run(folder)
