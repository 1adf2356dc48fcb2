"""The run store: folders, the event log, load_run, runs(), save, exports (DESIGN §6)."""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pandas.testing import assert_frame_equal

import evalbook as eb
from evalbook._events import SCHEMA_VERSION, decode_output, encode_output
from evalbook._store import check_run_name

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


def _task(question: str, ctx: Any) -> Any:
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


def _run(store: Path | None, **kw: Any) -> eb.Run:
    return eb.run(
        DATA,
        task=_task,
        scorers=[exact, judge],
        scores=[passed],
        name=kw.pop("name", "t"),
        store=store,
        progress=False,
        **kw,
    )


def _assert_same(a: eb.Run, b: eb.Run) -> None:
    assert_frame_equal(a.cases, b.cases)
    assert_frame_equal(a.scores, b.scores)
    assert_frame_equal(a.summary(), b.summary())
    assert_frame_equal(a.unscored(), b.unscored())
    assert_frame_equal(a.wide(), b.wide())
    assert a.headline == b.headline
    assert a.headline.text == b.headline.text
    assert [d.model_dump() for d in a.definitions] == [d.model_dump() for d in b.definitions]
    assert (a.name, a.id) == (b.name, b.id)


def _events(run: eb.Run) -> list[dict[str, Any]]:
    assert run.path is not None
    lines = (run.path / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


# -- folders and names ----------------------------------------------------------------------


def test_run_writes_its_own_folder(tmp_path: Path) -> None:
    run = _run(tmp_path, name="baseline")
    assert run.path is not None and run.path.is_absolute()
    assert run.path.parent == tmp_path.resolve()
    assert run.path.name.startswith("baseline-")
    names = {p.name for p in run.path.iterdir()}
    assert {"events.jsonl", "cases.parquet", "scores.parquet", "summary.json"} <= names
    assert not [n for n in names if n.endswith(".tmp")]


def test_default_store_is_runs_under_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = eb.run(DATA.head(2), task=lambda question: question, progress=False)
    assert run.path is not None
    assert run.path.parent == (tmp_path / "runs").resolve()


def test_store_none_touches_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    opened: list[str] = []
    real_open = os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    run = _run(None)
    assert run.path is None
    assert list(tmp_path.iterdir()) == []
    assert [p for p in opened if "events" in p or "parquet" in p] == []


def test_same_name_same_second_gets_two_folders(tmp_path: Path) -> None:
    a, b = _run(tmp_path, name="same"), _run(tmp_path, name="same")
    assert a.path != b.path and a.id != b.id
    _assert_same(a, eb.load_run(a.path))  # type: ignore[arg-type]
    _assert_same(b, eb.load_run(b.path))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "name", ["../evil", "a/b", "..", ".", ".hidden", "a\\b", "/abs", "a b", "x" * 101, "a.."]
)
def test_unsafe_names_are_rejected_before_any_case(tmp_path: Path, name: str) -> None:
    calls: list[str] = []

    def task(question: str) -> str:
        calls.append(question)
        return question

    store = tmp_path / "store"
    with pytest.raises(eb.ConfigurationError, match="run name"):
        eb.run(DATA, task=task, name=name, store=store, progress=False)
    assert calls == []
    assert not store.exists() or list(store.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) in ([], ["store"])


@pytest.mark.parametrize("name", ["baseline", "gpt-4o_v2.1", "a+b", "模型-1", "_x"])
def test_safe_names_pass(name: str) -> None:
    assert check_run_name(name) == name


def test_bad_store_is_a_configuration_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    with pytest.raises(eb.ConfigurationError, match="store="):
        _run(blocker / "runs")


# -- the event log --------------------------------------------------------------------------


def test_event_log_shape(tmp_path: Path) -> None:
    run = _run(tmp_path)
    events = _events(run)
    assert all(type(e["schema_version"]) is int and e["schema_version"] == 1 for e in events)
    kinds = [e["event"] for e in events]
    assert kinds[0] == "run.started" and kinds[-1] == "run.ended"
    assert kinds[1:4] == ["score.defined"] * 3
    assert events[0]["case_ids"] == [str(i) for i in range(len(DATA))]
    assert events[0]["scores"] == ["correct", "judged", "pass"]
    assert events[0]["options"]["concurrency"] == 8
    assert kinds.count("case.started") == len(DATA)
    assert kinds.count("case.ended") == len(DATA)
    assert kinds.count("score.recorded") == len(DATA) * 3
    # a case's records come before its case.ended, and after its case.started
    seen: dict[str, list[str]] = {}
    for e in events:
        if "case_id" in e:
            seen.setdefault(e["case_id"], []).append(e["event"])
    for trail in seen.values():
        assert trail == ["case.started", *["score.recorded"] * 3, "case.ended"]
    ended = {e["case_id"]: e for e in events if e["event"] == "case.ended"}
    assert ended["2"]["outcome"] == "errored" and ended["2"]["error_type"] == "RuntimeError"
    assert ended["3"]["outcome"] == "failed" and ended["3"]["error_message"] == "refused"
    assert ended["4"]["output"] is None and "output_kind" not in ended["4"]
    recorded = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "0"]
    assert recorded[0] == {
        "schema_version": 1,
        "event": "score.recorded",
        "case_id": "0",
        "score": "correct",
        "derived": False,
        "value": 1.0,
    }
    assert recorded[1]["rationale"] == "<b>fine</b> 很好"
    assert recorded[1]["metadata"] == {"raw": 75, "votes": [70, 80]}
    assert recorded[2]["derived"] is True
    bad = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "6"]
    assert bad[1]["error"]["code"] == "invalid_score" and "'high'" in bad[1]["error"]["message"]
    none = [e for e in events if e["event"] == "score.recorded" and e["case_id"] == "4"]
    assert none[1]["unscored"] == {"reason": "no_output"}
    assert events[-1]["status"] == "complete"


def test_the_log_writer_reports_errors(tmp_path: Path) -> None:
    from evalbook._store import raw_write

    path = tmp_path / "x"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        assert raw_write()(fd, b"abc\n") == 4
    finally:
        os.close(fd)
    assert path.read_bytes() == b"abc\n"
    with pytest.raises(OSError):
        raw_write()(fd, b"closed")  # a closed descriptor: EBADF, raised as OSError


def test_log_is_written_as_the_run_goes(tmp_path: Path) -> None:
    seen: list[int] = []

    def task(question: str) -> str:
        folder = next(tmp_path.iterdir())
        text = (folder / "events.jsonl").read_text(encoding="utf-8")
        seen.append(text.count('"event":"case.ended"'))
        return question

    eb.run(DATA, task=task, store=tmp_path, concurrency=1, progress=False)
    assert seen == list(range(len(DATA)))  # every earlier case is on disk before the next runs


# -- load_run -------------------------------------------------------------------------------


def test_load_from_parquet_is_identical(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    loaded = eb.load_run(run.path)
    _assert_same(run, loaded)
    assert loaded.path == run.path
    assert loaded.options == run.options
    assert list(loaded.data["question"]) == list(DATA["question"])


def test_load_from_the_log_alone_is_identical(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    _assert_same(run, eb.load_run(run.path))


def test_unreadable_final_files_fall_back_to_the_log(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    (run.path / "scores.parquet").write_bytes(b"")  # e.g. a power cut before writeback
    with pytest.warns(RuntimeWarning, match="cannot be read"):
        loaded = eb.load_run(run.path)
    _assert_same(run, loaded)


def test_an_interrupted_run_can_be_resumed(tmp_path: Path) -> None:
    def task(question: str) -> str:
        if question == "none":
            raise KeyboardInterrupt
        return question.upper()

    with pytest.raises(KeyboardInterrupt):
        eb.run(DATA, task=task, scorers=[exact], store=tmp_path, concurrency=1, progress=False)
    (folder,) = list(tmp_path.iterdir())
    assert eb.runs(tmp_path)["status"].tolist() == ["incomplete"]
    partial = eb.load_run(folder)
    assert partial.cases["outcome"].notna().sum() == 4  # a, b, err, fail
    calls: list[str] = []

    def again(question: str) -> str:
        calls.append(question)
        return question.upper()

    done = eb.run(DATA, task=again, scorers=[exact], resume=folder, progress=False)
    assert calls == ["none", "boom", "bad", "c"]
    assert done.cases["outcome"].notna().all()
    assert eb.runs(tmp_path)["status"].tolist() == ["complete"]


def test_load_accepts_a_file_of_the_folder(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    _assert_same(run, eb.load_run(run.path / "summary.json"))


def test_load_missing_or_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no run folder"):
        eb.load_run(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="not a stored run"):
        eb.load_run(tmp_path)


def test_truncated_last_line_is_tolerated(tmp_path: Path) -> None:
    run = _run(tmp_path, concurrency=1)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    last_case = max(i for i, line in enumerate(lines) if b'"case.ended"' in line)
    # the crash happened while the last case's case.ended line was being written
    log.write_bytes(b"".join(lines[:last_case]) + lines[last_case][:25])
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    with pytest.warns(RuntimeWarning, match="truncated"):
        loaded = eb.load_run(run.path)
    n = len(DATA)
    assert loaded.cases["outcome"].isna().tolist() == [False] * (n - 1) + [True]
    assert_frame_equal(loaded.cases.iloc[: n - 1], run.cases.iloc[: n - 1])
    assert loaded.headline.completion is not None and "1 not run" in loaded.headline.text


def test_a_damaged_middle_line_is_an_error(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    log = run.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[5] = "{not json\n"
    log.write_text("".join(lines), encoding="utf-8")
    (run.path / "summary.json").unlink()
    with pytest.raises(ValueError, match="line 6"):
        eb.load_run(run.path)


def _bump_json(path: Path, line: int | None = None) -> None:
    if line is None:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["schema_version"] = 99
        path.write_text(json.dumps(data), encoding="utf-8")
        return
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    event = json.loads(lines[line])
    event["schema_version"] = 99
    lines[line] = json.dumps(event) + "\n"
    path.write_text("".join(lines), encoding="utf-8")


def test_schema_version_mismatch_names_both_versions(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    _bump_json(run.path / "summary.json")
    with pytest.raises(
        ValueError, match=r"summary\.json has schema_version 99.*reads schema_version 1"
    ):
        eb.load_run(run.path)
    (run.path / "summary.json").unlink()
    _bump_json(run.path / "events.jsonl", line=7)
    with pytest.raises(ValueError, match=r"line 8\) has schema_version 99.*schema_version 1"):
        eb.load_run(run.path)


def test_parquet_schema_version_is_checked(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run = _run(tmp_path)
    assert run.path is not None
    path = run.path / "scores.parquet"
    table = pq.read_table(path)
    meta = dict(table.schema.metadata)
    assert json.loads(meta[b"evalbook"])["schema_version"] == SCHEMA_VERSION
    meta[b"evalbook"] = json.dumps({"schema_version": 7, "table": "scores"}).encode()
    pq.write_table(table.replace_schema_metadata(meta), path)
    with pytest.raises(ValueError, match=r"scores\.parquet has schema_version 7"):
        eb.load_run(run.path)


def test_summary_json_content(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    summary = json.loads((run.path / "summary.json").read_text(encoding="utf-8"))
    assert summary["schema_version"] == 1
    assert summary["status"] == "complete" and summary["n_cases"] == len(DATA)
    assert summary["headline"]["text"] == run.headline.text
    assert summary["headline"]["score"] == "pass"
    assert [d["name"] for d in summary["definitions"]] == ["correct", "judged", "pass"]
    assert [row["score"] for row in summary["summary"]] == ["correct", "judged", "pass"]


def test_value_column_stays_float64_and_names_categorical(tmp_path: Path) -> None:
    run = _run(tmp_path)
    assert run.path is not None
    scores = pd.read_parquet(run.path / "scores.parquet")
    assert scores["value"].dtype == np.float64
    assert isinstance(scores["score"].dtype, pd.CategoricalDtype)
    assert isinstance(scores["status"].dtype, pd.CategoricalDtype)


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
    expected = [o if not isinstance(o, Opaque) else "<Opaque thing>" for o in ODD]
    from_files = eb.load_run(run.path)
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    from_log = eb.load_run(run.path)
    for loaded in (from_files, from_log):
        outputs = loaded.cases["output"].tolist()
        assert outputs == expected
        assert type(outputs[4]) is tuple and type(outputs[6]) is bytes
    events = [e for e in _events(run) if e["event"] == "case.ended"]
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
        assert list(cases.columns[:5]) == [
            "case_id",
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
    assert list(scores_pq.columns[:13]) == list(run.scores.columns)
    summary_csv = pd.read_csv(csv["summary"])
    assert summary_csv["mean"].tolist() == [1.0]


def test_export_of_the_demo_keeps_every_score_column(tmp_path: Path) -> None:
    run = _run(None)
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
def test_output_encoding_round_trips(value: Any) -> None:
    encoded, kind = encode_output(value)
    text = json.dumps(encoded)
    back = decode_output(json.loads(text), kind)
    assert back == value and type(back) is type(value)


# -- runs() ---------------------------------------------------------------------------------


def test_runs_lists_complete_and_incomplete_and_ignores_the_rest(tmp_path: Path) -> None:
    first = _run(tmp_path, name="first")
    second = _run(tmp_path, name="second")
    assert second.path is not None
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (second.path / name).unlink()
    log = second.path / "events.jsonl"
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    log.write_text("".join(lines[:-6]), encoding="utf-8")  # cut the end off: a crash
    (tmp_path / "notes.txt").write_text("not a run")
    (tmp_path / "empty-folder").mkdir()
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "events.jsonl").write_text('{"schema_version": 1, "event": "x"}\n')
    table = eb.runs(tmp_path)
    assert list(table.columns) == [
        "name",
        "id",
        "path",
        "started_at",
        "status",
        "n_cases",
        "completion",
        "headline",
    ]
    assert table["name"].tolist() == ["first", "second"]
    assert table["id"].tolist() == [first.id, second.id]
    assert table["status"].tolist() == ["complete", "incomplete"]
    assert table["path"].tolist() == [str(first.path), str(second.path)]
    assert all(Path(p).is_absolute() for p in table["path"])
    assert table["n_cases"].tolist() == [len(DATA), len(DATA)]
    assert table["headline"][0] == first.headline.text
    assert table["completion"][0] == first.headline.completion
    assert table["completion"][1] < table["completion"][0]
    assert isinstance(table["started_at"].dtype, pd.DatetimeTZDtype)


def test_runs_of_a_missing_store_is_empty(tmp_path: Path) -> None:
    table = eb.runs(tmp_path / "none")
    assert table.empty and "headline" in table.columns


# -- save -----------------------------------------------------------------------------------


def test_save_an_in_memory_run(tmp_path: Path) -> None:
    run = _run(None)
    path = run.save(tmp_path)
    assert run.path == path and path.parent == tmp_path.resolve()
    _assert_same(run, eb.load_run(path))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (path / name).unlink()
    _assert_same(run, eb.load_run(path))
    assert [r for r in eb.runs(tmp_path)["status"]] == ["complete"]


def test_a_full_disk_does_not_stop_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evalbook import _store

    real_write = _store.raw_write()
    calls = {"n": 0}

    def flaky(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] > 3:
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(_store, "_RAW_WRITE", flaky)
    with pytest.warns(RuntimeWarning, match="No space left"):
        run = _run(tmp_path, concurrency=1)
    monkeypatch.undo()
    assert len(run.cases) == len(DATA) and run.path is not None
    assert not (run.path / "summary.json").exists()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        partial = eb.load_run(run.path)
    assert int(partial.cases["outcome"].notna().sum()) < len(DATA)
    run.save()  # disk space is back: complete the folder
    _assert_same(run, eb.load_run(run.path))
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    _assert_same(run, eb.load_run(run.path))


# -- rescore --------------------------------------------------------------------------------


def test_rescore_scores_stored_outputs_without_the_task(tmp_path: Path) -> None:
    run = _run(tmp_path)
    loaded = eb.load_run(run.path)  # type: ignore[arg-type]

    @eb.scorer(correct)
    def lenient(output: Any, expected: str) -> float:
        return float(str(output).lower() == expected.lower())

    again = loaded.rescore(scorers=[lenient], progress=False)
    assert again.path is not None and again.path.parent == tmp_path.resolve()
    assert again.id != run.id and again.name == "t-rescored"
    assert again.options["rescored_from"] == run.id
    by = again.scores.set_index(["case_id", "score"], drop=False)
    old = run.scores.set_index(["case_id", "score"], drop=False)
    # case 1 ("B" vs "x") stays wrong, case 5 ("BOOM"): the new scorer does not raise
    assert by.loc[("5", "correct"), "status"] == "scored"
    assert old.loc[("5", "correct"), "status"] == "error"
    # judged records are kept as they were, derived ones derived again
    assert_frame_equal(
        again.scores[again.scores["score"] == "judged"].reset_index(drop=True).astype(object),
        run.scores[run.scores["score"] == "judged"].reset_index(drop=True).astype(object),
    )
    assert by.loc[("5", "pass"), "status"] == "scored"
    # outcomes and outputs are the source's; errored / failed cases stay so
    assert_frame_equal(again.cases, run.cases)
    _assert_same(again, eb.load_run(again.path))


def test_rescore_in_memory_stays_in_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    run = _run(None)
    calls: list[Any] = []

    @eb.scorer
    def seen(output: Any) -> float:
        calls.append(output)
        return 1.0

    again = run.rescore(scorers=[seen], progress=False)
    assert again.path is None and list(tmp_path.iterdir()) == []
    # scorers are called on passed cases only (a, b, none, boom, bad, c)
    assert len(calls) == 6
    assert [d.name for d in again.definitions] == ["seen", "correct", "judged", "pass"]


# -- two runs at once -----------------------------------------------------------------------


def test_two_runs_in_one_store_at_once(tmp_path: Path) -> None:
    barrier = threading.Barrier(2, timeout=30)
    out: dict[str, eb.Run] = {}

    def task(question: str) -> str:
        if question == "a":
            barrier.wait()  # both runs are mid-flight at the same time
        return question.upper()

    def go(key: str) -> None:
        out[key] = eb.run(DATA, task=task, name="twin", store=tmp_path, progress=False)

    threads = [threading.Thread(target=go, args=(k,)) for k in ("x", "y")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert set(out) == {"x", "y"} and out["x"].path != out["y"].path
    for run in out.values():
        _assert_same(run, eb.load_run(run.path))  # type: ignore[arg-type]
    assert len(eb.runs(tmp_path)) == 2
