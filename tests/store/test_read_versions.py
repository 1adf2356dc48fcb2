"""Logs of schema_version 1 and 2 still load (docs/file-formats.md, "Versions").

`fixtures/v2-log` was written by the version 2 writer (evalbook at commit 3af200a, before the
checksums) for the cases of `_store_helpers`; `fixtures/v1-log` is the same run in the version 1
format (times as float seconds: `at`, `started_at`, `duration_s`), made from it by hand.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import seal

FIXTURES = Path(__file__).parent / "fixtures"


def _load(tmp_path: Path, name: str, text: str | None = None) -> eb.Run:
    folder = tmp_path / name
    shutil.copytree(FIXTURES / name, folder)
    if text is not None:
        (folder / "events.jsonl").write_text(text, encoding="ascii")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "run 'fixture' .* is incomplete", RuntimeWarning)
        return eb.load_run(folder)


def _as_v3(text: str) -> str:
    """The version 2 fixture as a version 3 writer words it: epoch 1, a checksum a line."""
    out = []
    for line in text.splitlines():
        event = json.loads(line)
        event["schema_version"] = 3
        if "case_id" in event:
            event = {
                **dict(list(event.items())[:3]),
                "epoch": 1,
                **dict(list(event.items())[3:]),
            }
        out.append(seal(json.dumps(event, separators=(",", ":"))))
    return "".join(out)


def test_version_1_and_2_logs_load_to_the_same_tables(tmp_path: Path) -> None:
    v1 = _load(tmp_path, "v1-log")
    v2 = _load(tmp_path, "v2-log")
    assert_frame_equal(v1.cases, v2.cases)
    assert_frame_equal(v1.scores, v2.scores)
    assert_frame_equal(v1.summary(), v2.summary())
    assert (
        v2.cases["outcome"].tolist() == ["passed", "passed", "errored", "failed"] + ["passed"] * 4
    )
    headline = "pass 50% over 4 of 8 cases · completed 88% (1 errored)"
    assert v2.headline.text == v1.headline.text == headline
    assert v2.cases["started_at"].iloc[0].value == 1796123608021770 * 1000  # exact µs
    assert v1.cases["duration_s"].iloc[0] == 0.000434
    assert v2.scores["rationale"].iloc[1] == "<b>fine</b> 很好"


def test_the_same_run_as_version_3_loads_to_the_same_tables(tmp_path: Path) -> None:
    text = (FIXTURES / "v2-log" / "events.jsonl").read_text(encoding="ascii")
    v2 = _load(tmp_path, "v2-log")
    v3 = _load(tmp_path / "3", "v2-log", _as_v3(text))
    assert_frame_equal(v3.cases, v2.cases)
    assert_frame_equal(v3.scores, v2.scores)


def test_a_version_2_line_in_a_version_3_log_is_damage_at_that_line(tmp_path: Path) -> None:
    text = (FIXTURES / "v2-log" / "events.jsonl").read_text(encoding="ascii")
    lines = _as_v3(text).splitlines(keepends=True)
    lines[12] = text.splitlines(keepends=True)[12]  # one line of the old writer
    with pytest.warns(RuntimeWarning, match=r"line 13: a schema_version 2 line in a version 3"):
        run = _load(tmp_path, "v2-log", "".join(lines))
    assert run.cases["outcome"].notna().tolist() == [True] + [False] * 7  # the prefix only


def test_a_version_3_line_in_a_version_2_log_is_damage_at_that_line(tmp_path: Path) -> None:
    text = (FIXTURES / "v2-log" / "events.jsonl").read_text(encoding="ascii")
    lines = text.splitlines(keepends=True)
    lines[12] = _as_v3(text).splitlines(keepends=True)[12]
    with pytest.warns(RuntimeWarning, match=r"line 13: a schema_version 3 line in a version 2 log"):
        run = _load(tmp_path, "v2-log", "".join(lines))
    assert run.cases["outcome"].notna().tolist() == [True] + [False] * 7


def test_a_version_above_4_is_the_clear_version_error(tmp_path: Path) -> None:
    text = (FIXTURES / "v2-log" / "events.jsonl").read_text(encoding="ascii")
    newer = text.replace('"schema_version":2,', '"schema_version":5,')
    with pytest.raises(ValueError, match=r"line 1\) has schema_version 5.*reads schema_version 4"):
        _load(tmp_path, "v2-log", newer)
