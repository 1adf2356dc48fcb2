"""`transcripts.jsonl`: one checksummed line per sample's transcript, read on first use.

A sample's transcript line is written (one `os.write`, to a file opened with `O_APPEND`)
before the sample's `case.ended` line, and that line names it: `"steps":[n_steps,
n_tool_calls, n_tool_errors],"transcript":"<crc>"`, the CRC-32 the transcript line is sealed
with (its tie). So the log stays small (no message text), loading a run never opens this
file, and a transcript is read only as the line its sample's `case.ended` names: a line left
by an attempt that never ended (a crash between the two writes, a retry) is never read as
the sample's. The lines follow the log's rules (docs/file-formats.md): bounded, each with
its checksum, a damaged one reported with file and line and never read as a transcript.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import TypeAdapter

from .._model._results import Results
from .._model._transcript import Message, Transcript, counts_of
from .._util._text import TextGate
from .._util._warn import warn
from ._layout import PARQUET_CAP, STEPS, TRANSCRIPTS, read_regular
from ._log._file import LineReader, LineTooLong, LogFile
from ._log._format import SCHEMA_VERSION, Bad, event_of, open_log, seal
from ._log._write import dumps
from ._parquet import frame_of, read_parquet
from ._ties import crc_of

__all__ = [
    "TranscriptFile",
    "all_transcripts",
    "one_transcript_reader",
    "steps_file_reader",
    "transcript_line",
    "transcript_reader",
]

_TEXT = ("content", "tool_call_id", "tool_args", "error")  # the steps table's free text
_MESSAGES = TypeAdapter(list[Message])  # one call per line, not one per message
_HEAD = f'{{"schema_version":{SCHEMA_VERSION},"event":"transcript","case_id":'
_CRC = re.compile(rb',"crc":"([0-9a-f]{8})"\}\s*\Z')


def transcript_line(case_id: str, epoch: int, transcript: Transcript) -> tuple[str, str]:
    """The line of one sample's transcript and its tie (the checksum it is sealed with)."""
    messages = [m.model_dump(exclude_defaults=True) for m in transcript.messages]
    line = seal(f'{_HEAD}{dumps(case_id)},"epoch":{epoch},"messages":{dumps(messages)}}}')
    return line, line[-11:-3]


def all_transcripts(results: Results) -> str:
    """Every transcript's line, in slot order (a saved copy's whole file); sets the ties."""
    lines = []
    for pos, transcript in enumerate(results.read_transcripts()):
        if transcript is not None:
            cid, epoch = results.case_id_of(pos), results.epoch_of(pos)
            line, results.ties[pos] = transcript_line(cid, epoch, transcript)
            lines.append(line)
    return "".join(lines)


class TranscriptFile:
    """A run's `transcripts.jsonl`, opened (and locked) on the first transcript written."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / TRANSCRIPTS
        self._file: LogFile | None = None

    def write(self, line: str) -> None:
        """Append one line (OSError when it cannot be written, as the log's writes)."""
        if self._file is None:
            self._file = LogFile(self.path, append=True)
        self._file.write(line.encode())

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def transcript_reader(folder: Path, results: Results) -> Callable[[], list[Transcript | None]]:
    """What `results` calls to read its samples' transcripts, the first time one is needed."""
    path = folder / TRANSCRIPTS

    def read() -> list[Transcript | None]:
        return _read(path, results)

    return read


def one_transcript_reader(folder: Path, results: Results) -> Callable[[int], Transcript | None]:
    """What `results` calls for one sample's transcript (a case view): the first call finds
    where each tied line starts (its end's checksum only, nothing parsed), each call then
    reads and checks that one line. A damaged line or a tie no line answers: None, with a
    warning naming the file and line (the sample then shows no transcript)."""
    path = folder / TRANSCRIPTS
    where: dict[int, tuple[int, int, int]] = {}  # pos → (line number, offset, length)
    indexed: list[bool] = []

    def index() -> None:
        wanted = {tie: pos for pos, tie in enumerate(results.ties) if tie is not None}
        try:
            with open_log(path) as f:
                for number, offset, raw in LineReader(f, path):
                    found = _CRC.search(raw)
                    pos = None if found is None else wanted.pop(found[1].decode(), None)
                    if pos is not None:
                        where[pos] = (number, offset, len(raw))
        except (OSError, ValueError, LineTooLong):
            pass  # what was found until then is read; the rest warns as missing
        indexed.append(True)

    def read(pos: int) -> Transcript | None:
        if not indexed:
            index()
        if pos not in where:
            warn(
                f"{path} holds no readable line for case {results.case_id_of(pos)!r}, epoch "
                f"{results.epoch_of(pos)}: it shows no transcript",
                RuntimeWarning,
            )
            return None
        number, offset, length = where[pos]
        try:
            with open_log(path) as f:
                f.seek(offset)
                raw = f.read(length)
            return _transcript(path, number, offset, raw, results, pos, TextGate())
        except Bad as bad:
            problem = f"{path}, line {bad.number}: {bad.reason}"
        except (OSError, ValueError) as exc:
            problem = str(exc)
        warn(f"{problem}; case {results.case_id_of(pos)!r} shows no transcript", RuntimeWarning)
        return None

    return read


def steps_file_reader(folder: Path, recorded: Any) -> Callable[[], Any]:
    """What a loaded run calls for its steps table: `steps.parquet`, if it is the file
    `summary.json` was written with (its CRC-32); else None, with a warning (the table is
    then built from the transcripts)."""
    path = folder / STEPS

    def read() -> Any:
        try:
            data = read_regular(path, PARQUET_CAP)
            if not isinstance(recorded, dict) or recorded.get("crc") != crc_of(data):
                raise ValueError("it is not the file summary.json was written with")
            arrow = read_parquet(path, data)
            frame = frame_of(arrow)
            for name in _TEXT:  # free text: object columns, None where missing (as built)
                frame[name] = pd.Series(arrow.column(name).to_pylist(), dtype=object)
            return frame
        except Exception as exc:
            warn(
                f"{path} cannot be read ({type(exc).__name__}: {exc}); the steps table is "
                f"built from {TRANSCRIPTS} instead",
                RuntimeWarning,
            )
            return None

    return read


def _read(path: Path, results: Results) -> list[Transcript | None]:
    """Each sample's transcript, by the tie its `case.ended` line gave (None: none).

    A line that is damaged, or a tie no line answers, leaves that sample without a
    transcript, with one warning naming the file and the first such line: never another
    line's transcript, never an invented one.
    """
    wanted = {tie: pos for pos, tie in enumerate(results.ties) if tie is not None}
    out: list[Transcript | None] = [None] * results.n_samples
    if not wanted:
        return out
    damaged: list[str] = []
    gate = TextGate()
    try:
        f = open_log(path)
    except (OSError, ValueError) as exc:
        damaged.append(str(exc))
        f = None
    if f is not None:
        with f:
            reader = LineReader(f, path)
            try:
                for number, offset, raw in reader:
                    found = _CRC.search(raw)
                    pos = None if found is None else wanted.get(found[1].decode())
                    if pos is None:  # another attempt's line, or a damaged one
                        if found is None and raw.strip():
                            damaged.append(f"{path}, line {number}: no checksum at its end")
                        continue
                    try:
                        out[pos] = _transcript(path, number, offset, raw, results, pos, gate)
                    except Bad as bad:
                        damaged.append(f"{path}, line {bad.number}: {bad.reason}")
                        continue
                    del wanted[found[1].decode()]  # type: ignore[index]
            except LineTooLong as exc:
                damaged.append(str(exc))
            if reader.truncated is not None:
                damaged.append(f"{path}, line {reader.truncated}: truncated")
    missing = list(wanted.values())
    if missing:
        first = results.case_id_of(missing[0]), results.epoch_of(missing[0])
        where = damaged[0] if damaged else f"{path} holds no line for them"
        warn(
            f"{len(missing)} sample(s) of this run have no readable transcript ({where}; the "
            f"first: case {first[0]!r}, epoch {first[1]}); they have no steps rows",
            RuntimeWarning,
        )
        for pos in missing:
            results.steps[pos] = -1
    return out


def _transcript(
    path: Path, number: int, offset: int, raw: bytes, results: Results, pos: int, gate: TextGate
) -> Transcript:
    """One checked line as its sample's transcript; `Bad` if it is not exactly that."""
    event = event_of(path, number, offset, raw)  # the checksum and the version, checked
    if b"\\u" in raw:  # a lone surrogate escape is possible only then
        event = gate(event, f"{path}, line {number}")
    cid, epoch = results.case_id_of(pos), results.epoch_of(pos)
    if event.get("event") != "transcript" or event.get("case_id") != cid:
        raise Bad(number, offset, f"the line is not the transcript of case {cid!r}")
    if event.get("epoch") != epoch or not isinstance(event.get("messages"), list):
        raise Bad(number, offset, f"the line is not the transcript of epoch {epoch}")
    try:
        messages = _MESSAGES.validate_python(event["messages"])
    except ValueError as exc:
        raise Bad(number, offset, f"a message that does not validate ({_first(exc)})") from None
    transcript = Transcript.model_construct(messages=messages, output=None)
    counts: Any = tuple(int(x) for x in results.steps[pos])
    if counts_of(messages) != counts:
        raise Bad(number, offset, f"the transcript's counts are not {counts} as logged")
    return transcript


def _first(exc: ValueError) -> str:
    return str(exc).splitlines()[0][:200]
