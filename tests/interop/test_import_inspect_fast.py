"""The fast reading of Inspect AI logs (issue 31): each sample read from its JSON for the fields
kept (no `EvalSample`), and a large log read by worker processes. What either gives is what
Inspect's own models give, read in this process.

Logs are written by Inspect's own writer (`write_eval_log`) from samples made of Inspect's models,
so the JSON is what Inspect writes (its attachments, its NaN); each import is compared with the one
that reads every sample through Inspect's `EvalSample` (the fast reading turned off).
"""

from __future__ import annotations

import warnings
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai.event import ModelEvent, ToolEvent
from inspect_ai.log import (
    EvalError,
    EvalRetryError,
    EvalSample,
    EvalSampleLimit,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ContentImage,
    ContentReasoning,
    ContentText,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

import evalbook as eb
from evalbook._errors import ConfigurationError
from evalbook._interop import _inspect
from evalbook._interop._inspect_events import Unusual

TINY = Path(__file__).parent / "fixtures" / "inspect" / "tiny.eval"
_T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

# text as a model or a tool might give it: short, hostile, or long enough for Inspect to keep
# it once as an attachment
texts = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["<script>alert(1)</script>", "über", "attachment://nothing", "tc://x"]),
    st.text(min_size=1, max_size=4).map(lambda t: t * 120),
)


def _content(draw: Any) -> Any:
    if draw(st.booleans()):
        return draw(texts)
    parts: list[Any] = []
    for kind in draw(st.lists(st.sampled_from(["text", "reasoning", "image"]), max_size=3)):
        if kind == "text":
            parts.append(ContentText(text=draw(texts)))
        elif kind == "reasoning":
            parts.append(ContentReasoning(reasoning=draw(texts)))
        else:  # not read by the fast path: the sample is Inspect's to read
            parts.append(ContentImage(image="https://127.0.0.1/x.png"))
    return parts


@st.composite
def samples(draw: Any, sid: str) -> EvalSample:
    """A sample of an agent: messages with tool calls, their model and tool events, a score."""
    messages: list[Any] = []
    events: list[Any] = []
    if draw(st.booleans()):
        messages.append(ChatMessageSystem(content=_content(draw)))
    messages.append(ChatMessageUser(content=_content(draw)))
    when = _T0
    for turn in range(draw(st.integers(0, 3))):
        calls = [
            ToolCall(id=f"{sid}-{turn}-{k}", function=draw(st.sampled_from(["look", "add"])),
                     arguments={"q": draw(texts), "n": draw(st.integers(-3, 3))})
            for k in range(draw(st.integers(0, 2)))
        ]  # fmt: skip
        reply = ChatMessageAssistant(
            content=_content(draw), tool_calls=calls or None, model=draw(st.none() | texts)
        )
        messages.append(reply)
        usage = draw(
            st.none()
            | st.builds(
                ModelUsage,
                input_tokens=st.integers(0, 10**6),
                output_tokens=st.integers(0, 999),
                total_cost=st.none() | st.floats(0, 5),
            )
        )
        output = ModelOutput(model="m", choices=[ChatCompletionChoice(message=reply)], usage=usage)
        when += timedelta(seconds=draw(st.integers(0, 9)))
        events.append(
            ModelEvent(
                model="mockllm/model", input=[], tools=[], tool_choice="auto",
                config=GenerateConfig(), output=output, timestamp=when,
                working_time=draw(st.none() | st.floats(0, 60)),
                completed=draw(st.none() | st.just(when + timedelta(seconds=2))),
            )
        )  # fmt: skip
        for call in calls:
            error = draw(st.none() | st.builds(ToolCallError, st.just("unknown"), texts))
            messages.append(
                ChatMessageTool(
                    content=_content(draw), tool_call_id=call.id, function=call.function,
                    error=error,
                )
            )  # fmt: skip
            events.append(
                ToolEvent(
                    id=call.id, function=call.function, arguments=call.arguments,
                    timestamp=when, working_time=draw(st.none() | st.floats(0, 9)),
                )
            )  # fmt: skip
    value = draw(
        st.sampled_from(["C", "I", "P", "N"])
        | st.floats(allow_infinity=False)  # NaN: Inspect's "not scored"
        | st.booleans()
        | st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 1), min_size=1)
    )
    score = Score(
        value=value,
        answer=draw(st.none() | texts),
        explanation=draw(st.none() | texts),
        metadata=draw(st.none() | st.just({"unscored_reason": "refusal"})),
    )
    error = draw(
        st.none()
        | st.builds(
            EvalError,
            message=st.just("ValueError('bad')"),
            traceback=st.just("Traceback:\nValueError: bad"),
            traceback_ansi=st.just(""),
        )
    )
    limit = draw(
        st.none()
        | st.builds(EvalSampleLimit, type=st.sampled_from(["time", "message"]), limit=st.just(5))
    )
    retries = draw(
        st.none()
        | st.lists(
            st.builds(
                EvalRetryError,
                message=st.just("KeyError('k')"),
                traceback=st.just("KeyError: 'k'"),
                traceback_ansi=st.just(""),
            ),
            max_size=2,
        )
    )
    started = draw(
        st.none()
        | st.sampled_from(["2026-01-02T03:04:05Z", "2026-01-02T03:04:05", _T0.isoformat()])
    )
    return EvalSample(
        id=sid if draw(st.booleans()) else int(sid[1:]),
        epoch=draw(st.integers(1, 2)),
        input=draw(texts) if draw(st.booleans()) else messages[:1],
        target=draw(texts | st.lists(texts, max_size=2)),
        metadata={"topic": draw(texts)},
        messages=messages,
        output=ModelOutput(model="m", completion=draw(st.just("") | texts)),
        scores={"match": score},
        events=events,
        model_usage={"mockllm/model": ModelUsage(input_tokens=3, output_tokens=4)},
        started_at=started,
        total_time=draw(st.none() | st.floats(0, 100)),
        error=error,
        error_retries=retries,
        limit=limit,
    )


def _inspects_to_read(sample: EvalSample) -> bool:
    """An image part, or a tool call's argument that reads as an attachment reference."""
    messages = [*sample.messages, *([] if isinstance(sample.input, str) else sample.input)]
    for m in messages:
        if isinstance(m.content, list) and any(isinstance(p, ContentImage) for p in m.content):
            return True
        for call in getattr(m, "tool_calls", None) or ():
            if any(str(v).startswith(("attachment://", "tc://")) for v in call.arguments.values()):
                return True
    return False


def _import(path: Path) -> tuple[Any, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.import_results(path, format="inspect")
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    return run, said


def _everything(run: Any) -> list[Any]:
    transcripts = [
        None if t is None else (t.model_dump(), repr(t))
        for cid in run.cases["case_id"].unique()
        for t in [run.transcript(cid)]
    ]
    return [run.cases, run.scores, run.steps(), run.tool_calls(), transcripts, run.options]


def _same(mine: list[Any], theirs: list[Any]) -> None:
    for a, b in zip(mine, theirs, strict=True):
        if isinstance(a, pd.DataFrame):
            pd.testing.assert_frame_equal(a, b)
        else:
            assert repr(a) == repr(b)


def _slow(mp: pytest.MonkeyPatch) -> None:
    def refuse(log_api: Any, data: Any) -> Any:
        raise Unusual("the fast path is off")

    mp.setattr(_inspect, "_light", refuse)


def _counted(mp: pytest.MonkeyPatch) -> list[int]:
    """How many samples the fast path read (and how many it left to Inspect's models)."""
    tally = [0, 0]
    light = _inspect._light

    def counting(log_api: Any, data: Any) -> Any:
        try:
            found = light(log_api, data)
        except (Unusual, ValueError):
            tally[1] += 1
            raise
        tally[0] += 1
        return found

    mp.setattr(_inspect, "_light", counting)
    return tally


def _log_of(sample_list: list[EvalSample], path: Path) -> Path:
    """A `.eval` log of `sample_list`, written by Inspect, with the tiny log's header."""
    log = read_eval_log(TINY, header_only=True)
    ids = [s.id for s in sample_list]
    log.eval.dataset = log.eval.dataset.model_copy(update={"samples": len(ids), "sample_ids": ids})
    log.samples = sample_list
    log.results = None
    write_eval_log(log, str(path))
    return path


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_the_fast_reading_equals_inspects_on_generated_samples(
    data: st.DataObject, tmp_path: Path
) -> None:
    n = data.draw(st.integers(1, 4))
    drawn = [data.draw(samples(f"s{k}")) for k in range(n)]
    log = _log_of(drawn, tmp_path / "generated.eval")
    with pytest.MonkeyPatch.context() as mp:
        tally = _counted(mp)
        fast, fast_said = _import(log)
        mine = _everything(fast)
    # every sample was read by the fast path but one it leaves to Inspect's models
    odd = sum(_inspects_to_read(s) for s in drawn)
    assert tally == [n - odd, odd]
    with pytest.MonkeyPatch.context() as mp:
        _slow(mp)
        slow, slow_said = _import(log)
        _same(mine, _everything(slow))
    assert fast_said == slow_said


def test_the_real_logs_are_read_by_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    tally = _counted(monkeypatch)
    run, _ = _import(TINY)
    assert tally == [10, 0] and len(run.cases) == 10


def _flipped(path: Path, out: Path, member: str) -> Path:
    """`path` with a byte of `member`'s compressed data changed (its CRC then fails)."""
    body = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    body[start + info.compress_size // 2] ^= 0xFF
    out.write_bytes(bytes(body))
    return out


@pytest.mark.parametrize("damage", [False, True], ids=["intact", "a-member-damaged"])
def test_worker_processes_give_what_one_process_gives(
    damage: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = TINY
    if damage:
        with zipfile.ZipFile(TINY) as zf:
            member = sorted(n for n in zf.namelist() if n.startswith("samples/"))[3]
        log = _flipped(TINY, tmp_path / "flipped.eval", member)
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "1")
    here, here_said = _import(log)
    mine = _everything(here)
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "2")
    monkeypatch.setattr(_inspect, "_CHUNK", 3)  # 10 samples: 4 runs of members
    workers, workers_said = _import(log)
    _same(mine, _everything(workers))
    assert workers_said == here_said
    if damage:  # reported with its file and member, never read as another result
        assert workers.options["imported"]["skipped"] == 1 and len(workers.cases) == 10
        assert f"flipped.eval:{member}" in workers_said[0]
        assert workers.cases["outcome"].notna().sum() == 9  # the damaged one: not run


def test_how_many_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVALBOOK_IMPORT_WORKERS", raising=False)
    assert _inspect._workers(_inspect._PARALLEL_FROM - 1) == 1
    assert 1 <= _inspect._workers(_inspect._PARALLEL_FROM) <= _inspect._MAX_WORKERS
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "3")
    assert _inspect._workers(10) == 3
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "many")
    with pytest.raises(ConfigurationError, match="EVALBOOK_IMPORT_WORKERS"):
        _inspect._workers(10)


def test_a_log_cut_short_is_read_in_one_process_whatever_the_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    body = TINY.read_bytes()
    cut = tmp_path / "cut.eval"
    cut.write_bytes(body[: int(len(body) * 0.7)])  # its zip directory lost: members salvaged
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "1")
    here, here_said = _import(cut)
    monkeypatch.setenv("EVALBOOK_IMPORT_WORKERS", "2")
    monkeypatch.setattr(_inspect, "_CHUNK", 3)
    workers, workers_said = _import(cut)
    _same(_everything(here), _everything(workers))
    assert workers_said == here_said and "cut short" in workers_said[0]
    assert 0 < workers.cases["outcome"].notna().sum() < 10


def test_a_forked_worker_reads_with_the_directory_it_was_forked_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalbook._interop._inspect_files import read_eval

    with zipfile.ZipFile(TINY) as zf:
        member = sorted(n for n in zf.namelist() if n.startswith("samples/"))[3]
    log = _flipped(TINY, tmp_path / "copy.eval", member)  # a damaged member: zipfile's to say
    _, members, _ = read_eval(log)
    names = members.names()
    want_skipped: list[str] = []
    want = list(members.only(names, want_skipped))
    directory = members.directory()
    members.close()
    monkeypatch.setattr(_inspect, "_DIRECTORY", [directory])
    monkeypatch.setattr(_inspect, "_OPENED", [])
    _inspect._open_archive(log)
    again = _inspect._OPENED[-1]
    assert again.members is directory[1]  # not read again
    skipped: list[str] = []
    assert list(again.only(names, skipped)) == want and len(want) == len(names) - 1
    assert skipped == want_skipped and member in skipped[0]
    again.close()
    # the file replaced since: its directory is read again, never the old one used
    body = log.read_bytes()
    log.unlink()
    log.write_bytes(body)
    _inspect._open_archive(log)
    fresh = _inspect._OPENED[-1]
    assert fresh.members is not directory[1] and list(fresh.only(names, [])) == want
    fresh.close()
