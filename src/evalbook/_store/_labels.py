"""`labels.jsonl`: human labels of a run's samples, one checksummed line each, kept as given.

A label is appended the moment it is given (`eb.review`): one `os.write` to the file opened
with `O_APPEND` and locked for that write, so a kernel killed after the click keeps it. The
lines follow the log's rules (docs/file-formats.md): bounded, each with its checksum as last
key, a damaged one reported with file and line and never read as a label. A line is
`{"schema_version", "event": "label", "case_id", "epoch", "score", "label" (a number, or null
for a skip), "labeler", "labeled_at" (Unix seconds), "note", "skipped", "select", "seed",
"n", "candidates", "stratum", "stratum_size", "crc"}`: the draw's keys (`DRAW_KEYS`) since
version 5 (`LABELS_VERSION`); a version 3 or 4 line has none and reads as a label whose draw is
not known (a uniform draw to `eb.agreement`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from .._model._label_pick import SELECTIONS
from .._model._labels import DRAW_KEYS, LABEL_KEYS, Label
from .._model._run_data import RunData
from .._util._warn import warn
from ._layout import LABELS
from ._log._file import LineReader, LineTooLong, LogFile
from ._log._format import LABELS_READ_VERSIONS, LABELS_VERSION, Bad, event_of, open_log, seal
from ._log._write import dumps

__all__ = [
    "LABEL_COLUMNS",
    "append_label",
    "give_label",
    "given_labels",
    "label_frame",
    "label_line",
    "read_labels",
]

# `run.labels()`'s columns (docs/judges.md, "Labelling in the notebook"): the label's seven,
# then the draw that picked each labelled sample
LABEL_COLUMNS = ("case_id", "epoch", "score", "label", "labeler", "labeled_at", "note", *DRAW_KEYS)


def label_line(label: Label) -> str:
    """The label's sealed line."""
    fields = {k: getattr(label, k) for k in LABEL_KEYS}
    return seal(f'{{"schema_version":{LABELS_VERSION},"event":"label",{dumps(fields)[1:]}')


def append_label(folder: Path, label: Label) -> Label:
    """Append `label` to `folder/labels.jsonl` (stamped with the time now); the label as
    written. An `OSError` (a full disk, a folder gone) leaves no partial line."""
    stamped = Label(**{**{k: getattr(label, k) for k in LABEL_KEYS}, "labeled_at": time.time()})
    log = LogFile(folder / LABELS, append=True)
    try:
        log.write(label_line(stamped).encode())
    finally:
        log.close()
    return stamped


def give_label(run: RunData, label: Label) -> Label:
    """Keep `label` for `run`: appended to its `labels.jsonl` (a stored run), else in memory."""
    if run.path is None:
        stamped = Label(**{**{k: getattr(label, k) for k in LABEL_KEYS}, "labeled_at": time.time()})
        run.memory_labels.append(stamped)
        return stamped
    return append_label(Path(run.path), label)


def given_labels(run: RunData) -> list[Label]:
    """Every label given to `run`, in order (its file's, or those kept in memory)."""
    return list(run.memory_labels) if run.path is None else read_labels(Path(run.path))


def read_labels(folder: Path) -> list[Label]:
    """Every readable label of `folder/labels.jsonl`, in the order given (none: no file).
    A damaged line is left out, with one warning naming the file and its first such line."""
    path = folder / LABELS
    if not path.exists():
        return []
    out: list[Label] = []
    damaged: list[str] = []
    try:
        f = open_log(path)
    except ValueError as exc:
        warn(f"{exc}; the run's labels cannot be read", RuntimeWarning)
        return []
    with f:
        reader = LineReader(f, path)
        try:
            for number, offset, raw in reader:
                if not raw.strip():
                    continue
                try:
                    event = event_of(path, number, offset, raw, LABELS_READ_VERSIONS)
                    out.append(_label(event, number, offset))
                except Bad as bad:
                    damaged.append(f"{path}, line {bad.number}: {bad.reason}")
        except LineTooLong as exc:
            damaged.append(str(exc))
        if reader.truncated is not None:
            damaged.append(f"{path}, line {reader.truncated}: truncated")
    if damaged:
        warn(
            f"{len(damaged)} line(s) of the run's labels cannot be read and are left out "
            f"({damaged[0]})",
            RuntimeWarning,
        )
    return out


def _label(event: Mapping[str, Any], number: int, offset: int) -> Label:
    """A checked line as a label; `Bad` when it is not exactly one."""
    if event.get("event") != "label":
        raise Bad(number, offset, "the line is not a label")
    value = event.get("label")
    good = (
        isinstance(event.get("case_id"), str)
        and type(event.get("epoch")) is int
        and isinstance(event.get("score"), str)
        and (value is None or (type(value) in (int, float) and math.isfinite(value)))
        and all(event.get(k) is None or isinstance(event.get(k), str) for k in ("labeler", "note"))
        and type(event.get("skipped")) is bool
        and type(event.get("labeled_at")) in (int, float)
    )
    if not good:
        raise Bad(number, offset, "a label line whose fields are not those of a label")
    base = {k: event[k] for k in LABEL_KEYS if k not in DRAW_KEYS}
    if event["schema_version"] < 5:  # written before draws were recorded: not known
        return Label(**base)
    if not all(k in event for k in DRAW_KEYS) or not _draw_ok(event):
        raise Bad(number, offset, "a label line whose draw is not that of eb.review")
    return Label(**base, **{k: event[k] for k in DRAW_KEYS})


def _draw_ok(event: Mapping[str, Any]) -> bool:
    """The draw keys of a version 5 line: all null (a label copied from an older line), a
    random draw (no stratum) or a stratified one (a stratum within the candidates)."""
    select = event["select"]
    ints = {k: event[k] for k in DRAW_KEYS if k != "select"}
    if select is None:
        return all(v is None for v in ints.values())
    if select not in SELECTIONS or any(
        type(ints[k]) is not int for k in ("seed", "n", "candidates")
    ):
        return False
    if not (ints["seed"] >= 0 and ints["n"] >= 1 and ints["candidates"] >= 1):
        return False
    if select == "random":
        return ints["stratum"] is None and ints["stratum_size"] is None
    stratum, size = ints["stratum"], ints["stratum_size"]
    return (
        type(stratum) is int and type(size) is int and stratum >= 0
        and 1 <= size <= ints["candidates"]
    )  # fmt: skip


def label_frame(labels: list[Label]) -> pd.DataFrame:
    """`run.labels()`: the latest label per (case_id, epoch, score, labeler), skips left out,
    in the order last given (a later skip of a sample takes its label back). `labeled_at`
    is a UTC timestamp; the draw's columns (`DRAW_KEYS`) are nullable integers, null where the
    draw is not known."""
    latest: dict[tuple[str, int, str, str | None], Label] = {}
    for label in labels:
        key = (label.case_id, label.epoch, label.score, label.labeler)
        latest.pop(key, None)  # a new label replaces the old one, and moves to the end
        latest[key] = label
    kept = [x for x in latest.values() if not x.skipped]
    frame = pd.DataFrame(
        {
            "case_id": pd.Series([x.case_id for x in kept], dtype=object),
            "epoch": pd.Series([x.epoch for x in kept], dtype="int64"),
            "score": pd.Series([x.score for x in kept], dtype=object),
            "label": pd.Series([x.label for x in kept], dtype=float),
            "labeler": pd.Series([x.labeler for x in kept], dtype=object),
            "labeled_at": pd.to_datetime(
                pd.Series([x.labeled_at for x in kept], dtype=float), unit="s", utc=True
            ),
            "note": pd.Series([x.note for x in kept], dtype=object),
            "select": pd.Series([x.select for x in kept], dtype=object),
            **{k: pd.Series([getattr(x, k) for x in kept], dtype="Int64") for k in DRAW_KEYS[1:]},
        }
    )
    return frame[list(LABEL_COLUMNS)]
