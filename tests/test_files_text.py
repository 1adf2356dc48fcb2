"""Text the Parquet files cannot hold as it is (lone surrogates) survives the store and exports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal

import evalbook as eb
from _store_helpers import drop_final_files
from evalbook._store._files import (
    check_parquet_version,
    decode_text,
    encode_text,
    frame_of,
    surrogate_text_columns,
    text_list,
    write_json,
    write_parquet,
)

rated = eb.define_score("rated")
other = eb.define_score("other")


@eb.scorer(rated)
def rate(kind: str) -> Any:
    if kind == "rationale":
        return eb.Score(1.0, rationale="x\ud800y", metadata={"k": "\ud800", "\udcff": [1]})
    if kind == "unscored":
        return eb.Unscored("why\udfff")
    if kind == "raises":
        raise RuntimeError("boom\ud800")
    return eb.Score(0.5, rationale="plain", metadata={"k": "ok"})


def task(kind: str, ctx: Any) -> str:
    if kind == "ctx":
        ctx.record_unscored(other, "ctx\ud800 reason")
    if kind == "fail":
        ctx.fail("refused\udc80")
    if kind == "error":
        raise ValueError("bad\udcff")
    return kind


KINDS = ["rationale", "unscored", "raises", "ctx", "fail", "error", "plain"]


def _run(store: Path | None, ids: list[str] | None = None) -> eb.Run:
    index = None if ids is None else pd.Index(ids, dtype=object)  # pandas' str cannot hold them
    data = pd.DataFrame({"kind": KINDS}, index=index)
    return eb.run(
        data,
        task=task,
        scorers=[rate],
        scores=[other],
        name="odd_text",
        store=store,
        progress=False,
    )


def assert_same(a: eb.Run, b: eb.Run, wide: bool = True) -> None:
    """The tables, summary and headline are equal, the odd strings exactly."""
    assert_frame_equal(a.cases, b.cases)
    assert_frame_equal(a.scores, b.scores)
    assert_frame_equal(a.summary(), b.summary())
    if wide:
        assert_frame_equal(a.wide(), b.wide())
    assert a.headline == b.headline
    for column in ("error_message", "output"):
        assert [type(v) for v in a.cases[column]] == [type(v) for v in b.cases[column]]


def _check_odd_text(run: eb.Run) -> None:
    """The odd strings are where they should be (so a comparison has something to compare)."""
    scores = run.scores.set_index(["case_id", "score"], drop=False)
    case_ids = run.cases["case_id"].tolist()
    row = dict(zip(KINDS, case_ids, strict=True))
    assert scores.loc[(row["rationale"], "rated"), "rationale"] == "x\ud800y"
    meta = json.loads(scores.loc[(row["rationale"], "rated"), "metadata"])
    assert meta == {"k": "\ud800", "\udcff": [1]}
    assert scores.loc[(row["unscored"], "rated"), "reason"] == "why\udfff"
    assert "boom\ud800" in scores.loc[(row["raises"], "rated"), "message"]
    assert scores.loc[(row["ctx"], "other"), "reason"] == "ctx\ud800 reason"
    cases = run.cases.set_index("case_id")
    assert "refused\udc80" in cases.loc[row["fail"], "error_message"]
    assert "bad\udcff" in cases.loc[row["error"], "error_message"]


def test_lone_surrogates_round_trip_through_the_files_and_the_log(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    _check_odd_text(run)
    assert all((run.path / n).exists() for n in ("cases.parquet", "scores.parquet"))
    from_files = eb.load_run(run.path)
    _check_odd_text(from_files)
    assert_same(from_files, run)
    drop_final_files(run.path)
    from_log = eb.load_run(run.path)
    assert_same(from_log, run)


def test_odd_case_ids_round_trip(tmp_path: Path) -> None:
    ids = [f"id\ud800{i}" if i % 2 else f"id{i}" for i in range(len(KINDS))]
    run = _run(tmp_path, ids)
    assert run.path is not None
    assert run.cases["case_id"].tolist() == ids
    loaded = eb.load_run(run.path)
    assert_same(loaded, run)
    assert_frame_equal(loaded.data, run.data)  # the input data (index too) is stored as well
    drop_final_files(run.path)
    assert_same(eb.load_run(run.path), run)


def test_only_the_odd_columns_are_binary_and_the_files_say_which(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    table = pq.read_table(run.path / "scores.parquet")
    meta = json.loads(table.schema.metadata[b"evalbook"])
    assert sorted(meta["surrogate_text"]) == ["message", "metadata", "rationale", "reason"]
    scores = table.to_pandas()
    # a plain column is as it was; an odd column holds UTF-8 bytes with surrogates passed
    assert scores["score"].astype(str).tolist()[:2] == ["rated", "other"]
    rationales = scores["rationale"].dropna().tolist()
    assert rationales[0] == b"x\xed\xa0\x80y" and set(rationales[1:]) == {b"plain"}
    assert rationales[0].decode("utf-8", "surrogatepass") == "x\ud800y"
    first = scores["metadata"].dropna().tolist()[0].decode("utf-8", "surrogatepass")
    assert json.loads(first) == {"k": "\ud800", "\udcff": [1]}
    reasons = scores["reason"].dropna().tolist()  # plain binary: the table's column is object
    assert b"why\xed\xbf\xbf" in reasons and all(type(r) is bytes for r in reasons)
    cases_meta = json.loads(pq.read_schema(run.path / "cases.parquet").metadata[b"evalbook"])
    assert sorted(cases_meta["surrogate_text"]) == ["error_message"]


def test_plain_runs_escape_nothing(tmp_path: Path) -> None:
    data = pd.DataFrame({"kind": ["plain", "unscored-not", "naïve 日本語"]})
    run = eb.run(data, task=task, scorers=[rate], store=tmp_path, progress=False)
    assert run.path is not None
    for name in ("cases", "scores", "data"):
        meta = json.loads(pq.read_schema(run.path / f"{name}.parquet").metadata[b"evalbook"])
        assert "surrogate_text" not in meta
    assert pd.read_parquet(run.path / "data.parquet")["kind"].tolist() == data["kind"].tolist()
    schema = pq.read_schema(run.path / "scores.parquet")  # no messages: an all-null column
    assert str(schema.field("message").type) == "null"
    assert str(schema.field("rationale").type) == "string"
    assert eb.load_run(run.path).scores["rationale"].tolist() == run.scores["rationale"].tolist()


def test_exports_do_not_crash_and_say_what_they_hold(tmp_path: Path) -> None:
    run = _run(None)
    csv = run.to_csv(tmp_path / "csv")
    parquet = run.to_parquet(tmp_path / "pq")
    # CSV: valid UTF-8, the odd characters written as Python escapes (\ud800)
    text = csv["scores"].read_text(encoding="utf-8")
    assert "x\\ud800y" in text and "why\\udfff" in text
    scores_csv = pd.read_csv(csv["scores"])
    assert "x\\ud800y" in scores_csv["rationale"].tolist()
    cases_csv = pd.read_csv(csv["cases"])
    assert any("bad\\udcff" in str(m) for m in cases_csv["error_message"])
    # Parquet: as in the store (odd columns binary, listed in the metadata), decoded exactly
    table = pq.read_table(parquet["scores"])
    meta = json.loads(table.schema.metadata[b"evalbook"])
    scores = table.to_pandas()
    for column in meta["surrogate_text"]:
        values = scores[column].astype(object).where(scores[column].notna(), None).tolist()
        expected = run.scores[column].astype(object).where(run.scores[column].notna(), None)
        assert decode_text(values) == expected.tolist()


# lone surrogates often (a high and a low one side by side too), and any other character
odd_chars = st.sampled_from(["\ud800", "\udcff", "\ud83d", "\ude00", "😀", "é", "日", "a", ""])
texts = st.lists(odd_chars | st.characters(codec=None, exclude_categories=()), max_size=8).map(
    "".join
)


@settings(max_examples=200, deadline=None)
@given(values=st.lists(st.none() | texts, max_size=6))
def test_escape_text_round_trips(values: list[str | None]) -> None:
    encoded = encode_text(values)
    assert all(v is None or type(v) is bytes for v in encoded)
    assert decode_text(encoded) == values


optional_texts = st.lists(st.none() | texts, min_size=1, max_size=6)


@settings(max_examples=100, deadline=None)
@given(values=optional_texts, labels=st.lists(texts, min_size=1, max_size=3, unique=True))
def test_store_tables_keep_any_text(
    tmp_path_factory: Any, values: list[Any], labels: list[str]
) -> None:
    n = len(values)
    frame = pd.DataFrame(
        {
            "text": pd.Series(values, dtype=object),
            "category": pd.Categorical.from_codes(
                [i % (len(labels) + 1) - 1 for i in range(n)],
                categories=pd.Index(labels, dtype=object),
            ),
            "value": np.linspace(0, 1, n),
        }
    )
    path = tmp_path_factory.mktemp("t") / "t.parquet"
    write_parquet(frame, path, "scores")
    arrow = check_parquet_version(path)
    assert text_list(arrow.column("text")) == values
    expected = [None if c < 0 else labels[c] for c in frame["category"].array.codes]
    assert text_list(arrow.column("category")) == expected
    assert arrow.column("value").type == pa.float64()
    used = bool(len(expected) - expected.count(None))  # an all-null column has no categories
    odd = {"text": _has_surrogate(values), "category": used and _has_surrogate(labels)}
    assert set(surrogate_text_columns(arrow)) == {c for c, o in odd.items() if o}


@settings(max_examples=100, deadline=None)
@given(values=optional_texts, index=st.lists(texts, min_size=6, max_size=6, unique=True))
def test_input_data_keeps_any_text(
    tmp_path_factory: Any, values: list[Any], index: list[str]
) -> None:
    n = len(values)
    ids = pd.Index(index[:n], dtype=object, name="id")
    frame = pd.DataFrame({"note": pd.Series(values, index=ids, dtype=object), "x": range(n)})
    path = tmp_path_factory.mktemp("d") / "data.parquet"
    write_parquet(frame, path, "data", index=True)
    back = frame_of(check_parquet_version(path))
    # plain text comes back as pandas' str (NaN where missing), odd text as object (None)
    assert [None if pd.isna(v) else v for v in back["note"]] == values
    assert back.index.tolist() == index[:n] and back.index.name == "id"
    assert back["x"].tolist() == list(range(n))


def _has_surrogate(values: list[Any]) -> bool:
    return any(v is not None and any("\ud800" <= ch <= "\udfff" for ch in v) for v in values)


def test_json_files_stay_utf8_with_lone_surrogates(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_json(path, {"label": "lab\ud800el", "plain": "naïve"})
    text = path.read_bytes().decode("utf-8")  # strict: the file is valid UTF-8
    assert "\\ud800" in text
    assert json.loads(text)["label"] == "lab\ud800el" and json.loads(text)["plain"] == "naïve"
    write_json(path, {"plain": "naïve"})
    assert "naïve" in path.read_text(encoding="utf-8")  # non-ASCII stays readable


def test_side_by_side_surrogates_stay_two_code_points_in_the_files(tmp_path: Path) -> None:
    pair = "a\ud83d\ude00b"  # a high and a low surrogate as two code points, not "a😀b"
    outputs: list[Any] = [pair, {"k": pair}, ["\ud800"], "a😀b"]
    run = eb.run(
        pd.DataFrame({"i": range(len(outputs))}),
        task=lambda i: outputs[i],
        scorers=[eb.scorer(rated)(lambda output: eb.Score(1.0, rationale=pair))],
        store=tmp_path,
        progress=False,
    )
    assert run.path is not None
    loaded = eb.load_run(run.path)  # from the Parquet files
    assert loaded.cases["output"].tolist() == outputs
    assert [len(o) for o in (loaded.cases["output"][0], loaded.scores["rationale"][0])] == [4, 4]
    kinds = pd.read_parquet(run.path / "cases.parquet")["output_kind"].astype(str).tolist()
    assert kinds == ["literal", "literal", "json", "text"]
