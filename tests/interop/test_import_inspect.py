"""Importing Inspect AI logs (docs/interop.md, "Inspect AI"): real logs, made here by Inspect.

A tiny task runs once per log format with Inspect's `mockllm` model (offline): five samples,
two epochs, a `match()` scorer, a scorer giving 1.5 (out of range), one giving True (and an
unscored NaN), one giving a dict with a letter, a solver that raises for one sample, a message
limit for one and a time limit for another. The imported run is checked cell by cell against
the log Inspect itself reads back.

`python tests/interop/test_import_inspect.py DIR` writes the same log to DIR/tiny.eval (the
fixture in tests/interop/fixtures/inspect/ was made so).
"""

from __future__ import annotations

import asyncio
import math
import random
import shutil
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

inspect_ai = pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

from inspect_ai import Task, task  # noqa: E402
from inspect_ai.dataset import Sample  # noqa: E402
from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402
from inspect_ai.scorer import PARTIAL, Score, accuracy, match, mean, scorer  # noqa: E402
from inspect_ai.solver import Generate, TaskState, solver  # noqa: E402
from inspect_ai.util import message_limit, time_limit  # noqa: E402

from evalbook._interop._formats import import_run, sniff_format  # noqa: E402
from evalbook._interop._imported import FormatError, to_run_data  # noqa: E402
from evalbook._interop._inspect import (  # noqa: E402
    FORMAT,
    LETTERS,
    _inputs,
    _raw_names,
    _sample,
    _value_of,
)
from evalbook._model._contract import ERROR, SCORED, UNSCORED, record_of  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "inspect" / "tiny.eval"
ANSWERS = {"Say the default": "Default output", "Name a fruit": "An apple"}


def _answer(messages: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
    """mockllm's reply, by the question (with usage, so mockllm counts no tokens itself)."""
    text = messages[-1].text
    out = ModelOutput.from_content(model="mockllm", content=ANSWERS.get(text, "Not sure"))
    out.usage = ModelUsage(input_tokens=len(text.split()), output_tokens=2, total_tokens=5)
    return out


@solver
def _flaky() -> Any:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if state.sample_id == "boom":
            raise RuntimeError("the solver broke on purpose")
        if state.sample_id == "long":
            with message_limit(1):
                state = await generate(state)
        if state.sample_id == "slow":
            with time_limit(0.05):
                await asyncio.sleep(5)
        return await generate(state)

    return solve


@scorer(metrics=[mean()])
def too_big() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        big = state.sample_id == "a"
        return Score(value=1.5 if big else 0.25, explanation="1.5 for a")

    return score


@scorer(metrics=[accuracy()])
def boolean() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        if state.sample_id == "b":
            return Score.unscored(reason="refusal", explanation="nothing to grade")
        return Score(value=True, answer="yes")

    return score


@scorer(metrics={"fluency": [mean()], "grade": [accuracy()]})
def multi() -> Any:
    async def score(state: TaskState, target: Any) -> Score:
        return Score(value={"fluency": 0.5, "grade": PARTIAL if state.sample_id == "a" else "C"})

    return score


@task
def tiny() -> Task:
    return Task(
        dataset=[
            Sample(id="a", input="Say the default", target="Default output", metadata={"level": 1}),
            Sample(id="b", input="Name a fruit", target="banana", metadata={"level": 2}),
            Sample(id="boom", input="This one breaks", target="x"),
            Sample(id="long", input="Talk a lot", target="x"),
            Sample(id="slow", input="Take your time", target="x"),
        ],
        solver=_flaky(),
        scorer=[match(), too_big(), boolean(), multi()],
        epochs=2,
    )


def make_log(log_dir: Path, log_format: str) -> Path:
    """Run the tiny task with mockllm and return its log file."""
    logs = inspect_ai.eval(
        tiny(),
        model=get_model("mockllm/model", custom_outputs=_answer),
        log_dir=str(log_dir),
        log_format=log_format,
        display="none",
        fail_on_error=False,
    )
    return Path(logs[0].location)


@pytest.fixture(scope="module", params=["eval", "json"])
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_log(tmp_path_factory.mktemp(f"inspect-{request.param}"), request.param)


def _run(path: Path) -> Any:
    return to_run_data(FORMAT.read(path))


def _cell(frame: Any, case: str, epoch: int, **where: str) -> Any:
    rows = frame[(frame.case_id == case) & (frame.epoch == epoch)]
    for column, value in where.items():
        rows = rows[rows[column] == value]
    assert len(rows) == 1, (case, epoch, where)
    return rows.iloc[0]


def test_sniffed_and_named(made: Path) -> None:
    assert FORMAT.sniff(made)
    run = import_run(made, format="inspect")
    assert run.name == "tiny"
    imported = run.options["imported"]
    assert imported["format"] == "inspect" and imported["model"] == "mockllm/model"
    assert imported["inspect_version"] == inspect_ai.__version__.split("+")[0] or imported[
        "inspect_version"
    ].startswith("0.")
    assert imported["eval_id"] == read_eval_log(str(made), header_only=True).eval.eval_id
    assert imported["skipped"] == 0


def test_scores_named_as_inspect_names_them(made: Path) -> None:
    run = _run(made)
    names = [d.name for d in run.definitions]
    # results.scores order; the dict-valued scorer's keys by Inspect's own names
    assert names == ["match", "too_big", "boolean", "fluency", "grade"]
    assert [d.name for d in run.definitions if d.primary] == ["match"]  # Inspect's headline


def test_outcomes_epochs_and_errors(made: Path) -> None:
    cases = _run(made).cases
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
            assert _cell(cases, case, epoch).outcome == outcome
    boom = _cell(cases, "boom", 1)
    assert boom.error_type == "RuntimeError"
    assert "the solver broke on purpose" in boom.error_message
    long = _cell(cases, "long", 2)
    assert long.error_type == "message_limit" and "Message limit" in long.error_message
    assert _cell(cases, "slow", 1).error_type == "time_limit"
    assert _cell(cases, "a", 1).output == "Default output"
    assert _cell(cases, "b", 2).output == "An apple"
    assert boom.output is None or boom.output != boom.output  # no answer: none, never ""


def test_values_letters_and_invalid_records(made: Path) -> None:
    scores = _run(made).scores
    for epoch in (1, 2):
        match_a = _cell(scores, "a", epoch, score="match")
        assert (match_a.status, match_a.value) == ("scored", 1.0)  # "C"
        assert '"inspect_value": "C"' in match_a.metadata
        assert _cell(scores, "b", epoch, score="match").value == 0.0  # "I"
        big = _cell(scores, "a", epoch, score="too_big")
        assert (big.status, big.reason) == ("error", "invalid_score")
        assert "1.5" in big.message and big.rationale == "1.5 for a"
        assert _cell(scores, "b", epoch, score="too_big").value == 0.25
        true = _cell(scores, "a", epoch, score="boolean")
        assert (true.status, true.reason) == ("error", "invalid_score")  # True, not 1
        assert "True" in true.message
        nan = _cell(scores, "b", epoch, score="boolean")
        assert (nan.status, nan.reason) == ("unscored", "refusal")  # Inspect's NaN sentinel
        assert _cell(scores, "a", epoch, score="fluency").value == 0.5
        assert _cell(scores, "a", epoch, score="grade").value == 0.5  # "P"
        assert _cell(scores, "b", epoch, score="grade").value == 1.0  # "C"
        for case, code in (("boom", "case_errored"), ("long", "case_errored")):
            rec = _cell(scores, case, epoch, score="match")
            assert (rec.status, rec.reason) == ("error", code)
        assert _cell(scores, "slow", epoch, score="grade").reason == "case_timed_out"
    assert len(scores) == 10 * 5


def test_inputs_usage_and_times(made: Path) -> None:
    run = _run(made)
    log = read_eval_log(str(made))
    data = run.data.set_index("input")
    assert data.loc["Say the default", "target"] == "Default output"
    assert data.loc["Name a fruit", "level"] == 2
    cases = run.cases
    a = _cell(cases, "a", 1)
    (sample,) = [s for s in log.samples if s.id == "a" and s.epoch == 1]
    assert (a.input_tokens, a.output_tokens) == (3.0, 2.0)
    assert math.isnan(a.cost)  # mockllm reports no cost: unknown, never 0
    assert a.duration_s == pytest.approx(sample.total_time)
    assert a.started_at == pd.Timestamp(sample.started_at)
    boom = _cell(cases, "boom", 1)
    assert math.isnan(boom.input_tokens)  # no model call: no usage, never 0
    usage = run.usage().set_index(["case_id", "epoch"])
    assert usage.loc[("a", 1), "source"] == "task" and usage.loc[("a", 1), "calls"] == 1
    assert ("boom", 1) not in usage.index


def test_summary_counts(made: Path) -> None:
    summary = _run(made).summary().set_index("score")
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


def test_detected_and_detecting_nothing_else(made: Path) -> None:
    assert sniff_format(made).name == "inspect"
    assert import_run(made).name == "tiny"
    others = [
        p
        for p in (FIXTURE.parent.parent).rglob("*")
        if p.parent.name != "inspect" and p.name != "inspect"
    ]
    assert len(others) > 10
    claimed = [p for p in others if FORMAT.sniff(p)]
    assert claimed == []


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
        FORMAT.read(FIXTURE)


def test_committed_fixture_imports() -> None:
    run = _run(FIXTURE)
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
        assert not FORMAT.sniff(path)
        with pytest.raises(FormatError, match="not an Inspect AI log") as info:
            FORMAT.read(path)
        assert str(path) in str(info.value) and "expected" in str(info.value)
    other = tmp_path / "other.eval"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("readme.txt", "hello")
    assert not FORMAT.sniff(other)
    with pytest.raises(FormatError, match=r"no header\.json"):
        FORMAT.read(other)


def test_folder_with_one_log(made: Path, tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(made, folder / made.name)
    assert FORMAT.sniff(folder)
    assert len(_run(folder).cases) == 10
    shutil.copy(made, folder / f"second{made.suffix}")
    assert not FORMAT.sniff(folder)
    with pytest.raises(FormatError, match="exactly one"):
        FORMAT.read(folder)


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
        run = _run(path)
    assert run.options["imported"]["skipped"] == 1
    intact = _rows(_run(FIXTURE))
    rows = _rows(run)
    assert ("a", 1) not in rows and len(rows) == len(intact) - 1
    assert all(intact[key] == row for key, row in rows.items())


def test_a_damaged_header_is_an_error(tmp_path: Path) -> None:
    path = _rewritten(tmp_path, {"header.json": b'{"version": 2, "eval": "no"}'})
    with pytest.raises(FormatError, match=r"damaged.*header"):
        FORMAT.read(path)


# -- fault injection ----------------------------------------------------------------------


def _originals(path: Path) -> dict[Any, tuple[Any, ...]]:
    """Each sample's imported row of cases and scores, from the intact log."""
    run = _run(path)
    return _rows(run)


def _rows(run: Any) -> dict[Any, tuple[Any, ...]]:
    """Each sample's rows of cases and scores, and (under the key "scores") the definitions."""
    cases = run.cases
    out: dict[Any, tuple[Any, ...]] = {
        "scores": tuple((d.name, d.label, d.primary) for d in run.definitions)
    }
    for row in cases.itertuples(index=False):
        if row.outcome != row.outcome:  # a slot no sample filled
            continue
        scores = run.scores[(run.scores.case_id == row.case_id) & (run.scores.epoch == row.epoch)]
        out[(row.case_id, row.epoch)] = (
            repr(tuple(row)),
            repr(scores.to_dict("records")),
        )
    return out


def _compare(damaged: Path, originals: dict[Any, tuple[Any, ...]]) -> tuple[str, int]:
    """'refused' (a FormatError), or 'partial'/'whole' and how many samples differ."""
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = _run(damaged)
    except FormatError as exc:
        assert str(damaged) in str(exc)
        assert "damaged" in str(exc) or "no inspect sample could be read" in str(exc), exc
        return "refused", 0
    rows = _rows(run)
    different = sum(1 for key, row in rows.items() if originals.get(key) != row)
    skipped = run.options["imported"]["skipped"]
    if len(rows) < len(originals):
        assert skipped > 0 and any("skipped" in str(w.message) for w in caught)
    return ("partial" if skipped else "whole"), different


def test_truncations(made: Path, tmp_path: Path, record_property: Any) -> None:
    originals = _originals(made)
    body = made.read_bytes()
    offsets = sorted({int(len(body) * f) for f in (0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.97, 0.999)})
    offsets += [len(body) - 1]
    tally: dict[str, int] = {}
    different = 0
    for at in offsets:
        cut = tmp_path / f"cut{made.suffix}"
        cut.write_bytes(body[:at])
        kind, n = _compare(cut, originals)
        if kind == "partial":  # what was read is still told from other formats
            assert sniff_format(cut).name == "inspect"
        tally[kind] = tally.get(kind, 0) + 1
        different += n
    figure = f"{made.suffix} truncations: {len(offsets)} tried, {tally}, {different} read different"
    print(figure)
    record_property("truncations", figure)
    assert different == 0
    # a log cut inside its samples keeps those before the cut (a .eval: its whole members)
    assert tally.get("partial", 0) >= 3


# .eval only: a .json log has no checksum, so a flipped digit cannot be told from a value
@pytest.mark.parametrize("made", ["eval"], indirect=True)
def test_byte_flips_in_sample_entries(made: Path, tmp_path: Path, record_property: Any) -> None:
    originals = _originals(made)
    body = made.read_bytes()
    with zipfile.ZipFile(made) as zf:
        spans = [
            (info.header_offset, info.header_offset + 30 + len(info.filename) + info.compress_size)
            for info in zf.infolist()
            if info.filename.startswith("samples/")
        ]
    rng = random.Random(21)
    tried, different, skipped_some = 0, 0, 0
    for _ in range(40):
        start, end = rng.choice(spans)
        at = rng.randrange(start, end)
        flipped = bytearray(body)
        flipped[at] ^= 1 << rng.randrange(8)
        path = tmp_path / "flipped.eval"
        path.write_bytes(bytes(flipped))
        kind, n = _compare(path, originals)
        tried += 1
        different += n
        skipped_some += kind == "partial"
    figure = f"byte flips in sample entries: {tried} tried, {skipped_some} skipped a sample, "
    figure += f"{different} read as a different result"
    print(figure)
    record_property("byte_flips", figure)
    assert different == 0 and skipped_some > 0


if __name__ == "__main__":  # write the committed fixture: python <this file> DIR
    out = Path(sys.argv[1])
    log = make_log(out / "_tmp", "eval")
    log.replace(out / "tiny.eval")
    (out / "_tmp").rmdir()
    print(out / "tiny.eval")
