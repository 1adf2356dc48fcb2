"""Shared fixtures of the run store tests (test_store, test_load, test_files, test_rescore)."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import pandas as pd
from pandas.testing import assert_frame_equal

import evalbook as eb

# -- fixtures -------------------------------------------------------------------------------

correct = eb.define_score(
    "correct",
    label={"en": "Correct", "zh-Hans": "正确"},
    grader=eb.Grader(kind="rule", id="exact"),
)
judged = eb.define_score("judged", label="Judged", errors="zero")
passed = eb.define_score("pass", combine=eb.all_of(correct, eb.at_least(judged, 0.5)), primary=True)


@eb.scorer(correct)
def exact(output: Any, expected: str) -> float:
    if output == "BOOM":
        raise ValueError("scorer exploded")
    return float(output == expected)


@eb.scorer(judged)
def judge(output: Any) -> Any:
    if output is None:
        return eb.Unscored("no_output")
    if output == "BAD":
        return "high"  # invalid: an error record
    return eb.Score(0.75, rationale="<b>fine</b> 很好", metadata={"raw": 75, "votes": [70, 80]})


def task_fn(question: str, ctx: Any) -> Any:
    if question == "err":
        raise RuntimeError("model down")
    if question == "fail":
        ctx.fail("refused")
    if question == "none":
        return None
    return question.upper()


DATA = pd.DataFrame(
    {
        "question": ["a", "b", "err", "fail", "none", "boom", "bad", "c"],
        "expected": ["A", "x", "E", "F", "N", "BOOM", "BAD", "C"],
    }
)


def run_t(store: Path | None, **kw: Any) -> eb.Run:
    return eb.run(
        DATA,
        task=task_fn,
        scorers=[exact, judge],
        scores=[passed],
        name=kw.pop("name", "t"),
        store=store,
        progress=False,
        **kw,
    )


def assert_same(a: eb.Run, b: eb.Run) -> None:
    assert_frame_equal(a.cases, b.cases)
    assert_frame_equal(a.scores, b.scores)
    assert_frame_equal(a.summary(), b.summary())
    assert_frame_equal(a.unscored(), b.unscored())
    assert_frame_equal(a.wide(), b.wide())
    assert a.headline == b.headline
    assert a.headline.text == b.headline.text
    assert [d.model_dump() for d in a.definitions] == [d.model_dump() for d in b.definitions]
    assert (a.name, a.id) == (b.name, b.id)


def events_of(run: eb.Run) -> list[dict[str, Any]]:
    assert run.path is not None
    lines = (run.path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


FINAL_FILES = ("cases.parquet", "scores.parquet", "summary.json")


def drop_final_files(folder: Path) -> None:
    """Leave only the event log and the data (as after a crash)."""
    for name in FINAL_FILES:
        (folder / name).unlink()


# -- editing a log by hand (each version 3 and 4 line carries its checksum) ---------------

SCHEMA_VERSION = 4  # the version every file is written at (docs/file-formats.md)
MAX_LINE_MIB = 64  # the longest line a log may have ("Bounded reads")

_SEAL = re.compile(r',"crc":"[0-9a-f]{8}"\}$')


def seal(obj: str) -> str:
    """An event line as docs/file-formats.md ("The checksum") spells it: the JSON object
    `obj` with `"crc"` last, the CRC-32 of `obj` exactly as written, 8 lowercase hex digits."""
    return f'{obj[:-1]},"crc":"{zlib.crc32(obj.encode()):08x}"}}\n'


def resealed(text: str) -> str:
    """Log text whose lines were edited by hand, each line sealed again (its checksum now)."""
    lines = text.splitlines()
    return "".join(seal(_SEAL.sub("}", line)) if line.strip() else "\n" for line in lines)


def as_v2(text: str) -> str:
    """Version 3 or 4 log text as the version 2 writer wrote it: no `epoch`, no checksum,
    no `origin`."""
    out = []
    for line in _without_origin(text).splitlines():
        line = _SEAL.sub("}", line).replace(',"epoch":1', "")
        line = re.sub(r'^\{"schema_version":[34],', '{"schema_version":2,', line)
        out.append(line + "\n")
    return "".join(out)


_ORIGIN = re.compile(r',"origin":"[a-z]+"')


def _without_origin(text: str) -> str:
    return _ORIGIN.sub("", text)


def as_v3(text: str) -> str:
    """Version 4 log text as the version 3 writer wrote it: no `origin` keys."""
    out = []
    for line in _without_origin(text).splitlines():
        line = _SEAL.sub("}", line).replace('{"schema_version":4,', '{"schema_version":3,', 1)
        out.append(seal(line))
    return "".join(out)
