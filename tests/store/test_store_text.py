"""Text in the run store: valid Unicode kept exactly, lone surrogates never reach the tables.

A lone surrogate is replaced where text enters a run, so the store writes valid UTF-8 only.
What it reads back goes through the same replacement: a `\\ud800` escape written by hand, and
the binary text columns (`surrogate_text`) of files written by evalbook 0.1.0.
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import SCHEMA_VERSION, assert_same, drop_final_files, resealed

FIXTURES = Path(__file__).parent / "fixtures"
EXACT = ["naïve café – 日本語 🎉", "<script>alert('x')</script> & <b>", "a😀b", "é\u0301", "\t"]

rated = eb.define_score("rated")


@eb.scorer(rated)
def rate(text: str) -> Any:
    return eb.Score(0.5, rationale=text, metadata={text: [text]})


def _exact_run(store: Path) -> eb.Run:
    data = pd.DataFrame({"text": EXACT}, index=pd.Index(EXACT, name="id"))
    return eb.run(data, task=lambda text: text, scorers=[rate], store=store, progress=False)


def test_valid_unicode_comes_back_exactly_from_the_files_and_from_the_log(tmp_path: Path) -> None:
    run = _exact_run(tmp_path)
    assert run.path is not None
    for loaded in (eb.load_run(run.path), None):
        if loaded is None:
            drop_final_files(run.path)
            loaded = eb.load_run(run.path)
        assert_same(loaded, run)
        assert loaded.cases["case_id"].tolist() == EXACT
        assert loaded.cases["output"].tolist() == EXACT
        assert loaded.scores["rationale"].tolist() == EXACT
        assert [json.loads(m) for m in loaded.scores["metadata"]] == [{t: [t]} for t in EXACT]
        assert loaded.data.index.tolist() == EXACT


def test_the_files_hold_plain_utf8_text(tmp_path: Path) -> None:
    run = _exact_run(tmp_path)
    assert run.path is not None
    for name in ("cases", "scores", "data"):
        table = pq.read_table(run.path / f"{name}.parquet")
        meta = json.loads(table.schema.metadata[b"evalbook"])
        # no `surrogate_text` any more
        assert meta == {
            "schema_version": SCHEMA_VERSION,
            "table": name,
        }  # no `surrogate_text` any more
        assert not any(str(f.type) == "binary" for f in table.schema)
    assert pq.read_table(run.path / "cases.parquet").column("output").to_pylist() == EXACT
    assert (run.path / "events.jsonl").read_bytes().isascii()


def test_a_hand_made_surrogate_escape_is_replaced_when_the_log_is_read(tmp_path: Path) -> None:
    run = _exact_run(tmp_path)
    assert run.path is not None
    drop_final_files(run.path)
    log = run.path / "events.jsonl"
    text = log.read_text(encoding="ascii")
    assert text.count('"rationale":"\\t"') == 1
    log.write_text(resealed(text.replace('"rationale":"\\t"', '"rationale":"x\\ud800y"')), "ascii")
    with pytest.warns(UnicodeWarning, match="lone surrogate"):
        loaded = eb.load_run(run.path)
    assert loaded.scores["rationale"].tolist() == [*EXACT[:-1], "x\\ud800y"]  # the escape, as text
    assert loaded.scores["rationale"].tolist()[-1].encode("utf-8")  # valid UTF-8 now


def _old_run(tmp_path: Path) -> Path:
    folder = tmp_path / "v010-odd-text"
    shutil.copytree(FIXTURES / "v010-odd-text", folder)
    return folder


def test_a_0_1_0_run_with_binary_text_columns_still_loads(tmp_path: Path) -> None:
    folder = _old_run(tmp_path)
    meta = json.loads(pq.read_schema(folder / "scores.parquet").metadata[b"evalbook"])
    assert "rationale" in meta["surrogate_text"]  # written before this change
    loaded = eb.load_run(folder)
    scores = loaded.scores.set_index(["case_id", "score"])
    assert scores.loc[("c0", "rated"), "rationale"] == "x\\ud800y"  # escaped, no longer lone
    assert json.loads(scores.loc[("c0", "rated"), "metadata"]) == {"k": "\\ud800"}
    assert scores.loc[("c1", "rated"), "reason"] == "why\\udfff"
    assert scores.loc[("c2", "other"), "reason"] == "ctx\\ud800 reason"
    assert scores.loc[("c6", "rated"), "rationale"] == "<script>é</script>"  # exact
    cases = loaded.cases.set_index("case_id")
    assert cases.loc["c3", "error_message"] == "bad\\udcff"
    assert cases.loc["c4", "output"] == ("a", 1)
    assert cases.loc["c5", "output"] == "odd\\ud800"
    assert loaded.headline.text
    for column in ("rationale", "reason", "message", "metadata"):  # nothing lone is left
        for value in loaded.scores[column].dropna():
            value.encode("utf-8")


def test_a_0_1_0_run_reads_the_same_from_its_files_and_from_its_log(tmp_path: Path) -> None:
    folder = _old_run(tmp_path)
    from_files = eb.load_run(folder)
    drop_final_files(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnicodeWarning)  # the log's escapes: one warning
        from_log = eb.load_run(folder)
    assert_frame_equal(from_log.cases, from_files.cases)
    assert_frame_equal(from_log.scores, from_files.scores)
    assert from_log.headline == from_files.headline
