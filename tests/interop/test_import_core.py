"""The import core (`_interop/_imported.py`, `_formats.py`): what any importer read becomes a run.

Values go through the score contract (a property: the imported record is `record_of`'s), the
outcomes map to their records, what cannot be read is skipped and counted, names become valid
score and run names, and an imported run stores and loads back the same (from its final files
and from its log alone). Every registered importer has the one shape (`NAME`, `EXPECTED`,
`sniff`, `read`), and its sniff never raises nor claims another format's files. The registry and
`evalbook import` are tested with a fake format. (How files are read, through the public API:
test_import_reading.py.)
"""

from __future__ import annotations

import inspect
import json
import math
import os
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _cli_helpers import in_process
from evalbook._api._import import import_results
from evalbook._api._run import as_run
from evalbook._interop import _formats
from evalbook._interop._imported import (
    FormatError,
    Imported,
    ImportedSample,
    ImportedScore,
    to_run_data,
)
from evalbook._model._contract import STATUSES, record_of

SCORES = [ImportedScore("acc", primary=True), ImportedScore("f1 score")]


def _imported(samples: list[ImportedSample], skipped: list[str] | None = None) -> Imported:
    return Imported("fake", Path("results.json"), "fake task", list(SCORES), samples, skipped or [])


def _quiet(imported: Imported, name: str | None = None) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return to_run_data(imported, name)


raw_values = (
    st.floats(allow_nan=True, allow_infinity=True)
    | st.integers(min_value=-3, max_value=3)
    | st.booleans()
    | st.none()
    | st.sampled_from(["C", "I", "0.5", "high", ""])
    | st.builds(eb.Score, st.floats(-1, 2), rationale=st.none() | st.text(max_size=5))
    | st.builds(eb.Unscored, st.sampled_from(["no_answer", "n/a"]))
)


@settings(max_examples=150, deadline=None)
@given(st.lists(raw_values, min_size=1, max_size=6))
def test_every_value_goes_through_the_score_contract(values: list[object]) -> None:
    samples = [
        ImportedSample(f"c{i}", scores={"acc": v, "f1 score": 0.5}) for i, v in enumerate(values)
    ]
    scores = _quiet(_imported(samples)).scores
    acc = scores[scores.score == "acc"].reset_index(drop=True)
    for i, value in enumerate(values):
        rec = record_of(value)
        assert acc.status[i] == STATUSES[rec.status], (value, acc.iloc[i].to_dict())
        reason = acc.reason[i]
        assert (None if pd.isna(reason) else reason) == rec.reason, (value, reason)
        got = acc.value[i]
        assert (math.isnan(got) and math.isnan(rec.value)) or got == rec.value
        if acc.status[i] == "scored":  # a counted value is a finite real in [0, 1], never a bool
            assert 0.0 <= got <= 1.0 and not isinstance(value, bool)


def test_booleans_labels_and_out_of_range_values_are_invalid_not_coerced() -> None:
    samples = [
        ImportedSample("a", scores={"acc": True, "f1 score": 1.5}),
        ImportedSample("b", scores={"acc": "C", "f1 score": 989898}),
        ImportedSample("c", scores={"acc": 1.0, "f1 score": 0.25}),
    ]
    run = _quiet(_imported(samples))
    scores = run.scores.set_index(["case_id", "score"])
    for key in [("a", "acc"), ("a", "f1_score"), ("b", "acc"), ("b", "f1_score")]:
        assert scores.loc[key, "status"] == "error" and scores.loc[key, "reason"] == "invalid_score"
    summary = run.summary().set_index("score")
    assert summary.loc["acc", "mean"] == 1.0 and summary.loc["acc", "counted"] == 1
    assert summary.loc["f1_score", "mean"] == 0.25


def test_outcomes_become_their_records() -> None:
    samples = [
        ImportedSample("ok", scores={"acc": 1.0}),  # no f1 score: missing_score
        ImportedSample("err", outcome="errored", error_type="ValueError", error_message="boom"),
        ImportedSample("slow", outcome="timed_out", error_type="TimeLimit", error_message="60 s"),
        ImportedSample("bad", outcome="failed", error_message="refused", scores={"acc": 1.0}),
    ]
    run = _quiet(_imported(samples))
    s = run.scores.set_index(["case_id", "score"])
    assert s.loc[("ok", "f1_score"), "reason"] == "missing_score"
    assert "'f1 score'" in s.loc[("ok", "f1_score"), "message"]
    assert s.loc[("err", "acc"), "reason"] == "case_errored"
    assert s.loc[("err", "acc"), "message"] == "ValueError: boom"
    assert s.loc[("slow", "f1_score"), "reason"] == "case_timed_out"
    assert s.loc[("bad", "acc"), "status"] == "unscored"
    assert s.loc[("bad", "acc"), "reason"] == "case_failed"
    assert list(run.cases.outcome) == ["passed", "errored", "timed_out", "failed"]
    acc = run.summary().set_index("score").loc["acc"]  # failed counts 0; errors are excluded
    assert (acc["counted"], acc["mean"]) == (2, 0.5)


def test_what_cannot_be_read_is_skipped_and_counted_in_one_warning() -> None:
    samples = [
        ImportedSample("a", scores={"acc": 1.0, "f1 score": 1.0}),
        ImportedSample("a", scores={"acc": 0.0, "f1 score": 0.0}),  # a second (a, 1)
        ImportedSample("b", epoch=0, scores={"acc": 0.0}),
        ImportedSample("c", outcome="exploded"),
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = to_run_data(_imported(samples, ["results.json:7: not JSON"]))
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "imported 1 samples" in message and "skipped 4 part(s)" in message
    assert "results.json:7: not JSON" in message and "and 1 more" in message
    assert run.summary().set_index("score").loc["acc", "mean"] == 1.0  # the first is kept
    assert run.options["imported"]["skipped"] == 4
    with pytest.raises(FormatError, match="no fake sample could be read"):
        to_run_data(_imported([], ["results.json:1: not JSON"]))


def test_names_become_valid_and_stay_apart_labels_keep_the_harness_name() -> None:
    imported = Imported(
        "fake",
        Path("r.json"),
        "<script>x</script> task: v1",
        [ImportedScore("exact match"), ImportedScore("exact_match"), ImportedScore("<b>")],
        [ImportedSample("a", scores={"exact match": 1.0, "exact_match": 0.0, "<b>": 1.0})],
    )
    run = _quiet(imported)
    assert [d.name for d in run.definitions] == ["exact_match", "exact_match_2", "b"]
    assert [d.label for d in run.definitions] == ["exact match", "exact_match", "<b>"]
    assert run.name == "script-x-script-task-v1"
    assert "<script>" not in as_run(run)._repr_html_()
    with pytest.raises(eb.ConfigurationError, match="several primary"):
        _quiet(Imported("fake", Path("r"), "t", [ImportedScore("a", True)] * 2, []))
    with pytest.raises(eb.ConfigurationError, match="cannot name a folder"):
        _quiet(_imported([ImportedSample("a")]), name="../up")


def test_epochs_keep_their_slots_and_a_missing_one_leaves_the_run_incomplete() -> None:
    samples = [
        ImportedSample("a", epoch=2, scores={"acc": 0.0, "f1 score": 0.0}),
        ImportedSample("a", epoch=1, scores={"acc": 1.0, "f1 score": 1.0}),
        ImportedSample("b", epoch=1, scores={"acc": 1.0, "f1 score": 1.0}),
    ]
    run = _quiet(_imported(samples))
    cases = run.cases
    assert list(zip(cases.case_id, cases.epoch, strict=True)) == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("b", 2),
    ]
    assert list(cases.outcome[:3]) == ["passed"] * 3 and pd.isna(cases.outcome[3])
    assert run.options["epochs"] == 2
    acc = run.reduced().set_index(["case_id", "score"]).loc[("a", "acc"), "value"]
    assert acc == 0.5


def test_planned_cases_no_sample_reaches_are_not_run_never_dropped(tmp_path: Path) -> None:
    """Cases the harness says were asked (`Imported.planned_cases`, e.g. an EvalScope report's
    `requested`) that the file does not hold are slots without an outcome: the run is
    incomplete at its true completion, and stores and loads back so."""
    imported = _imported([ImportedSample("a", epoch=1, scores={"acc": 1.0, "f1 score": 1.0})])
    imported.planned_cases, imported.planned_epochs = ["a", "b"], 2
    run = as_run(_quiet(imported))
    assert list(zip(run.cases.case_id, run.cases.epoch, strict=True)) == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("b", 2),
    ]
    assert run.cases.outcome.notna().sum() == 1 and run.options["epochs"] == 2
    assert run.headline.text.endswith("completed 25% (3 not run)")
    with pytest.warns(RuntimeWarning, match="is incomplete: 3 of 4 samples have no final"):
        loaded = eb.load_run(run.save(tmp_path))
    pd.testing.assert_frame_equal(loaded.cases, run.cases)


def test_an_imported_run_stores_and_loads_back_the_same(tmp_path: Path) -> None:
    samples = [
        ImportedSample("a", input={"q": "1+1"}, output="2", scores={"acc": 1.0, "f1 score": 0.5}),
        ImportedSample(
            "b",
            input={"q": "<script>"},
            outcome="errored",
            error_type="E",
            error_message="boom",
            started_at=1.7e9,
            duration_s=2.5,
        ),
    ]
    run = as_run(_quiet(_imported(samples)))
    folder = run.save(tmp_path)
    loaded = eb.load_run(folder)
    pd.testing.assert_frame_equal(loaded.scores, run.scores)
    pd.testing.assert_frame_equal(loaded.cases, run.cases)
    assert loaded.options["imported"]["format"] == "fake"
    assert list(loaded.data.q) == ["1+1", "<script>"]
    for name in ("cases.parquet", "scores.parquet", "summary.json"):
        (folder / name).unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # loaded from its log alone: it says so
        from_log = eb.load_run(folder)
    pd.testing.assert_frame_equal(from_log.scores, run.scores)
    pd.testing.assert_frame_equal(from_log.cases, run.cases)


# -- the registry and the CLI, with a fake format -------------------------------------------


def _fake_read(path: Path) -> Imported:
    if path.read_text() != "fake results":
        raise FormatError(f"{path}: not fake results (expected the words 'fake results')")
    return Imported(
        "fake",
        path,
        "fake-task",
        [ImportedScore("acc", primary=True)],
        [ImportedSample("a", scores={"acc": 1.0}), ImportedSample("b", scores={"acc": 0.0})],
    )


@pytest.fixture
def fake_format(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("evalbook_fake_format")
    module.NAME = "fake"  # type: ignore[attr-defined]
    module.EXPECTED = "a file saying 'fake results'"  # type: ignore[attr-defined]
    module.sniff = lambda p: p.suffix == ".fake"  # type: ignore[attr-defined]
    module.read = _fake_read  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "evalbook_fake_format", module)
    monkeypatch.setattr(_formats, "FORMATS", {"fake": "evalbook_fake_format"})


@pytest.mark.usefixtures("fake_format")
def test_import_results_detects_names_and_refuses_clearly(tmp_path: Path) -> None:
    good = tmp_path / "r.fake"
    good.write_text("fake results")
    run = import_results(good)
    assert isinstance(run, eb.Run) and run.headline.value == 0.5
    assert import_results(good, format="fake", name="mine").name == "mine"
    with pytest.raises(FileNotFoundError, match="no such file"):
        import_results(tmp_path / "nothing.fake")
    other = tmp_path / "r.txt"
    other.write_text("fake results")
    with pytest.raises(FormatError, match=r"Expected one of: fake: a file saying"):
        import_results(other)
    with pytest.raises(FormatError, match="unknown format 'inspct': use one of fake"):
        import_results(good, format="inspct")
    bad = tmp_path / "bad.fake"
    bad.write_text("something else")
    with pytest.raises(FormatError, match="not fake results"):
        import_results(bad, format="fake")


@pytest.mark.usefixtures("fake_format")
def test_cli_import_stores_the_run_and_reports_errors_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "r.fake"
    good.write_text("fake results")
    store = str(tmp_path / "store")
    code, out, err = in_process(capsys, "import", str(good), "--store", store)
    assert code == 0, err
    assert "fake-task" in out and "stored:" in out and "imported from" in out
    assert eb.runs(store).name.tolist() == ["fake-task"]
    code, out, _ = in_process(capsys, "show", "fake-task", "--store", store)
    assert code == 0 and "50" in out
    for args, fragment in [
        ([str(tmp_path / "none.fake")], "no such file"),
        ([str(tmp_path / "store")], "not a results file"),
    ]:
        code, out, err = in_process(capsys, "import", *args, "--store", store)
        assert code == 2, (out, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in err


def test_imported_text_is_cleaned_at_the_run_boundary() -> None:
    samples = [ImportedSample("a", input={"q": "x\ud800"}, output="y\udfff", scores={"acc": 1.0})]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = to_run_data(_imported(samples))
    assert run.data.q[0] == "x\\ud800" and run.cases.output[0] == "y\\udfff"
    assert len([w for w in caught if "lone surrogate" in str(w.message)]) == 1  # once per run


# -- the one importer shape, and sniffing -----------------------------------------------------

# fixtures/<format name>/ holds each format's files
FIXTURES = Path(__file__).parent / "fixtures"
NAMES = ["inspect", "promptfoo", "harbor", "lm-eval", "evalscope"]


def test_every_importer_has_the_one_shape() -> None:
    assert list(_formats.FORMATS) == NAMES  # the order its rule gives (_formats.py)
    for name in _formats.FORMATS:
        importer = _formats.format_named(name)
        assert name == importer.NAME  # the registry's key is the module's own NAME
        assert isinstance(importer.EXPECTED, str) and importer.EXPECTED
        for function in (importer.sniff, importer.read):
            assert list(inspect.signature(function).parameters) == ["path"], (name, function)


def _odd_paths(tmp: Path) -> list[Path]:
    """Paths no sniff may claim or fail on: missing, unnameable, empty, special."""
    (tmp / "empty").mkdir()
    odd = [Path("\0bad"), tmp / "empty"]
    odd += [tmp / name for name in ("missing", "missing.json", "missing.jsonl", "missing.eval")]
    for name in ("fifo.json", "fifo.jsonl", "fifo.eval"):
        if hasattr(os, "mkfifo"):
            os.mkfifo(tmp / name)
            odd.append(tmp / name)
    if Path("/dev/zero").exists():
        for name in ("zero.json", "zero.jsonl", "zero.eval", "result.json"):
            (tmp / name).symlink_to("/dev/zero")
            odd.append(tmp / name)
    return odd


@pytest.mark.parametrize("name", NAMES)
def test_sniff_never_raises_and_claims_no_other_formats_fixture(name: str, tmp_path: Path) -> None:
    importer = _formats.format_named(name)
    for path in _odd_paths(tmp_path):
        assert importer.sniff(path) is False, path
    others = [p for p in FIXTURES.iterdir() if p.name != name]
    missing = set(NAMES) - {name} - {p.name for p in others}
    assert not missing, f"the other formats' fixtures are missing: {missing}"
    paths = [p for d in others for p in [d, *d.rglob("*")]]
    assert len(paths) > 10
    assert [p for p in paths if importer.sniff(p)] == []


FIXTURES = Path(__file__).parent / "fixtures"


def _lm_eval_date(folder: Path) -> float:
    [results] = folder.glob("*/results_*.json")
    date = json.loads(results.read_text())["date"]
    assert isinstance(date, float)
    return date


def _promptfoo_timestamp(file: Path) -> float:
    stamp = json.loads(file.read_text())["results"]["timestamp"]
    return pd.Timestamp(stamp).timestamp()


@pytest.mark.parametrize(
    ("path", "when"),
    [
        (FIXTURES / "lm-eval" / "out", _lm_eval_date),
        (FIXTURES / "promptfoo" / "results.json", _promptfoo_timestamp),
    ],
    ids=["lm-eval", "promptfoo"],
)
def test_a_run_imported_without_sample_times_started_when_the_harness_says(
    path: Path, when: Any, tmp_path: Path
) -> None:
    """`evalbook runs` shows the eval's own time (the file's), not the time of the import."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # what the fixtures skip is tested in their own files
        run = eb.import_results(path)
    assert run.cases.started_at.isna().all()  # these files carry no per-sample time
    run.save(tmp_path / "store")
    listed = eb.runs(tmp_path / "store")
    started = listed.started_at.iloc[0]
    assert abs(started.timestamp() - when(path)) < 1e-3, (started, when(path))
