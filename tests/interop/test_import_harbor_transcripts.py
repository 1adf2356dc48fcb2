"""Harbor trials import with their ATIF trajectories as transcripts (docs/interop.md "Harbor").

The fixture job fixtures/harbor/agent-job was written by Harbor 0.26.0 itself: its terminus-2
agent on two tasks against a scripted model on 127.0.0.1 (fixtures/harbor/README.md,
regenerate.sh); each trial's agent/trajectory.json is Harbor's own ATIF file. The expected
messages are read here from those files, step by step.
"""

from __future__ import annotations

import copy
import json
import shutil
import warnings
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from _interop_helpers import quiet_import
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"
AGENT_JOB = FIXTURES / "agent-job"
ORACLE_JOB = FIXTURES / "job"


def _trial(task: str, job: Path = AGENT_JOB) -> Path:
    (found,) = [p for p in job.iterdir() if p.is_dir() and p.name.startswith(f"{task}__")]
    return found


def _atif(trial: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((trial / "agent" / "trajectory.json").read_text())
    return doc


def _expected(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages an ATIF trajectory says, as docs/interop.md maps them."""
    out: list[dict[str, Any]] = []
    for step in doc["steps"]:
        role = {"agent": "assistant"}.get(step["source"], step["source"])
        calls = step.get("tool_calls") or []
        out.append(
            {
                "role": role,
                "content": step["message"],
                "calls": [(c["tool_call_id"], c["function_name"], c["arguments"]) for c in calls],
                "model": step.get("model_name")
                or (doc["agent"]["model_name"] if role == "assistant" else None),
                "input_tokens": (step.get("metrics") or {}).get("prompt_tokens"),
                "started_at": datetime.fromisoformat(step["timestamp"]).timestamp(),
            }
        )
        names = {c["tool_call_id"]: c["function_name"] for c in calls}
        for result in (step.get("observation") or {}).get("results", []):
            call = result.get("source_call_id")
            out.append(
                {
                    "role": "tool" if call else "user",
                    "content": result["content"],
                    "call_id": call,
                    "name": names.get(call),
                }
            )
    return out


def _import(path: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a sound trajectory imports without a word
        return eb.import_results(path, format="harbor")


def _warned(path: Path) -> tuple[eb.Run, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = eb.import_results(path, format="harbor")
    return run, [str(w.message) for w in caught if "trajectory" in str(w.message)]


def test_the_steps_are_the_trajectory_files_steps() -> None:
    run = _import(AGENT_JOB)
    steps, calls = run.steps(), run.tool_calls()
    for task in ("hello-world", "fix-bug"):
        want = _expected(_atif(_trial(task)))
        mine = steps[steps["case_id"] == task].reset_index(drop=True)
        assert list(mine["role"]) == [m["role"] for m in want]
        assert list(mine["content"]) == [m["content"] for m in want]
        transcript = run.transcript(task)
        assert transcript is not None
        for m, w in zip(transcript.messages, want, strict=True):
            if w["role"] == "assistant":
                assert m.model == w["model"] and m.started_at == pytest.approx(w["started_at"])
                assert m.input_tokens == w["input_tokens"]
                assert [(c.id, c.function.name, json.loads(c.function.arguments))
                        for c in m.tool_calls or ()] == w["calls"]  # fmt: skip
            if w["role"] == "tool":
                assert (m.tool_call_id, m.name) == (w["call_id"], w["name"])
        mine_calls = calls[calls["case_id"] == task]
        assert list(mine_calls["call_id"]) == [c[0] for m in want if m["role"] == "assistant"
                                               for c in m["calls"]]  # fmt: skip


def test_the_counts_are_the_files() -> None:
    """The fixture's README: hello-world 7 steps and 5 calls, fix-bug 7 steps and 3 calls."""
    run = _import(AGENT_JOB)
    cases = run.cases.set_index("case_id")
    assert cases.loc["hello-world", ["n_steps", "n_tool_calls", "n_tool_errors"]].tolist() == [
        7,
        5,
        0,
    ]
    assert cases.loc["fix-bug", ["n_steps", "n_tool_calls", "n_tool_errors"]].tolist() == [7, 3, 0]
    for task in ("hello-world", "fix-bug"):
        doc = _atif(_trial(task))
        n_calls = sum(len(s.get("tool_calls") or []) for s in doc["steps"])
        n_results = sum(len((s.get("observation") or {}).get("results", [])) for s in doc["steps"])
        assert cases.loc[task, "n_tool_calls"] == n_calls
        assert cases.loc[task, "n_steps"] == len(doc["steps"]) + n_results
    calls = run.tool_calls()
    # a result answers a call only where Harbor linked it (one command's output)
    assert calls.loc[calls["ok"], "call_id"].tolist() == ["call_1_1", "call_0_1"]
    # the rewards and outcomes import as without transcripts
    assert run.cases["outcome"].tolist() == ["passed", "passed"]


def test_hostile_text_is_kept_as_data() -> None:
    run = _import(AGENT_JOB)
    said = run.steps()["content"].tolist()
    assert any("A <script>alert('hi')</script> tag here is only text." in s for s in said)


def test_the_oracle_agent_writes_no_trajectory() -> None:
    run = quiet_import(ORACLE_JOB, "harbor")
    assert not list(ORACLE_JOB.glob("*/agent/trajectory.json"))
    assert "n_steps" not in run.cases.columns and len(run.steps()) == 0


def test_a_stored_import_keeps_its_transcripts(tmp_path: Path) -> None:
    run = _import(AGENT_JOB)
    loaded = eb.load_run(run.save(tmp_path))
    assert loaded.steps().equals(run.steps())
    assert loaded.tool_calls().equals(run.tool_calls())


def test_a_trials_result_json_reads_the_trajectory_beside_it() -> None:
    trial = _trial("hello-world")
    one = _import(trial / "result.json")
    assert (
        one.steps()["content"].tolist()
        == _import(AGENT_JOB).steps().query("case_id == 'hello-world'")["content"].tolist()
    )


def _job_copy(tmp: Path) -> tuple[Path, Path]:
    job = Path(shutil.copytree(AGENT_JOB, tmp / "job"))
    return job, _trial("hello-world", job) / "agent" / "trajectory.json"


def _edit_step(k: int, key: str, value: Any) -> Any:
    def edit(doc: dict[str, Any]) -> None:
        doc["steps"][k][key] = value

    return edit


def _edit_result(doc: dict[str, Any]) -> None:
    doc["steps"][1]["observation"]["results"][0]["source_call_id"] = "nobody"
    doc["steps"][1]["tool_calls"][0]["tool_call_id"] = "nobody"
    doc["steps"][2]["observation"]["results"].append({"source_call_id": "call_0_1", "content": "?"})


DAMAGE = {
    "a message that is a number": _edit_step(1, "message", 12),
    "a source evalbook does not know": _edit_step(2, "source", "robot"),
    "a timestamp that is no time": _edit_step(1, "timestamp", "yesterday <script>"),
    "negative tokens": _edit_step(1, "metrics", {"prompt_tokens": -5}),
    "tokens as text": _edit_step(1, "metrics", {"prompt_tokens": "750"}),
    "tool calls that are no list": _edit_step(1, "tool_calls", {"id": 1}),
    "a result answering a call of another step": _edit_result,
    "a newer ATIF": lambda doc: doc.update(schema_version="ATIF-v2.0"),
    "a continuation that is not there": lambda doc: doc.update(
        continued_trajectory_ref="trajectory.cont-1.json"
    ),
    "a continuation outside the folder": lambda doc: doc.update(
        continued_trajectory_ref="../../result.json"
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_trajectory_leaves_its_trial_without_a_transcript(
    tmp_path: Path, damage: str
) -> None:
    job, path = _job_copy(tmp_path)
    doc = _atif(path.parent.parent)
    DAMAGE[damage](doc)
    path.write_text(json.dumps(doc))
    run, said = _warned(job)
    assert len(said) == 1, said
    assert str(path) in said[0] and "hello-world__" in said[0] and "without a transcript" in said[0]
    assert set(run.steps()["case_id"]) == {"fix-bug"}  # the other trial keeps its own
    sound = _import(AGENT_JOB)
    assert run.cases["outcome"].tolist() == sound.cases["outcome"].tolist()
    assert run.scores["value"].equals(sound.scores["value"])


@pytest.mark.parametrize("text", ['{"steps": [', "[1, 2]", "\udcff", ""])
def test_a_trajectory_that_is_not_json_is_said_once(tmp_path: Path, text: str) -> None:
    job, path = _job_copy(tmp_path)
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    run, said = _warned(job)
    assert len(said) == 1 and str(path) in said[0]
    assert set(run.steps()["case_id"]) == {"fix-bug"}


def test_a_continued_trajectory_is_read_whole(tmp_path: Path) -> None:
    """terminus-2's split after a summarization: trajectory.json continues in
    trajectory.cont-1.json, which repeats the history as copied context."""
    job, path = _job_copy(tmp_path)
    doc = _atif(path.parent.parent)
    first, rest = doc["steps"][:2], doc["steps"][2:]
    head = {**doc, "steps": first, "continued_trajectory_ref": "trajectory.cont-1.json"}
    copied = [{**s, "is_copied_context": True} for s in copy.deepcopy(first)]
    tail_steps = [{**s, "step_id": i + 1} for i, s in enumerate(copied + rest)]
    path.write_text(json.dumps(head))
    (path.parent / "trajectory.cont-1.json").write_text(json.dumps({**doc, "steps": tail_steps}))
    run = _import(job)
    assert run.steps().equals(_import(AGENT_JOB).steps())


def test_a_continuation_that_goes_round_is_said(tmp_path: Path) -> None:
    job, path = _job_copy(tmp_path)
    doc = _atif(path.parent.parent)
    path.write_text(json.dumps({**doc, "continued_trajectory_ref": "trajectory.json"}))
    _, said = _warned(job)
    assert len(said) == 1 and "go round" in said[0]


def test_a_multi_step_trials_trajectories_are_read_in_step_order(tmp_path: Path) -> None:
    job, path = _job_copy(tmp_path)
    trial = path.parent.parent
    doc = _atif(trial)
    for name, steps in (("one", doc["steps"][:2]), ("two", doc["steps"][2:])):
        step_dir = trial / "steps" / name / "agent"
        step_dir.mkdir(parents=True)
        renumbered = [{**s, "step_id": i + 1} for i, s in enumerate(steps)]
        (step_dir / "trajectory.json").write_text(json.dumps({**doc, "steps": renumbered}))
    path.unlink()
    result = json.loads((trial / "result.json").read_text())
    # Harbor's StepResult: the step's name; a name that is a path is never followed
    result["step_results"] = [{"step_name": "../x"}, {"step_name": "one"}, {"step_name": "two"}]
    (trial / "result.json").write_text(json.dumps(result))
    run = _import(job)
    assert run.steps().equals(_import(AGENT_JOB).steps())


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_KEYS = ["step_id", "source", "message", "timestamp", "model_name", "tool_calls", "observation",
         "metrics", "is_copied_context", "reasoning_content"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(step=st.integers(0, 3), key=st.sampled_from(_KEYS), value=_json)
def test_any_value_in_a_step_imports_or_is_said(
    tmp_path_factory: pytest.TempPathFactory, step: int, key: str, value: Any
) -> None:
    """Fault injection: one field of one step of the real file set to any JSON value never
    stops the import; the trial has a transcript, or none and one warning naming the file."""
    job, path = _job_copy(tmp_path_factory.mktemp("h"))
    doc = _atif(path.parent.parent)
    doc["steps"][step][key] = value
    path.write_text(json.dumps(doc))
    run, said = _warned(job)
    has = "hello-world" in set(run.steps()["case_id"])
    assert has != bool(said) and len(said) <= 1
    if said:
        assert str(path) in said[0]
