"""Importing Inspect AI logs (docs/interop.md, "Inspect AI"): real logs, made here by Inspect.

A tiny task runs once per log format with Inspect's `mockllm` model (offline): five samples,
two epochs, a `match()` scorer, a scorer giving 1.5 (out of range), one giving True (and an
unscored NaN), one giving a dict with a letter, a solver that raises for one sample, a message
limit for one and a time limit for another. The imported run is checked cell by cell against
the log Inspect itself reads back.

The task and its log are in `_inspect_task.py`; the `made` fixture (tests/interop/conftest.py)
runs it once per log format for the whole session.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

inspect_ai = pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

from _inspect_task import FIXTURE, cell, rows_of, run_of  # noqa: E402
from _interop_helpers import FormatError, detected, quiet_import  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.scorer import PARTIAL, Score  # noqa: E402

import evalbook as eb  # noqa: E402

# the mapping of Inspect's own values and records, unit by unit (no public door reaches them
# with arbitrary values: only Inspect writes its logs)
from evalbook._interop._inspect import LETTERS, _inputs, _raw_names, _sample, _value_of  # noqa: E402
from evalbook._model._contract import ERROR, SCORED, UNSCORED, record_of  # noqa: E402


def test_sniffed_and_named(made: Path) -> None:
    assert detected(made) == "inspect"
    run = quiet_import(made, format="inspect")
    assert run.name == "tiny"
    imported = run.options["imported"]
    assert imported["format"] == "inspect" and imported["model"] == "mockllm/model"
    assert imported["inspect_version"] == inspect_ai.__version__.split("+")[0] or imported[
        "inspect_version"
    ].startswith("0.")
    assert imported["eval_id"] == read_eval_log(str(made), header_only=True).eval.eval_id
    assert imported["skipped"] == 0


def test_scores_named_as_inspect_names_them(made: Path) -> None:
    run = run_of(made)
    names = [d.name for d in run.definitions]
    # results.scores order; the dict-valued scorer's keys by Inspect's own names
    assert names == ["match", "too_big", "boolean", "fluency", "grade"]
    assert [d.name for d in run.definitions if d.primary] == ["match"]  # Inspect's headline


def test_outcomes_epochs_and_errors(made: Path) -> None:
    cases = run_of(made).cases
    assert len(cases) == 10 and sorted(set(cases.epoch)) == [1, 2]
    want = {
        "a": "passed",
        "b": "passed",
        "boom": "errored",
        "long": "errored",
        "slow": "timed_out",
    }
    for case, outcome in want.items():
        for epoch in (1, 2):
            assert cell(cases, case, epoch).outcome == outcome
    boom = cell(cases, "boom", 1)
    assert boom.error_type == "RuntimeError"
    # Inspect writes the exception's repr; evalbook keeps the type and the message apart
    assert boom.error_message == "the solver broke on purpose"
    long = cell(cases, "long", 2)
    assert long.error_type == "message_limit" and "Message limit" in long.error_message
    assert cell(cases, "slow", 1).error_type == "time_limit"
    assert cell(cases, "a", 1).output == "Default output"
    assert cell(cases, "b", 2).output == "An apple"
    assert boom.output is None or boom.output != boom.output  # no answer: none, never ""


def test_values_letters_and_invalid_records(made: Path) -> None:
    scores = run_of(made).scores
    for epoch in (1, 2):
        match_a = cell(scores, "a", epoch, score="match")
        assert (match_a.status, match_a.value) == ("scored", 1.0)  # "C"
        assert '"inspect_value": "C"' in match_a.metadata
        assert cell(scores, "b", epoch, score="match").value == 0.0  # "I"
        big = cell(scores, "a", epoch, score="too_big")
        assert (big.status, big.reason) == ("error", "invalid_score")
        assert "1.5" in big.message and big.rationale == "1.5 for a"
        assert cell(scores, "b", epoch, score="too_big").value == 0.25
        true = cell(scores, "a", epoch, score="boolean")
        assert (true.status, true.reason) == ("error", "invalid_score")  # True, not 1
        assert "True" in true.message
        nan = cell(scores, "b", epoch, score="boolean")
        assert (nan.status, nan.reason) == ("unscored", "refusal")  # Inspect's NaN sentinel
        assert cell(scores, "a", epoch, score="fluency").value == 0.5
        assert cell(scores, "a", epoch, score="grade").value == 0.5  # "P"
        assert cell(scores, "b", epoch, score="grade").value == 1.0  # "C"
        for case, code in (("boom", "case_errored"), ("long", "case_errored")):
            rec = cell(scores, case, epoch, score="match")
            assert (rec.status, rec.reason) == ("error", code)
        assert cell(scores, "slow", epoch, score="grade").reason == "case_timed_out"
    assert len(scores) == 10 * 5


def test_inputs_usage_and_times(made: Path) -> None:
    run = run_of(made)
    log = read_eval_log(str(made))
    data = run.data.set_index("input")
    assert data.loc["Say the default", "target"] == "Default output"
    assert data.loc["Name a fruit", "level"] == 2
    cases = run.cases
    a = cell(cases, "a", 1)
    (sample,) = [s for s in log.samples if s.id == "a" and s.epoch == 1]
    assert (a.input_tokens, a.output_tokens) == (3.0, 2.0)
    assert math.isnan(a.cost)  # mockllm reports no cost: unknown, never 0
    assert a.duration_s == pytest.approx(sample.total_time)
    assert a.started_at == pd.Timestamp(sample.started_at)
    boom = cell(cases, "boom", 1)
    assert math.isnan(boom.input_tokens)  # no model call: no usage, never 0
    usage = run.usage().set_index(["case_id", "epoch"])
    assert usage.loc[("a", 1), "source"] == "task" and usage.loc[("a", 1), "calls"] == 1
    assert ("boom", 1) not in usage.index


def test_summary_counts(made: Path) -> None:
    summary = run_of(made).summary().set_index("score")
    # match: a (1) and b (0) count in both epochs; the other three samples are errors
    assert summary.loc["match", "mean"] == pytest.approx(0.5)
    assert summary.loc["match", "errors"] == 6
    assert summary.loc["boolean", "unscored"] == 2
    assert summary.loc["grade", "mean"] == pytest.approx(0.75)


def test_letters_are_only_inspects() -> None:
    from inspect_ai.scorer import CORRECT, INCORRECT, NOANSWER, value_to_float

    to_float = value_to_float()
    assert set(LETTERS) == {CORRECT, INCORRECT, PARTIAL, NOANSWER}
    for letter, number in LETTERS.items():
        assert to_float(letter) == number


_VALUES = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-2, 3),
    st.booleans(),
    st.sampled_from(["C", "P", "I", "N", "c", "yes", "true", "0.5", "1", "", "correct"]),
    st.text(max_size=3),
    st.lists(st.integers(0, 1), max_size=2),
)


def _expected(value: Any) -> tuple[int, float | None]:
    """The record the contract must give a raw Inspect value: (status, value or None)."""
    if type(value) is str and value in LETTERS:
        return SCORED, LETTERS[value]
    if type(value) is float and math.isnan(value):
        return UNSCORED, None
    if type(value) in (int, float) and math.isfinite(value) and 0 <= value <= 1:
        return SCORED, float(value)
    return ERROR, None


@settings(max_examples=300, deadline=None)
@given(value=_VALUES, keyed=st.booleans())
def test_value_mapping_is_inspects_and_nothing_else(value: Any, keyed: bool) -> None:
    """A value scores only as a real in [0, 1] or one of Inspect's letters; NaN is unscored;
    every other value, boolean or text, is invalid_score, for a scorer's value and a key's."""
    if keyed and isinstance(value, list):
        value = None  # a dict's values are scalars or None in Inspect's Value type
    score = Score(value={"k": value} if keyed else value, explanation="why")
    rec = record_of(_value_of(score, "s", "k" if keyed else None))
    status, number = _expected(value)
    assert rec.status == status, (value, rec)
    if status == SCORED:
        assert rec.value == number and rec.rationale == "why"
    if status == ERROR:
        assert rec.reason == "invalid_score"


def test_detected(made: Path) -> None:
    run = quiet_import(made)
    assert run.name == "tiny" and run.options["imported"]["format"] == "inspect"


def _bare_sample(**fields: Any) -> Any:
    from inspect_ai.log import EvalSample

    return EvalSample(id=7, epoch=1, input="q", target="t", **fields)


def test_chat_input_list_target_and_metadata_columns() -> None:
    from inspect_ai.model import ChatMessageSystem, ChatMessageUser

    sample = _bare_sample(
        metadata={"input": "hidden?", "level": 3},
        choices=["A", "B"],
    )
    sample.input = [ChatMessageSystem(content="Be brief."), ChatMessageUser(content="Pick one")]
    sample.target = ["A", "B"]
    columns = dict(_inputs(sample))
    assert columns == {
        "input": "system: Be brief.\n\nuser: Pick one",
        "target": ["A", "B"],  # as Inspect has it, not joined
        "choices": ["A", "B"],
        "metadata.input": "hidden?",  # does not hide the sample's input
        "level": 3,
    }
    imported = _sample(sample, [], {})
    assert (imported.case_id, imported.output, imported.usage) == ("7", None, None)


@pytest.mark.parametrize(
    ("kind", "outcome"),
    [
        ("time", "timed_out"),
        ("working", "timed_out"),
        ("context", "errored"),
        ("message", "errored"),
        ("token", "errored"),
        ("turn", "errored"),
        ("cost", "errored"),
        ("operator", "errored"),
        ("custom", "errored"),
    ],
)
def test_every_limit_type(kind: str, outcome: str) -> None:
    from inspect_ai.log import EvalSampleLimit

    sample = _bare_sample(limit=EvalSampleLimit(type=kind, limit=10))  # type: ignore[arg-type]
    got = _sample(sample, [], {})
    assert (got.outcome, got.error_type) == (outcome, f"{kind}_limit")
    assert got.error_message == f"{kind} limit of 10 reached"  # Inspect gave no reason


def test_error_type_from_the_traceback_else_the_message() -> None:
    from inspect_ai.log import EvalError

    def error_type(message: str, traceback: str) -> str | None:
        error = EvalError(message=message, traceback=traceback, traceback_ansi=traceback)
        return _sample(_bare_sample(error=error), [], {}).error_type

    assert error_type("boom", "Traceback ...\n  ...\nmypkg.errors.Broke: boom\n") == (
        "mypkg.errors.Broke"
    )
    assert error_type("ValueError('x')", "") == "ValueError"
    assert error_type("it broke", "no type line") == "unknown"


def test_names_stay_inspects_and_unique() -> None:
    keys = [("multi", "grade"), ("other", "grade"), ("grade", None), ("match", None)]
    assert list(_raw_names(keys).values()) == ["grade", "other.grade", "grade (2)", "match"]


def test_a_dict_scorer_without_a_dict() -> None:
    rec = record_of(_value_of(Score(value=0.5), "multi", "grade"))
    assert (rec.status, rec.reason) == (ERROR, "invalid_score")
    assert "0.5" in str(rec.message) and "dict" in str(rec.message)
    assert _value_of(Score(value={"other": 1}), "multi", "grade") is None  # -> missing_score


def test_without_inspect_one_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if Inspect were absent
    with pytest.raises(ImportError, match=r'pip install "evalbook\[inspect\]"'):
        eb.import_results(FIXTURE, format="inspect")


def test_committed_fixture_imports() -> None:
    run = run_of(FIXTURE)
    assert run.name == "tiny" and len(run.cases) == 10
    assert set(run.cases.outcome) == {"passed", "errored", "timed_out"}


def test_not_an_inspect_log(tmp_path: Path) -> None:
    cases = {
        "notes.json": b'{"results": []}',
        "x.eval": b"not a zip at all",
        "empty.eval": b"",
    }
    for name, body in cases.items():
        path = tmp_path / name
        path.write_bytes(body)
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            eb.import_results(path)  # detected as no format
        with pytest.raises(FormatError, match="not an Inspect AI log") as info:
            eb.import_results(path, format="inspect")
        assert str(path) in str(info.value) and "expected" in str(info.value)
    other = tmp_path / "other.eval"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(FormatError, match="not a results file evalbook can import"):
        eb.import_results(other)
    with pytest.raises(FormatError, match=r"no header\.json"):
        eb.import_results(other, format="inspect")


def test_folder_with_one_log(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(made, folder / made.name)
    assert detected(folder) == "inspect"
    assert len(run_of(folder).cases) == 10
    shutil.copy(made, folder / f"second{made.suffix}")
    # detected or named, a folder of two logs (Inspect's default logs/) says to pass one
    for fmt in (None, "inspect"):
        with pytest.raises(FormatError, match=r"exactly one .* it holds 2 .*pass the log file"):
            eb.import_results(folder, format=fmt)


def _rewritten(tmp_path: Path, replace: dict[str, bytes]) -> Path:
    """The committed fixture with some members' bytes replaced (a valid zip, CRCs right)."""
    out = tmp_path / "rewritten.eval"
    with zipfile.ZipFile(FIXTURE) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, replace.get(info.filename, src.read(info)))
    return out


def test_a_sample_inspect_refuses_is_skipped_and_named(tmp_path: Path) -> None:
    path = _rewritten(tmp_path, {"samples/a_epoch_1.json": b'{"id": "a", "nope": 1}'})
    with pytest.warns(RuntimeWarning, match=r"skipped 1 part.*a_epoch_1\.json.*not an Inspect"):
        run = run_of(path)
    assert run.options["imported"]["skipped"] == 1
    intact = rows_of(run_of(FIXTURE))
    rows = rows_of(run)
    assert ("a", 1) not in rows and len(rows) == len(intact) - 1
    assert all(intact[key] == row for key, row in rows.items())


def test_a_damaged_header_is_an_error(tmp_path: Path) -> None:
    path = _rewritten(tmp_path, {"header.json": b'{"version": 2, "eval": "no"}'})
    with pytest.raises(FormatError, match=r"damaged.*header"):
        eb.import_results(path, format="inspect")


def test_a_newer_log_format_says_to_upgrade_inspect_not_that_it_is_damaged(
    tmp_path: Path,
) -> None:
    with zipfile.ZipFile(FIXTURE) as zf:
        header = json.loads(zf.read("header.json"))
    header["version"] = 3
    newer = _rewritten(tmp_path, {"header.json": json.dumps(header).encode()})
    with pytest.raises(eb.ConfigurationError, match=r"format version 3, newer than") as caught:
        eb.import_results(newer)
    assert "pip install -U inspect-ai" in str(caught.value)
    assert "damaged" not in str(caught.value)


def _retried_log(log_dir: Path) -> Path:
    """A log where Inspect retried sample `r` twice (`retry_on_error=3`) before it passed."""
    from inspect_ai import Task
    from inspect_ai import eval as inspect_eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import Generate, TaskState, solver

    calls: dict[Any, int] = {}

    @solver
    def flaky() -> Any:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            calls[state.sample_id] = calls.get(state.sample_id, 0) + 1
            if state.sample_id == "r" and calls["r"] < 3:
                raise ValueError(f"try {calls['r']} failed")
            return await generate(state)

        return solve

    def reply(messages: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        out = ModelOutput.from_content(model="mockllm", content="x")
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        return out

    task = Task(
        dataset=[Sample(id="r", input="q", target="x"), Sample(id="ok", input="q", target="x")],
        solver=flaky(),
        scorer=match(),
        name="retried",
    )
    logs = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=reply),
        log_dir=str(log_dir),
        display="none",
        retry_on_error=3,
    )
    return Path(logs[0].location)


def test_inspects_retries_are_attempts_with_their_errors_and_unknown_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each of Inspect's `error_retries` is an attempt with its own error; Inspect keeps the
    last attempt's time only, so the retries' times are unknown, and `show --attempts` says
    so rather than print an offset from a start it does not know."""
    from _cli_helpers import in_process

    log = _retried_log(tmp_path / "logs")
    run = eb.import_results(log)
    table = run.attempts()
    r = table[table.case_id == "r"]
    assert list(r.attempt) == [1, 2, 3]
    assert list(r.outcome) == ["errored", "errored", "passed"]
    assert list(r.error_type.astype(object)[:2]) == ["ValueError", "ValueError"]
    assert list(r.error_message[:2]) == ["try 1 failed", "try 2 failed"]
    assert r.started_at[:2].isna().all() and r.duration_s[:2].isna().all()
    header = read_eval_log(str(log))
    sample = next(s for s in header.samples or [] if s.id == "r")
    assert r.duration_s.iloc[2] == sample.total_time  # the last attempt is the sample's
    assert cell(run.cases, "r", 1).attempts == 3
    run.save(tmp_path / "store")
    code, out, _ = in_process(
        capsys, "show", run.name, "--store", str(tmp_path / "store"), "--attempts"
    )
    assert code == 0, out
    rows = [line.split() for line in out.splitlines() if line.startswith("r ")]
    assert len(rows) == 3
    # no offset where the first attempt's start is unknown, no duration where the table has none
    assert [row[3] for row in rows] == ["—", "—", "—"] and "+0.0ms" not in out
    assert [row[4] for row in rows][:2] == ["—", "—"]
    assert "ValueError: try 1 failed" in out and "ValueError: ValueError" not in out
