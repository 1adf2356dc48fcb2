"""Outputs in the store and in CSV/Parquet exports: odd outputs survive the round trip."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _store_helpers import (
    events_of,
    run_t,
)
from _strategies import runs

# the output codec and the stored cases table over any value or Results (hypothesis)
from evalbook._store._codec import decode_output, encode_output, file_output, read_file_output
from evalbook._store._parquet import _direct_arrow
from evalbook._store._table_files import cases_file_arrow, cases_file_table
from evalbook._util._text import clean

# -- odd outputs ----------------------------------------------------------------------------


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque thing>"


ODD: list[Any] = [
    {"answer": "x", "n": [1, 2.5, None, True]},
    None,
    "naïve café – 日本語 🎉",
    "<script>alert('x')</script> & <b>",
    ("tuple", 1),
    {1: "int key"},
    b"bytes\x00",
    Opaque(),
    np.int64(7),
    ["list", {"nested": "dict"}],
    "",
    'line\nbreak, "quoted"',
    "\ud800 lone surrogate",
]


def _odd_run(store: Path | None) -> eb.Run:
    data = pd.DataFrame({"i": range(len(ODD))})
    with pytest.warns(UnicodeWarning, match="lone surrogate"):  # the last output has one
        return eb.run(
            data,
            task=lambda i: ODD[i],
            scorers=[lambda output: 1.0],
            name="odd",
            store=store,
            progress=False,
        )


def test_odd_outputs_round_trip_through_the_store(tmp_path: Path) -> None:
    run = _odd_run(tmp_path)
    assert run.path is not None
    # a lone surrogate is replaced where it enters the run: the store keeps what the run holds
    expected = [clean(o) if not isinstance(o, Opaque) else "<Opaque thing>" for o in ODD]
    assert run.cases["output"].tolist()[-1] == expected[-1]
    from_files = eb.load_run(run.path)
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    from_log = eb.load_run(run.path)
    for loaded in (from_files, from_log):
        outputs = loaded.cases["output"].tolist()
        assert outputs == expected
        assert type(outputs[4]) is tuple and type(outputs[6]) is bytes
    events = [e for e in events_of(run) if e["event"] == "case.ended"]
    kinds = {e["case_id"]: e.get("output_kind") for e in events}
    assert kinds["4"] == "literal" and kinds["7"] == "repr" and kinds["0"] is None


def test_exports_reread_with_pandas(tmp_path: Path) -> None:
    run = _odd_run(None)
    csv = run.to_csv(tmp_path / "csv")
    parquet = run.to_parquet(tmp_path / "pq")
    assert set(csv) == set(parquet) == {"cases", "scores", "summary"}
    assert all(p.exists() and p.is_absolute() for p in [*csv.values(), *parquet.values()])
    cases_pq = pd.read_parquet(parquet["cases"])
    cases_csv = pd.read_csv(csv["cases"], keep_default_na=False, na_values=[""])
    for cases in (cases_pq, cases_csv):
        assert list(cases.columns[:6]) == [
            "case_id",
            "epoch",
            "outcome",
            "attempts",
            "output",
            "output_kind",
        ]
        kinds = cases["output_kind"].astype(str).tolist()
        outputs = cases["output"].tolist()
        assert json.loads(outputs[0]) == ODD[0] and kinds[0] == "json"
        assert kinds[1] == "none"
        assert outputs[2] == ODD[2] and kinds[2] == "text"
        assert outputs[3] == ODD[3]
        assert outputs[11] == ODD[11]
        assert kinds[7] == "repr" and outputs[7] == "<Opaque thing>"
    scores_pq = pd.read_parquet(parquet["scores"])
    assert len(scores_pq) == len(ODD)
    assert list(scores_pq.columns[: len(run.scores.columns)]) == list(run.scores.columns)
    summary_csv = pd.read_csv(csv["summary"])
    assert summary_csv["mean"].tolist() == [1.0]


def test_export_of_the_demo_keeps_every_score_column(tmp_path: Path) -> None:
    run = run_t(None)
    paths = run.to_parquet(tmp_path)
    scores = pd.read_parquet(paths["scores"])
    np.testing.assert_array_equal(scores["value"].to_numpy(), run.scores["value"].to_numpy())
    assert scores["rationale"].fillna("").tolist() == run.scores["rationale"].fillna("").tolist()
    summary = pd.read_parquet(paths["summary"])
    assert summary["score"].astype(str).tolist() == ["correct", "judged", "pass"]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(value=json_values | st.tuples(st.integers(), st.text()) | st.binary())
def test_output_encoding_round_trips_in_the_log_and_in_the_tables(value: Any) -> None:
    encoded, kind = encode_output(value)
    text = json.dumps(encoded)  # the log: the value as JSON, `output_kind` next to it
    back = decode_output(json.loads(text), kind)
    assert back == value and type(back) is type(value)
    cell, table_kind = file_output(value)  # the tables: text, and its `output_kind`
    assert table_kind == (kind or {type(None): "none", str: "text"}.get(type(value), "json"))
    back = read_file_output(cell, table_kind)
    assert back == value and type(back) is type(value)


@settings(max_examples=150, deadline=None)
@given(run=runs())
def test_the_stored_cases_table_is_built_without_a_frame_but_equal(run: Any) -> None:
    definitions, results = run
    frame = pd.DataFrame(index=range(results.n_cases))
    full = eb.Run(name="r", id="i", definitions=definitions, data=frame, results=results)
    expected = _direct_arrow(cases_file_table(full))
    arrow = cases_file_arrow(results)
    assert arrow.schema == expected.schema
    assert _cells(arrow) == _cells(expected)  # by value: NaN (a case not run) equals NaN


def _cells(arrow: Any) -> list[list[Any]]:
    return [[v if v == v else "NaN" for v in c.to_pylist()] for c in arrow.columns]
