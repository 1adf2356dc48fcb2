"""Import Inspect AI logs: the `.eval` and `.json` files `inspect_ai.eval(...)` writes.

The mapping was learned from Inspect AI's own code (inspect_ai 0.3.285):

- `inspect_ai.log.read_eval_log` (`log/_file.py`) and the two recorders it dispatches to.
  `EvalRecorder._read_log` (`log/_recorders/eval.py`): a `.eval` log is a zip archive of
  `header.json` (the eval's spec, plan, results; `_journal/start.json` while the eval still
  runs), one `samples/<id>_epoch_<n>.json` per sample (`_sample_filename`; a re-logged member
  supersedes the earlier one of its name), `summaries.json` and `reductions.json`; Inspect
  reads the archive without checking CRCs. `JSONRecorder._read_header_streaming`
  (`log/_recorders/json.py`): a `.json` log is one object whose keys come in `EvalLog`'s field
  order, `version` first and `samples` near the end, with NaN written as a JSON constant.
- `EvalSample` (`log/_log.py`): `id`, `epoch`, `input` (text or chat messages), `target`,
  `metadata`, `output.completion`, `scores` (by scorer), `error` (`EvalError`: `message` is the
  exception's repr, `traceback` ends with `Type: message`), `limit` (`EvalSampleLimit.type`:
  context, time, working, message, token, turn, cost, operator, custom), `error_retries`,
  `model_usage`, `started_at`, `total_time`.
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

import io
import json
import math
import re
import struct
import zipfile
from collections.abc import Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._model._contract import Score, ScoreError, Unscored
from .._model._usage import InvalidUsage, Tally, amount
from ._imported import Format, FormatError, Imported, ImportedSample, ImportedScore

if TYPE_CHECKING:  # the extra's types, for mypy only (inspect_ai loads inside read)
    from inspect_ai.log import EvalLog, EvalSample

__all__ = ["FORMAT", "LETTERS", "read_inspect"]

_NAME = "inspect"
_EXPECTED = (
    "an Inspect AI log: a `.eval` zip archive holding header.json and samples/*.json, or a "
    '`.json` file starting {"version": N, "status": ...}'
)
# Inspect's letter values and the numbers its value_to_float gives them; no other text maps
LETTERS: Mapping[str, float] = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}
# limits that are a time running out (outcome timed_out); every other limit is an error
_TIME_LIMITS = ("time", "working")
_HEADER = "header.json"
_START = "_journal/start.json"
_SAMPLES = "samples/"
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_WS = re.compile(r"[ \t\n\r]*")
# zip records (APPNOTE 4.3.7, 4.3.12, 4.3.16): a local file header, a directory entry, its end
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_TYPE_LINE = re.compile(r"^([A-Za-z_][\w.]*): ")
_REPR_TYPE = re.compile(r"^([A-Za-z_][\w.]*)\(")
# how much of a .json file sniff reads
_SNIFF_BYTES = 256
# the keys of a .json log that are not its header
_NOT_HEADER = ("samples", "reductions")


def _inspect_log() -> Any:
    """`inspect_ai.log`, imported here: Inspect AI is the optional extra `evalbook[inspect]`."""
    try:
        import inspect_ai.log  # optional extra: only Inspect logs need it
    except ImportError as exc:
        raise ImportError(
            'reading Inspect AI logs needs Inspect AI: pip install "evalbook[inspect]"'
        ) from exc
    return inspect_ai.log


# -- telling a log from anything else ------------------------------------------------------


def _is_eval(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            if f.read(4) != b"PK\x03\x04":
                return False
        with zipfile.ZipFile(path) as zf:
            names = set(zf.namelist())
    except Exception:  # sniff never raises: an unreadable file is not this format
        return False
    return _HEADER in names or _START in names


def _is_json(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return _JSON_HEAD.match(f.read(_SNIFF_BYTES)) is not None
    except Exception:  # sniff never raises
        return False


def _is_log(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return path.is_file() and _is_eval(path)
    if suffix == ".json":
        return path.is_file() and _is_json(path)
    return False


def _logs_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if _is_log(p))


def _sniff(path: Path) -> bool:
    """An Inspect log file, or a folder holding exactly one (an Inspect `log_dir`)."""
    try:
        if path.is_dir():
            return len(_logs_in(path)) == 1
        return _is_log(path)
    except Exception:  # sniff never raises
        return False


def _not_inspect(path: Path, why: str) -> FormatError:
    return FormatError(f"{path}: not an Inspect AI log ({why}); expected {_EXPECTED}")


def _damaged(path: Path, why: str) -> FormatError:
    return FormatError(
        f"{path}: this Inspect AI log is damaged and cannot be read ({why}); import an intact "
        "copy, or re-run the eval"
    )


# -- reading the parts: a header and raw samples, each readable one kept ---------------------


def _read_eval(path: Path) -> tuple[bytes, list[tuple[str, bytes]], list[str]]:
    """The header's JSON, each sample member's JSON (CRC-checked), and what was unreadable."""
    with path.open("rb") as f:
        zipped = f.read(4) == b"PK\x03\x04"
    if not zipped:
        raise _not_inspect(path, "not a zip archive")
    skipped: list[str] = []
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        # the zip directory is at the archive's end: a log cut short has lost it
        salvaged, whole = _salvage(path.read_bytes())
        if not whole:
            why = f"its zip directory is unreadable and no member before it is whole: {exc}"
            raise _damaged(path, why) from None
        zf = zipfile.ZipFile(io.BytesIO(salvaged))
        skipped.append(
            f"{path.name}: the archive is cut short (no zip directory); read the {whole} whole "
            "members before the cut"
        )
    samples: list[tuple[str, bytes]] = []
    with zf:
        # name-based access resolves to a name's last member, as Inspect's reader does
        members = {info.filename: info for info in zf.infolist()}
        head = _HEADER if _HEADER in members else _START if _START in members else None
        if head is None:
            raise _not_inspect(path, f"the archive has no {_HEADER}")
        header, why = _member(zf, members[head])
        if header is None:
            raise _damaged(path, f"{head}: {why}")
        for name, info in members.items():
            if name.startswith(_SAMPLES) and name.endswith(".json"):
                data, why = _member(zf, info)
                if data is None:
                    skipped.append(f"{path.name}:{name}: {why}")
                else:
                    samples.append((f"{path.name}:{name}", data))
    return header, samples, skipped


def _salvage(body: bytes) -> tuple[bytes, int]:
    """The archive's whole members before a cut, with a zip directory made for them.

    Walks the local headers from the start (Inspect's zipfile writes each member's sizes and
    CRC there, no data descriptor); stops at the first member that is not whole, or whose
    sizes are not in its header (a data descriptor, zip64). The CRCs copied into the new
    directory are the writer's, so every member read from it is still checked.
    """
    pos, directory, n = 0, bytearray(), 0
    while body.startswith(b"PK\x03\x04", pos) and pos + _LOCAL.size <= len(body):
        _, need, flags, method, time, date, crc, size, full, n_name, n_extra = _LOCAL.unpack_from(
            body, pos
        )
        end = pos + _LOCAL.size + n_name + n_extra + size
        if flags & 0x08 or size == 0xFFFFFFFF or end > len(body):
            break
        name = body[pos + _LOCAL.size : pos + _LOCAL.size + n_name]
        directory += _CENTRAL.pack(
            0x02014B50, need, need, flags, method, time, date, crc, size, full, n_name,
            0, 0, 0, 0, 0, pos,
        )  # fmt: skip
        directory += name
        n += 1
        pos = end
    end_record = _END.pack(0x06054B50, 0, 0, n, n, len(directory), pos, 0)
    return body[:pos] + bytes(directory) + end_record, n


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[bytes | None, str]:
    """A member's bytes, read whole so zipfile checks its CRC; None and why when unreadable."""
    try:
        return zf.read(info), ""
    except Exception as exc:  # a damaged member: bad CRC, broken stream, unknown method
        return None, f"unreadable ({type(exc).__name__}: {exc})"


def _read_json(path: Path) -> tuple[bytes, list[tuple[str, bytes]], list[str]]:
    """The header's JSON, each sample's JSON, and where the log stops being readable."""
    raw = path.read_bytes()
    if _JSON_HEAD.match(raw[:_SNIFF_BYTES]) is None:
        raise _not_inspect(path, 'it does not start {"version": N, "status": ...}')
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # keep what comes before the first undecodable byte: the scan stops there
        text = raw[: exc.start].decode("utf-8")
    fields: dict[str, Any] = {}
    samples: list[tuple[str, bytes]] = []
    stop = _scan(text, fields, samples, path.name)
    skipped: list[str] = []
    if stop is not None:
        at, why = stop
        if "eval" not in fields:
            raise _damaged(path, f"line {_line(text, at)}: {why}, before its samples")
        skipped.append(
            f"{path.name}:{_line(text, at)}: {why}; the rest of the log is not read "
            f"({len(samples)} samples before it)"
        )
    header = json.dumps({k: v for k, v in fields.items() if k not in _NOT_HEADER})
    return header.encode(), samples, skipped


def _skip(text: str, pos: int) -> int:
    """The position after the JSON whitespace at `pos`."""
    found = _WS.match(text, pos)
    return pos if found is None else found.end()


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _scan(
    text: str, fields: dict[str, Any], samples: list[tuple[str, bytes]], file: str
) -> tuple[int, str] | None:
    """Read the log's top-level values into `fields`, each sample into `samples`.

    A value is kept only once the delimiter after it is read, so a log cut short never yields
    a shortened value. Returns where and why reading stopped, or None when it read to the end.
    """
    decoder = json.JSONDecoder()
    pos = _skip(text, _skip(text, 0) + 1)  # after the "{" the sniff saw
    while True:
        if text.startswith("}", pos):
            return None
        try:
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
            if not text.startswith(":", pos) or not isinstance(key, str):
                return pos, "expected a key and ':'"
            pos = _skip(text, pos + 1)
            if key == "samples":
                stop, pos = _scan_samples(text, pos, decoder, samples, file)
                if stop is not None:
                    return stop
            else:
                value, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
        except json.JSONDecodeError as exc:
            return exc.pos, f"cut short or damaged ({exc.msg})"
        except RecursionError:
            return pos, "nested too deeply"
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("}", pos):
            return pos, "cut short or damaged (expected ',' or '}')"
        if key != "samples":
            fields[key] = value


def _scan_samples(
    text: str,
    pos: int,
    decoder: json.JSONDecoder,
    samples: list[tuple[str, bytes]],
    file: str,
) -> tuple[tuple[int, str] | None, int]:
    """The `samples` array from `pos`: each sample whose delimiter follows it is kept."""
    if not text.startswith("[", pos):
        return (pos, "expected the samples array"), pos
    pos = _skip(text, pos + 1)
    while not text.startswith("]", pos):
        start = pos
        value, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("]", pos):
            return (pos, "cut short or damaged (expected ',' or ']')"), pos
        where = f"{file}:{_line(text, start)}"
        samples.append((where, json.dumps(value).encode()))
    return None, pos + 1


# -- from Inspect's records to evalbook's ---------------------------------------------------


def read_inspect(path: Path) -> Imported:
    """Read an Inspect AI log (`.eval` or `.json`, or a folder holding one) as an import.

    Unreadable samples (a damaged zip member, a `.json` log cut short) are listed in
    `skipped`; the rest is imported. Needs Inspect AI (`pip install "evalbook[inspect]"`).

    Example:
        >>> from pathlib import Path
        >>> log = Path(__file__).parents[3] / "tests/interop/fixtures/inspect/tiny.eval"
        >>> imported = read_inspect(log)
        >>> imported.name, [s.name for s in imported.scores][:2]
        ('tiny', ['match', 'too_big'])
    """
    log_api = _inspect_log()  # also teaches zipfile Inspect's zstd members
    path = Path(path)
    if path.is_dir():
        logs = _logs_in(path)
        if len(logs) != 1:
            names = ", ".join(p.name for p in logs[:5]) or "none"
            raise FormatError(
                f"{path}: a folder of Inspect AI logs must hold exactly one to import, it holds "
                f"{len(logs)} ({names}); pass the log file itself"
            )
        path = logs[0]
    if not path.is_file():
        raise _not_inspect(path, "not a file")
    suffix = path.suffix.lower()
    if suffix == ".eval":
        header_json, raw_samples, skipped = _read_eval(path)
    elif suffix == ".json":
        header_json, raw_samples, skipped = _read_json(path)
    else:
        raise _not_inspect(path, f"the name ends {suffix or 'without a suffix'!r}")
    try:
        header: EvalLog = log_api.read_eval_log(io.BytesIO(header_json), format="json")
    except Exception as exc:  # Inspect refused the header: its version, its fields
        raise _damaged(path, f"Inspect could not read its header: {_first_line(exc)}") from None
    samples: list[EvalSample] = []
    for where, data in raw_samples:
        try:
            sample = log_api.EvalSample.model_validate_json(data)
            samples.append(log_api.resolve_sample_attachments(sample, "core"))
        except Exception as exc:  # one sample Inspect's model refuses: skip it, keep the rest
            skipped.append(f"{where}: not an Inspect sample ({_first_line(exc)})")
    # Inspect's own sample order (sort_samples): epoch, then id
    samples.sort(key=lambda s: (s.epoch, s.id if isinstance(s.id, str) else str(s.id).zfill(20)))
    return _imported(path, header, samples, skipped, log_api)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


def _score_keys(header: EvalLog, samples: list[EvalSample]) -> list[tuple[str, str | None]]:
    """(scorer, key) of every score: the log's results, then its scorers, then as first seen.

    key is None for a scorer's own value, else a key of a dict-valued score. The eval's
    scorers give the same names and order when the log has no results (cut short, still
    running); a key pattern (`"*"`) is left to the samples to name.
    """
    keyed = {s.name for s in (header.eval.scorers or []) if isinstance(s.metrics, dict)}
    found: dict[tuple[str, str | None], None] = {}
    for ev in header.results.scores if header.results is not None else []:
        key = None if ev.name == ev.scorer and ev.scorer not in keyed else ev.name
        found.setdefault((ev.scorer, key), None)
    listed = {scorer for scorer, _ in found}
    for spec in header.eval.scorers or []:
        if spec.name in listed:
            continue
        if not isinstance(spec.metrics, dict):
            found.setdefault((spec.name, None), None)
            listed.add(spec.name)
            continue
        for key in spec.metrics:
            if not any(c in key for c in "*?["):
                found.setdefault((spec.name, key), None)
        if all(not any(c in key for c in "*?[") for key in spec.metrics):
            listed.add(spec.name)
    for sample in samples:
        for scorer, score in (sample.scores or {}).items():
            if scorer in listed:
                continue
            if isinstance(score.value, dict):
                for key in score.value:
                    found.setdefault((scorer, str(key)), None)
            elif not _is_nan(score.value):
                found.setdefault((scorer, None), None)
    for sample in samples:  # a scorer that only ever gave NaN: its own value, unscored
        for scorer in sample.scores or {}:
            if scorer not in listed and not any(s == scorer for s, _ in found):
                found.setdefault((scorer, None), None)
    return list(found)


def _raw_names(keys: list[tuple[str, str | None]]) -> dict[tuple[str, str | None], str]:
    """Inspect's names: a scorer's, or a dict key's; `<scorer>.<key>` where a key is taken."""
    names: dict[tuple[str, str | None], str] = {}
    taken: set[str] = set()
    for scorer, key in keys:
        name = scorer if key is None else key
        if name in taken:
            name = f"{scorer}.{key}"  # Inspect's own "<scorer>.<score>" headline shorthand
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
    ev = resolved.score
    keyed = {s.name for s in (header.eval.scorers or []) if isinstance(s.metrics, dict)}
    return (ev.scorer, None if ev.name == ev.scorer and ev.scorer not in keyed else ev.name)


def _imported(
    path: Path, header: EvalLog, samples: list[EvalSample], skipped: list[str], log_api: Any
) -> Imported:
    keys = _score_keys(header, samples)
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
        format=_NAME,
        path=path,
        name=spec.task,
        scores=scores,
        samples=[_sample(s, keys, names) for s in samples],
        skipped=skipped,
        source={k: v for k, v in source.items() if v is not None},
    )


def _sample(
    sample: EvalSample,
    keys: list[tuple[str, str | None]],
    names: Mapping[tuple[str, str | None], str],
) -> ImportedSample:
    outcome, error_type, error_message = _outcome(sample)
    values: dict[str, object] = {}
    for scorer, key in keys:
        score = (sample.scores or {}).get(scorer)
        if score is not None:
            value = _value_of(score, scorer, key)
            if value is not None:
                values[names[(scorer, key)]] = value
    return ImportedSample(
        case_id=str(sample.id),
        epoch=sample.epoch,
        input=dict(_inputs(sample)),
        output=sample.output.completion if sample.output.choices else None,
        outcome=outcome,
        error_type=error_type,
        error_message=error_message,
        scores=values,
        started_at=_unix(sample.started_at),
        duration_s=math.nan if sample.total_time is None else sample.total_time,
        attempts=1 + len(sample.error_retries or []),
        usage=_usage(sample),
    )


def _inputs(sample: EvalSample) -> Iterator[tuple[str, Any]]:
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


def _outcome(sample: EvalSample) -> tuple[str, str | None, str | None]:
    """(outcome, error type, message): an error, then a limit; else passed."""
    if sample.error is not None:
        return "errored", _error_type(sample.error), sample.error.message
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
    return found.group(1) if found else "InspectError"


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


def _usage(sample: EvalSample) -> dict[str, Tally] | None:
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
    tally.calls = sum(1 for event in sample.events if event.event == "model")
    return {"task": tally}


FORMAT = Format(name=_NAME, expected=_EXPECTED, sniff=_sniff, read=read_inspect)
