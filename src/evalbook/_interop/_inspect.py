"""Import Inspect AI logs: the `.eval` and `.json` files `inspect_ai.eval(...)` writes.

`_inspect_files` reads a log's parts (its header and each sample's JSON, skipping what is
damaged); here Inspect's own models read them, and each field becomes evalbook's. The mapping
was learned from Inspect AI's code (inspect_ai 0.3.285):

- `inspect_ai.log.read_eval_log` (`log/_file.py`) reads the header; `EvalSample`
  (`log/_log.py`) each sample: `id`, `epoch`, `input` (text or chat messages), `target`,
  `metadata`, `output.completion`, `scores` (by scorer), `error` (`EvalError`: `message` is
  the exception's repr, `traceback` ends with `Type: message`), `limit` (`EvalSampleLimit.type`:
  context, time, working, message, token, turn, cost, operator, custom), `error_retries`,
  `model_usage`, `started_at`, `total_time`; `resolve_sample_attachments` puts back the text
  a `.eval` log stores once as an attachment.
- `value_to_float` (`scorer/_metric.py`): the letters `CORRECT` "C" -> 1, `PARTIAL` "P" -> 0.5,
  `INCORRECT` "I" and `NOANSWER` "N" -> 0. `Score.unscored`: a NaN value is Inspect's "not
  scored" sentinel, excluded from its metrics.
- `scorers_from_metric_dict` (`_eval/task/results.py`): a dict-valued score becomes one
  `EvalScore` per key, named by the key, with the scorer beside it; `resolve_headline_metric`
  (`log/_headline.py`, `inspect_ai.log.headline_metric`): the eval's headline is the declared
  headline metric's score, else the first score of the first scorer.

What each field becomes is the table in docs/interop.md ("Inspect AI").
"""

from __future__ import annotations

import ast
import importlib.metadata
import io
import json
import math
import multiprocessing
import multiprocessing.context
import os
import re
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigurationError
from .._model._contract import Score, ScoreError, Unscored
from .._model._tally import InvalidUsage, Tally, amount
from .._util._gc import paused_gc
from .._util._warn import warn
from ._imported import (
    FormatError,
    Imported,
    ImportedAttempt,
    ImportedSample,
    ImportedScore,
    KeptTranscript,
    exception_origin,
)
from ._inspect_files import (
    EXPECTED,
    Members,
    RawSample,
    damaged,
    logs_in,
    not_inspect,
    read_eval,
    read_json,
    sniff,
)
from ._kept import pool_steps
from ._reading import check_version

if TYPE_CHECKING:  # the extra's types, for mypy only (inspect_ai loads inside read)
    from inspect_ai.log import EvalLog

__all__ = ["EXPECTED", "LETTERS", "NAME", "read", "sniff"]

NAME = "inspect"
# Inspect's `EvalSample`, or `_inspect_sample.LightSample`: the same attributes where read
AnySample = Any
# a sample read: its place in Inspect's order, it as imported, its scores (as Inspect's)
Part = tuple[tuple[int, str], ImportedSample, Mapping[str, Any]]
# a log of this many samples or more is read by worker processes (`_workers`), each reading
# runs of `_CHUNK` members: below it, starting them costs more than they save
_PARALLEL_FROM = 4000
_CHUNK = 500
_MAX_WORKERS = 4
# Inspect's letter values and the numbers its value_to_float gives them; no other text maps
LETTERS: Mapping[str, float] = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
# limits that are a time running out (outcome timed_out); every other limit is an error
_TIME_LIMITS = ("time", "working")
_TYPE_LINE = re.compile(r"^([A-Za-z_][\w.]*): ")
_REPR_TYPE = re.compile(r"^([A-Za-z_][\w.]*)\(")


def _inspect_log() -> Any:
    """`inspect_ai.log`, imported here: Inspect AI (and msgspec, which reads its samples'
    JSON, `_inspect_json`) are the optional extra `evalbook[inspect]`."""
    try:
        import inspect_ai.log  # optional extra: only Inspect logs need it
        import msgspec  # noqa: F401  (the same extra)
    except ImportError as exc:
        needs = "msgspec" if exc.name == "msgspec" else "Inspect AI"
        raise ImportError(
            f'reading Inspect AI logs needs {needs}: pip install "evalbook[inspect]"'
        ) from exc
    return inspect_ai.log


# -- from Inspect's records to evalbook's ---------------------------------------------------


def read(path: Path) -> Imported:
    """Read an Inspect AI log (`.eval` or `.json`, or a folder holding one) as an import.

    Unreadable samples (a damaged zip member, a `.json` log cut short) are listed in
    `skipped`; the rest is imported. Needs Inspect AI (`pip install "evalbook[inspect]"`).

    Example:
        >>> from pathlib import Path
        >>> log = Path(__file__).parents[3] / "tests/interop/fixtures/inspect/tiny.eval"
        >>> imported = read(log)
        >>> imported.name, [s.name for s in imported.scores][:2]
        ('tiny', ['match', 'too_big'])
    """
    log_api = _inspect_log()  # also teaches zipfile Inspect's zstd members
    path = Path(path)
    if path.is_dir():
        logs = logs_in(path)
        if len(logs) != 1:
            names = ", ".join(p.name for p in logs[:5]) or "none"
            raise FormatError(
                f"{path}: a folder of Inspect AI logs must hold exactly one to import, it holds "
                f"{len(logs)} ({names}); pass the log file itself"
            )
        path = logs[0]
    if not path.is_file():
        raise not_inspect(path, "not a file")
    suffix = path.suffix.lower()
    raw_samples: Iterable[RawSample]
    if suffix == ".eval":
        header_json, raw_samples, skipped = read_eval(path)
    elif suffix == ".json":
        header_json, raw_samples, skipped = read_json(path)
    else:
        raise not_inspect(path, f"the name ends {suffix or 'without a suffix'!r}")
    try:
        header = _header(path, header_json, log_api)
        if isinstance(raw_samples, Members) and raw_samples.whole():
            parts = _parts_of_members(path, raw_samples, skipped, log_api)
        else:
            parts = _parts(path, raw_samples, skipped, log_api)
    finally:
        if isinstance(raw_samples, Members):
            raw_samples.close()
    # Inspect's own sample order (sort_samples): epoch, then id
    parts.sort(key=lambda part: part[0])
    return _imported(path, header, parts, skipped, log_api)


def _header(path: Path, header_json: bytes, log_api: Any) -> EvalLog:
    _check_version(path, header_json)
    try:
        header: EvalLog = log_api.read_eval_log(io.BytesIO(header_json), format="json")
    except Exception as exc:  # Inspect refused the header: its version, its fields
        raise damaged(path, f"Inspect could not read its header: {_first_line(exc)}") from None
    return header


def _parts(
    path: Path, raw_samples: Iterable[RawSample], skipped: list[str], log_api: Any
) -> list[Part]:
    """Each sample as imported (its scores still Inspect's), read and mapped one at a time."""
    parts: list[Part] = []
    kept: list[KeptTranscript] = []  # their rows pooled into a block every `_CHUNK`
    with paused_gc():
        for where, data in raw_samples:
            try:
                sample, events = _parsed(log_api, data)
            except Exception as exc:  # one sample Inspect's model refuses: skip it, keep the rest
                skipped.append(f"{where}: not an Inspect sample ({_first_line(exc)})")
                continue
            # each sample is mapped as it is read, and its Inspect objects dropped
            imported = _sample(sample, events, path)
            parts.append((_order(sample), imported, sample.scores or {}))
            if isinstance(imported.transcript, KeptTranscript):
                kept.append(imported.transcript)
                if len(kept) == _CHUNK:
                    pool_steps(kept)
                    kept = []
        pool_steps(kept)
    return parts


def _parts_of_members(path: Path, members: Members, skipped: list[str], log_api: Any) -> list[Part]:
    """`_parts` of an archive's samples: read here, or by worker processes for a large log
    (`_workers`), each reading a run of members; the parts and what was skipped come back in
    the archive's order, so the import is the same either way, the workers' warnings too."""
    names = members.names()
    workers = _workers(len(names))
    if workers < 2:
        return _parts(path, members, skipped, log_api)
    # a forked worker starts with this process's reading of the archive's directory (one
    # entry a sample: 1.3 s at 200,000 samples); a spawned one reads it again
    context = _context()
    inherited = members.directory() if context.get_start_method() == "fork" else None
    members.close()
    chunks = [names[i : i + _CHUNK] for i in range(0, len(names), _CHUNK)]
    parts: list[Part] = []
    pool = ProcessPoolExecutor(
        workers, mp_context=context, initializer=_open_archive, initargs=(path,)
    )
    _DIRECTORY[:] = [] if inherited is None else [inherited]
    try:
        with pool, paused_gc():  # what comes back is kept: no collection walks it again
            for found, lost, said in pool.map(_chunk, chunks):
                parts.extend(found)
                skipped.extend(lost)
                for message, category in said:
                    warn(message, category)
    finally:
        _DIRECTORY.clear()
    return parts


# the archive a worker process reads its runs from, opened once (its zip directory, one entry
# a sample, read once rather than once a run)
_OPENED: list[Members] = []
# the archive's directory as the importing process read it: what a forked worker starts with
_DIRECTORY: list[tuple[tuple[int, ...], dict[str, Any]]] = []


def _open_archive(path: Path) -> None:
    """In a worker, first: open the archive (with the directory it was forked with, when that
    is of the file at `path` still)."""
    _inspect_log()  # also teaches zipfile Inspect's zstd members
    members = Members.again(path, _DIRECTORY[0]) if _DIRECTORY else None
    if members is None:
        _, members, _ = read_eval(path)
    _OPENED.append(members)


def _chunk(names: list[str]) -> tuple[list[Part], list[str], list[tuple[str, Any]]]:
    """In a worker: the parts of the named members, what was skipped, the warnings given."""
    members = _OPENED[-1]
    skipped: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = _parts(members.path, members.only(names, skipped), skipped, _inspect_log())
    return parts, skipped, [(str(w.message), w.category) for w in caught]


def _workers(n_samples: int) -> int:
    """How many processes read a log of `n_samples`: one below `_PARALLEL_FROM`, else one a
    core this process may use, at most `_MAX_WORKERS`; `EVALBOOK_IMPORT_WORKERS` says
    otherwise (1: read here)."""
    said = os.environ.get("EVALBOOK_IMPORT_WORKERS", "").strip()
    if said:
        try:
            return max(1, int(said))
        except ValueError:
            raise ConfigurationError(
                f"EVALBOOK_IMPORT_WORKERS={said!r}: expected a whole number of processes (1: "
                "read the log in this process)"
            ) from None
    if n_samples < _PARALLEL_FROM:
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return min(cores, _MAX_WORKERS)


def _context() -> multiprocessing.context.BaseContext:
    """Fork when this process runs one thread (a script: quick, and it never re-imports the
    script); else spawn (a notebook's kernel runs several, which a fork would copy half-way)."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _order(sample: AnySample) -> tuple[int, str]:
    return (sample.epoch, sample.id if isinstance(sample.id, str) else str(sample.id).zfill(20))


def _parsed(log_api: Any, data: Any) -> tuple[Any, Sequence[Any]]:
    """A sample (Inspect's `EvalSample`, or a `LightSample` with the attributes read of it) and
    its events: read from the JSON for the fields kept (`_inspect_sample`), else, for a
    sample of another shape, wholly by Inspect's models, as Inspect reads it.

    Raises:
        Exception: what Inspect's model raises for a sample it refuses.
    """
    try:
        return _light(log_api, data)
    except Exception:  # any doubt (Unusual: another shape): Inspect's own models decide
        pass
    sample = (
        log_api.EvalSample.model_validate_json(data)
        if isinstance(data, bytes)
        else log_api.EvalSample.model_validate(data)
    )
    sample = log_api.resolve_sample_attachments(sample, "core")
    return sample, sample.events


def _light(log_api: Any, data: Any) -> tuple[Any, Sequence[Any]]:
    # the fields read, with the values of Inspect's own JSON parser (pydantic's, as its
    # `model_validate_json`): what that refuses (a lone surrogate, a byte order mark) is left
    # to Inspect's models to refuse (`_inspect_json`); imported here, as msgspec is the extra's
    from ._inspect_json import decoded, of_parsed
    from ._inspect_sample import light_sample

    return light_sample(decoded(data) if isinstance(data, bytes) else of_parsed(data))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _keyed(header: EvalLog) -> set[str]:
    """The scorers whose metrics are per key (their values are dicts)."""
    return {s.name for s in (header.eval.scorers or []) if isinstance(s.metrics, dict)}


def _key_of(ev: Any, keyed: set[str]) -> tuple[str, str | None]:
    """(scorer, key) of one of the results' `EvalScore`s: a key unless it is the scorer's own."""
    return (ev.scorer, None if ev.name == ev.scorer and ev.scorer not in keyed else ev.name)


def _is_pattern(key: str) -> bool:
    return any(c in key for c in "*?[")


def _score_keys(
    header: EvalLog, scored: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str | None]]:
    """(scorer, key) of every score: the log's results, then its scorers, then as first seen.

    key is None for a scorer's own value, else a key of a dict-valued score. The eval's
    scorers give the same names and order when the log has no results (cut short, still
    running); a key pattern (`"*"`) is left to the samples to name.
    """
    keyed = _keyed(header)
    found: dict[tuple[str, str | None], None] = {}
    for ev in header.results.scores if header.results is not None else []:
        found.setdefault(_key_of(ev, keyed), None)
    listed = {scorer for scorer, _ in found}
    for spec in header.eval.scorers or []:
        if spec.name in listed:
            continue
        keys = list(spec.metrics) if isinstance(spec.metrics, dict) else [None]
        for key in keys:
            if key is None or not _is_pattern(key):
                found.setdefault((spec.name, key), None)
        if not any(key is not None and _is_pattern(key) for key in keys):
            listed.add(spec.name)
    for scores in scored:
        for scorer, score in scores.items():
            if scorer in listed:
                continue
            if isinstance(score.value, dict):
                for key in score.value:
                    found.setdefault((scorer, str(key)), None)
            elif not _is_nan(score.value):
                found.setdefault((scorer, None), None)
    for scores in scored:  # a scorer that only ever gave NaN: its own value, unscored
        for scorer in scores:
            if scorer not in listed and not any(s == scorer for s, _ in found):
                found.setdefault((scorer, None), None)
    return list(found)


def _raw_names(keys: list[tuple[str, str | None]]) -> dict[tuple[str, str | None], str]:
    """Inspect's names: a scorer's, or a dict key's; `<scorer>.<key>` where a key is taken."""
    names: dict[tuple[str, str | None], str] = {}
    taken: set[str] = set()
    for scorer, key in keys:
        name = scorer if key is None else key
        if name in taken and key is not None:
            name = f"{scorer}.{key}"  # Inspect's own "<scorer>.<score>" headline shorthand
        base, n = name, 1
        while name in taken:  # still taken (a scorer named like another's key): numbered
            n += 1
            name = f"{base} ({n})"
        taken.add(name)
        names[(scorer, key)] = name
    return names


def _headline(
    header: EvalLog, keys: list[tuple[str, str | None]], log_api: Any
) -> tuple[str, str | None] | None:
    """The (scorer, key) of Inspect's headline score: the one its results resolve to, else
    Inspect's convention, the first score of the first scorer; None when there is no score."""
    try:
        resolved = log_api.headline_metric(header)
    except Exception:  # a declaration Inspect cannot resolve: its convention, as it falls back
        resolved = None
    if resolved is None:
        return keys[0] if keys else None
    return _key_of(resolved.score, _keyed(header))


def _imported(
    path: Path,
    header: EvalLog,
    parts: Sequence[tuple[Any, ImportedSample, Mapping[str, Any]]],
    skipped: list[str],
    log_api: Any,
) -> Imported:
    keys = _score_keys(header, [scores for _, _, scores in parts])
    names = _raw_names(keys)
    headline = _headline(header, keys, log_api)
    scores = [
        ImportedScore(
            names[k],
            primary=k == headline,
            description=f"Inspect AI scorer {k[0]!r}" + ("" if k[1] is None else f", {k[1]!r}"),
        )
        for k in keys
    ]
    spec = header.eval
    source: dict[str, Any] = {
        "inspect_version": spec.packages.get("inspect_ai"),
        "log_version": header.version,
        "status": header.status,
        "task": spec.task,
        "model": spec.model,
        "created": spec.created,
        "eval_id": spec.eval_id,
        "run_id": spec.run_id,
        "dataset": spec.dataset.name,
    }
    return Imported(
        format=NAME,
        path=path,
        name=spec.task,
        scores=scores,
        samples=[_scored(sample, scores, keys, names) for _, sample, scores in parts],
        skipped=skipped,
        source={k: v for k, v in source.items() if v is not None},
        # the header lists every sample id and the epochs even when the log is cut short
        planned_cases=None
        if spec.dataset.sample_ids is None
        else [str(i) for i in spec.dataset.sample_ids],
        planned_epochs=spec.config.epochs,
    )


def _sample(sample: AnySample, events: Sequence[Any], path: Path | None = None) -> ImportedSample:
    """The sample as imported, its scores not yet read (`_scored` does, once all are read)."""
    outcome, error_type, error_message = _outcome(sample)
    duration = math.nan if sample.total_time is None else sample.total_time
    last = ImportedAttempt(outcome, error_type, error_message, _unix(sample.started_at), duration)
    return ImportedSample(
        case_id=str(sample.id),
        epoch=sample.epoch,
        input=dict(_inputs(sample)),
        output=sample.output.completion if sample.output.choices else None,
        outcome=outcome,
        error_type=error_type,
        error_message=error_message,
        started_at=_unix(sample.started_at),
        duration_s=duration,
        attempts=1 + len(sample.error_retries or []),
        usage=_usage(sample, events),
        tries=_tries(sample, last),
        transcript=_readable_transcript(sample, events, path),
        origin=_origin(outcome, error_type, sample.error is not None),
    )


def _origin(outcome: str, kind: str | None, raised: bool) -> str | None:
    """A failed sample's origin: an error is the task's (a model API's is the provider's);
    a limit (messages, tokens, time, working time) is what the model and the task did with
    their budget: the task's too."""
    if outcome == "passed" or kind is None:
        return None
    return exception_origin(kind) if raised else "task"


def _scored(
    sample: ImportedSample,
    scores: Mapping[str, Any],
    keys: list[tuple[str, str | None]],
    names: Mapping[tuple[str, str | None], str],
) -> ImportedSample:
    """`sample` with its raw values by name, from its Inspect scores."""
    values: dict[str, object] = {}
    for scorer, key in keys:
        score = scores.get(scorer)
        if score is not None:
            value = _value_of(score, scorer, key)
            if value is not None:
                values[names[(scorer, key)]] = value
    sample.scores = values
    return sample


def _readable_transcript(
    sample: AnySample, events: Sequence[Any], path: Path | None
) -> KeptTranscript | None:
    """The sample's transcript, kept compact (a log holds many); None when it has none or
    none evalbook can keep (then with a warning)."""
    try:
        found = _steps_of(sample, events)
        return None if found is None else KeptTranscript.of_steps(*found)
    except (ConfigurationError, AttributeError, LookupError, TypeError, ValueError) as exc:
        warn(
            f"{'' if path is None else f'{path}: '}Inspect sample {sample.id!r} "
            f"(epoch {sample.epoch}): its messages are not a "
            f"transcript evalbook can keep ({_first_line(exc)}); it is imported without one",
            RuntimeWarning,
        )
        return None


def _steps_of(sample: AnySample, events: Sequence[Any]) -> tuple[list[dict[str, Any]], Any] | None:
    """The sample's messages as its transcript's steps and output (`Transcript`'s arguments),
    not flattened: roles, text, tool calls and their results (`error` from Inspect's
    ToolCallError), each assistant message with its model event's model, tokens, working time
    and start, each tool result with its tool event's. None for a sample without messages; a
    message evalbook cannot take (a role it does not know, a result answering no call) leaves
    the sample without one, with a warning of the import (`skipped`), never a different
    transcript."""
    messages = sample.messages or []
    if not messages:
        return None
    replies: dict[str, Any] = {}  # assistant message id -> its model event
    tools: dict[str, Any] = {}  # tool call id -> its tool event
    for event in events:
        kind = getattr(event, "event", None)
        if kind == "model":
            output = getattr(event, "output", None)
            choices = getattr(output, "choices", None) or ()
            reply: Any = getattr(choices[0], "message", None) if choices else None
            if getattr(reply, "id", None) is not None:
                replies[reply.id] = event
        elif kind == "tool" and getattr(event, "id", None) is not None:
            tools[event.id] = event
    steps = [_step(m, replies, tools) for m in messages]
    return steps, sample.output.completion if sample.output.choices else None


def _step(m: Any, replies: Mapping[str, Any], tools: Mapping[str, Any]) -> dict[str, Any]:
    step: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.role == "assistant":
        calls = [
            {"id": c.id, "function": {"name": c.function, "arguments": dict(c.arguments or {})}}
            for c in m.tool_calls or ()
        ]
        if calls:
            step["tool_calls"] = calls
        event = replies.get(m.id) if m.id is not None else None
        step["model"] = getattr(m, "model", None) or getattr(event, "model", None)
        if event is not None:
            usage = getattr(event.output, "usage", None)
            if usage is not None:
                step["input_tokens"] = usage.input_tokens
                step["output_tokens"] = usage.output_tokens
                step["cost"] = usage.total_cost
            _timing(event, step)
    elif m.role == "tool":
        step["tool_call_id"] = m.tool_call_id
        step["name"] = m.function
        if m.error is not None:
            step["error"] = m.error.message
        event = tools.get(m.tool_call_id) if m.tool_call_id is not None else None
        if event is not None:
            _timing(event, step)
    return step


def _timing(event: Any, step: dict[str, Any]) -> None:
    """An event's working time (`latency_s`; else its `completed` less its `timestamp`) and
    start (`started_at`), where it says, into `step`."""
    # try blocks, not contextlib.suppress: a context manager a time was a tenth of a step
    started = None
    when = getattr(event, "timestamp", None)
    if when is not None:
        try:
            started = step["started_at"] = when.timestamp()
        except (AttributeError, OverflowError, ValueError):
            started = None
    working = getattr(event, "working_time", None)
    if isinstance(working, _NUMBERS) and not isinstance(working, bool) and working >= 0:
        step["latency_s"] = float(working)
    elif started is not None and (completed := getattr(event, "completed", None)) is not None:
        try:
            took = completed.timestamp() - started
        except (AttributeError, OverflowError, ValueError):
            return
        if took >= 0:
            step["latency_s"] = took


_NUMBERS = (int, float)


def _inputs(sample: AnySample) -> Iterator[tuple[str, Any]]:
    """The case's columns: input (chat messages as `role: text` paragraphs), target, metadata."""
    if isinstance(sample.input, str):
        yield "input", sample.input
    else:
        yield "input", "\n\n".join(f"{m.role}: {m.text}" for m in sample.input)
    yield "target", sample.target
    if sample.choices is not None:
        yield "choices", sample.choices
    for key, value in sample.metadata.items():
        # a metadata key that would hide a column above keeps its place under metadata.
        yield (f"metadata.{key}" if key in ("input", "target", "choices") else key), value


def _outcome(sample: AnySample) -> tuple[str, str | None, str | None]:
    """(outcome, error type, message): an error, then a limit; else passed."""
    if sample.error is not None:
        kind = _error_type(sample.error)
        return "errored", kind, _message_of(kind, sample.error.message)
    if sample.limit is not None:
        kind = sample.limit.type
        message = sample.limit.reason or f"{kind} limit of {sample.limit.limit:g} reached"
        return ("timed_out" if kind in _TIME_LIMITS else "errored"), f"{kind}_limit", message
    return "passed", None, None


def _error_type(error: Any) -> str:
    """The exception's type: the traceback's last `Type: message` line, else the repr's name."""
    lines = [ln for ln in str(error.traceback).splitlines() if ln.strip()]
    found = _TYPE_LINE.match(lines[-1]) if lines else None
    if found is None:
        found = _REPR_TYPE.match(str(error.message))
    return found.group(1) if found else "unknown"


def _message_of(kind: str, message: str) -> str:
    """The exception's message: Inspect writes its repr (`ValueError('bad')`), evalbook keeps the
    type and the message apart (`ValueError`, `bad`); a repr of other arguments stays as it is.

    Example:
        >>> _message_of("ValueError", "ValueError('bad')"), _message_of("E", "E(1, 2)")
        ('bad', 'E(1, 2)')
    """
    prefix = f"{kind}("
    inner = message[len(prefix) : -1]
    if not (message.startswith(prefix) and message.endswith(")") and inner[:1] in ("'", '"')):
        return message
    try:
        plain = ast.literal_eval(inner)
    except (ValueError, SyntaxError, RecursionError, MemoryError):
        return message
    return plain if isinstance(plain, str) else message


def _tries(sample: AnySample, last: ImportedAttempt) -> list[ImportedAttempt] | None:
    """Each attempt of a sample Inspect retried (`error_retries`, oldest first), then `last`,
    the sample's own; None for a sample with one attempt. Inspect keeps no time of a retry:
    the sample's `started_at` and `total_time` are its last attempt's."""
    if not sample.error_retries:
        return None
    tries = []
    for retry in sample.error_retries:
        kind = _error_type(retry)
        tries.append(ImportedAttempt("errored", kind, _message_of(kind, retry.message)))
    return [*tries, last]


def _value_of(score: Any, scorer: str, key: str | None) -> object | None:
    """The raw value as evalbook's contract sees it; None when the sample has no value."""
    value = score.value
    if key is not None:
        if _is_nan(value):
            return Unscored(score.reason or "unscored")
        if not isinstance(value, dict):
            return ScoreError(
                "invalid_score",
                f"invalid score {value!r}: Inspect scorer {scorer!r} gave it where a dict with "
                f"key {key!r} was expected",
            )
        if key not in value:
            return None
        value = value[key]
    if _is_nan(value):
        return Unscored(score.reason or "unscored")
    metadata: dict[str, Any] = {}
    if isinstance(value, str) and value in LETTERS:
        metadata["inspect_value"] = value
        value = LETTERS[value]
    for field in ("answer", "reason", "metadata"):
        if getattr(score, field) is not None:
            metadata[field] = getattr(score, field)
    return Score(value, rationale=score.explanation or None, metadata=metadata or None)


def _is_nan(value: object) -> bool:
    return type(value) is float and math.isnan(value)


def _unix(when: str | None) -> float:
    if not when:
        return math.nan
    try:
        return datetime.fromisoformat(when).timestamp()
    except ValueError:
        return math.nan


def _usage(sample: AnySample, events: Sequence[Any]) -> dict[str, Tally] | None:
    """The sample's model usage as one "task" tally; None when Inspect recorded none."""
    if not sample.model_usage:
        return None
    tally = Tally()
    for usage in sample.model_usage.values():
        try:
            tokens_in = amount("input_tokens", usage.input_tokens)
            tokens_out = amount("output_tokens", usage.output_tokens)
            cost = amount("cost", usage.total_cost)
        except InvalidUsage as exc:
            tally.invalid = tally.invalid or str(exc)
            continue
        tally.add(
            math.nan if tokens_in is None else tokens_in,
            math.nan if tokens_out is None else tokens_out,
            math.nan if cost is None else cost,
            calls=0,
        )
    tally.calls = sum(1 for event in events if event.event == "model")
    return {"task": tally}


def _check_version(path: Path, header_json: bytes) -> None:
    """A log of a newer format than the installed inspect-ai reads is that, not damage: the
    same rule for every importer (docs/interop.md): a newer version is refused by name."""
    try:
        found = json.loads(header_json).get("version")
    except (ValueError, AttributeError):
        return  # Inspect's own read says what is wrong
    from inspect_ai.log import EvalLog as Log  # optional: only when an Inspect log is read

    known = Log.model_fields["version"].default
    if isinstance(found, int) and not isinstance(found, bool) and found > known:
        check_version(
            path,
            found,
            harness="Inspect AI log",
            reads=range(1, known + 1),
            upgrade=f"upgrade inspect-ai, which reads the log (installed: {_installed()}; "
            "pip install -U inspect-ai)",
        )


def _installed() -> str:
    try:
        return importlib.metadata.version("inspect-ai")
    except importlib.metadata.PackageNotFoundError:
        return "(unknown version)"
