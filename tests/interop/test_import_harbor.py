"""Importing Harbor jobs and trials (docs/interop.md "Harbor", format "harbor").

The fixture job (fixtures/harbor/job) was written by Harbor 0.26.0 itself: its oracle agent on
the four tasks of fixtures/harbor/harness/tasks, two attempts each (fixtures/harbor/README.md,
regenerate.sh). Its trial names are Harbor's random ones: the tests find trials by task.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _interop_helpers import (
    FormatError,
    contract,
    detected,
    literal_bytes,
    quiet_import,
    same_record,
    with_warning,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _cli_helpers import assert_user_error, cli
from evalbook import import_results

FIXTURES = Path(__file__).parent / "fixtures" / "harbor"
JOB = FIXTURES / "job"


def _trials(task: str, job: Path = JOB) -> list[Path]:
    """The job's trial folders of a task, in the order Harbor started them."""
    found = [p for p in job.iterdir() if p.is_dir() and p.name.startswith(f"{task}__")]
    return sorted(found, key=lambda p: json.loads((p / "result.json").read_text())["started_at"])


def _result(trial: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((trial / "result.json").read_text())
    return doc


TRIAL = _trials("fix-bug")[0]


def _import(path: Path, **kw: Any) -> eb.Run:
    return quiet_import(path, "harbor", **kw)


def _copy_job(tmp: Path) -> Path:
    return Path(shutil.copytree(JOB, tmp / "job"))


def test_the_fixture_is_harbors_own_job_of_eight_trials() -> None:
    lock = json.loads((JOB / "lock.json").read_text())
    assert lock["harbor"]["version"] == "0.26.0"
    job = json.loads((JOB / "result.json").read_text())
    folders = [p for p in JOB.iterdir() if p.is_dir()]
    assert job["n_total_trials"] == len(folders) == 8
    for folder in folders:
        assert _result(folder)["agent_info"]["name"] == "oracle"
        assert _result(folder)["config"]["job_id"] == job["id"]


def test_a_job_folder_imports_one_sample_per_trial() -> None:
    run = _import(JOB)
    assert run.name == "job"
    cases = run.cases
    tasks = ["fix-bug", "hello-world", "no-reward", "slow-fix"]
    assert cases.case_id.tolist() == [t for t in tasks for _ in (1, 2)]
    assert cases.epoch.tolist() == [1, 2] * 4
    assert cases.outcome.tolist() == ["passed"] * 4 + ["errored"] * 2 + ["timed_out"] * 2
    timed_out = cases.iloc[6]
    assert timed_out.error_type == "AgentTimeoutError"
    assert timed_out.error_message == "Agent execution timed out after 2.0 seconds"
    assert cases.iloc[4].error_type == "RewardFileNotFoundError"
    assert "No reward file found at" in cases.iloc[4].error_message
    # a task's epochs are its trials in the order they started, each with its own times
    for i, task in enumerate(tasks):
        for epoch, trial in enumerate(_trials(task)):
            doc, row = _result(trial), cases.iloc[2 * i + epoch]
            started = pd.Timestamp(doc["started_at"])
            assert row.started_at == started, (task, epoch)
            want = (pd.Timestamp(doc["finished_at"]) - started).total_seconds()
            assert row.duration_s == pytest.approx(want, abs=1e-6)
    # the oracle agent runs no model: its agent_result's tokens and cost are null, never 0
    assert _result(TRIAL)["agent_result"]["n_input_tokens"] is None
    assert cases.input_tokens.isna().all() and cases.cost.isna().all()


def test_an_agents_tokens_and_cost_are_its_usage(tmp_path: Path) -> None:
    job = _copy_job(tmp_path)
    first = _trials("fix-bug", job)[0] / "result.json"
    doc = json.loads(first.read_text())
    # what an agent that calls a model records (Harbor's AgentContext)
    doc["agent_result"].update(n_input_tokens=15000, n_output_tokens=1800, cost_usd=0.061)
    first.write_text(json.dumps(doc, indent=4))
    cases = _import(job).cases
    assert (cases.iloc[0].input_tokens, cases.iloc[0].output_tokens) == (15000, 1800)
    assert cases.iloc[0].cost == 0.061 and math.isnan(cases.iloc[1].cost)


def test_named_rewards_become_scores_and_out_of_range_rewards_are_invalid() -> None:
    run = _import(JOB)
    summary = run.summary().set_index("score")
    assert summary.index.tolist() == ["tests_pass", "lint", "speed_bonus", "reward"]
    assert summary.primary.tolist() == [False, False, False, True]
    scores = run.scores
    first = scores[(scores.case_id == "fix-bug") & (scores.epoch == 1)].set_index("score")
    assert first.loc["tests_pass", "value"] == 1.0 and first.loc["lint", "value"] == 0.5
    # Harbor allows any finite reward; evalbook's contract does not clamp 1.25 to 1
    assert first.loc["speed_bonus", "reason"] == "invalid_score"
    assert "1.25" in first.loc["speed_bonus", "message"]
    assert first.loc["reward", "reason"] == "not_rewarded"
    # hello-world's 1.0 twice; slow-fix's reward of 1.0 came from a timed-out trial
    assert _result(_trials("slow-fix")[0])["verifier_result"]["rewards"] == {"reward": 1.0}
    assert summary.loc["reward", "mean"] == 1.0
    assert summary.loc["reward", "errors"] == 4  # the four trials that raised


def test_a_trial_folder_and_a_result_json_are_one_trial() -> None:
    for path in (TRIAL, TRIAL / "result.json"):
        run = _import(path)
        assert run.name == "fix-bug" and run.cases.case_id.tolist() == ["fix-bug"]
        assert run.scores.score.tolist() == ["tests_pass", "lint", "speed_bonus"]
    source = _import(JOB).options["imported"]
    assert source["job_id"] == json.loads((JOB / "result.json").read_text())["id"]
    assert (source["agent"], source["agent_version"], source["n_total_trials"]) == (
        "oracle",
        "1.0.0",
        8,
    )
    assert "model" not in source  # the oracle agent has no model_info


def test_garbage_and_unfinished_trials_are_skipped_and_counted(tmp_path: Path) -> None:
    job = _copy_job(tmp_path)
    hello = _trials("hello-world", job)[0]
    (hello / "result.json").write_text('{"task_name": "hello-world",\n  ')
    (job / "unfinished__a0a0a0a").mkdir()
    with pytest.warns(RuntimeWarning, match="skipped 2 part") as caught:
        run = import_results(job, format="harbor")
    text = str(caught[0].message)
    assert f"{hello.name}/result.json: line 2, column 3: invalid JSON" in text
    assert "unfinished__a0a0a0a: no result.json" in text
    assert run.options["imported"]["skipped"] == 2
    # the skipped trial's slot stays without an outcome: the run reads as incomplete
    assert run.cases.outcome.isna().sum() == 1 and len(run.cases) == 8


def test_rewards_that_disagree_with_the_reward_file_are_caught(tmp_path: Path) -> None:
    job = _copy_job(tmp_path)
    fix = _trials("fix-bug", job)[0]
    (fix / "verifier" / "reward.json").write_text('{"tests_pass": 0}')
    run, skipped = with_warning(job, "harbor")
    assert run.cases.outcome.notna().sum() == 7 and "skipped 1 part(s)" in skipped
    assert f"{fix.name}/result.json: its rewards" in skipped
    assert "differ from verifier/reward.json" in skipped
    # an exception_info removed while exception.txt stays is caught the same way
    slow = _trials("slow-fix", job)[0]
    doc = _result(slow)
    doc["exception_info"] = None
    (slow / "result.json").write_text(json.dumps(doc, indent=4))
    run, skipped = with_warning(job, "harbor")
    assert run.cases.outcome.notna().sum() == 6 and "skipped 2 part(s)" in skipped
    assert f"{slow.name}/result.json: exception.txt is there" in skipped


def test_step_exceptions_and_step_usage_count_for_multi_step_trials(tmp_path: Path) -> None:
    doc = _result(_trials("hello-world")[0])
    usage = {**doc["agent_result"], "n_input_tokens": 1200, "n_output_tokens": 300}
    step = {"step_name": "build", "agent_result": usage, "exception_info": None}
    failing = {**step, "step_name": "test", "exception_info": {"exception_type": "OSError"}}
    doc.update(agent_result=None, step_results=[step, failing])
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc, indent=4))
    run = _import(path)
    row = run.cases.iloc[0]
    # the two steps' tokens added up
    assert (row.outcome, row.error_type, row.input_tokens) == ("errored", "OSError", 2400)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ('{"evalId": "x", "results": {}}', "neither a job's nor a trial's result.json"),
        (None, "no result.json in it or in its folders"),
    ],
)
def test_what_is_not_harbor_gets_one_clear_error(
    tmp_path: Path, content: str | None, why: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    if content is not None:
        (folder / "result.json").write_text(content)
    with pytest.raises(FormatError, match="not Harbor results") as info:
        import_results(folder, format="harbor")
    assert why in str(info.value) and "a Harbor job folder" in str(info.value)


def test_a_damaged_result_json_named_directly_says_where(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text('{\n    "task_name": "x",\n    oops\n}')
    with pytest.raises(FormatError, match=r"line 3, column 5: invalid JSON"):
        import_results(path, format="harbor")
    path.write_text('{"task_name": "x"}')
    with pytest.raises(FormatError, match="`trial_name` is None"):
        import_results(path, format="harbor")


def test_detected_from_its_files_and_not_from_near_misses(tmp_path: Path) -> None:
    for path in (JOB, TRIAL, TRIAL / "result.json"):
        assert detected(path) == "harbor", path
    (tmp_path / "empty").mkdir()
    (tmp_path / "other.json").write_text('{"results": {"version": 3}}')
    (tmp_path / "result.json").mkdir()
    for path in [
        *(tmp_path / name for name in ("empty", "other.json", "result.json")),
        TRIAL / "verifier" / "reward.json",
    ]:
        with pytest.raises(FormatError, match="not a results file evalbook can import"):
            import_results(path)


def _read(job: Path) -> tuple[str, pd.DataFrame | None]:
    try:
        run = quiet_import(job, "harbor")
    except FormatError:
        return "refused", None
    return ("skipped" if run.options["imported"]["skipped"] else "read"), run.scores


def _scored(scores: pd.DataFrame) -> list[tuple[str, float]]:
    kept = scores[scores.status == "scored"]
    return sorted(zip(kept.score.astype(str), kept.value, strict=True))


def test_truncated_and_flipped_trials_never_read_as_a_different_result(
    tmp_path: Path, record_property: Any
) -> None:
    job = _copy_job(tmp_path)
    _, base = _read(job)
    assert base is not None
    columns = ["case_id", "epoch", "score", "status", "value", "reason"]
    # every file evalbook might read, but Harbor's empty logs (nothing to cut or flip)
    files = sorted(
        p
        for p in job.rglob("*")
        if p.is_file() and p.suffix in (".json", ".txt") and p.stat().st_size
    )
    rng = random.Random(21)
    counts = {"truncated": {"tried": 0, "different": 0}, "flipped": {"tried": 0}}
    flipped: dict[str, int] = {}
    for n in range(240):
        path = rng.choice(files)
        original = path.read_bytes()
        if n % 2 == 0:
            counts["truncated"]["tried"] += 1
            path.write_bytes(original[: rng.randrange(len(original))])
        else:
            at = rng.randrange(len(original))
            flip = bytes([original[at] ^ (1 << rng.randrange(8))])
            path.write_bytes(original[:at] + flip + original[at + 1 :])
        kind, scores = _read(job)
        path.write_bytes(original)
        same = scores is not None and scores[columns].equals(base[columns])
        if n % 2 == 0:
            if kind == "read" and not same:
                counts["truncated"]["different"] += 1
            continue
        counts["flipped"]["tried"] += 1
        label = "same" if kind == "read" and same else kind
        if label == "read":
            label = "different"
            # only a flip inside a value's own bytes (a task name, a time, an exception's
            # name) can be a different valid trial; no reward value changes unseen
            assert at in literal_bytes(original), (path.name, original[at - 30 : at + 30])
            assert scores is not None and _scored(scores) == _scored(base), path
        flipped[label] = flipped.get(label, 0) + 1
    figure = (
        f"truncations: {counts['truncated']['tried']} tried, "
        f"{counts['truncated']['different']} read as a different result; byte flips: "
        f"{counts['flipped']['tried']} tried, 0 changed a reward, "
        f"{flipped.get('different', 0)} changed a text inside a value ({flipped})"
    )
    print(figure)
    record_property("harbor_faults", figure)
    assert counts["truncated"]["different"] == 0


rewards = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-2, 3) | st.booleans()


@settings(max_examples=60, deadline=None)
@given(st.lists(rewards, min_size=1, max_size=4))
def test_rewards_go_through_the_score_contract(values: list[object]) -> None:
    doc = json.loads((TRIAL / "result.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        for i, value in enumerate(values):
            trial = dict(doc, trial_name=f"t__{i}", task_name=f"task{i}")
            trial["verifier_result"] = {"rewards": {"r": value}}
            folder = Path(tmp) / f"t__{i}"
            folder.mkdir()
            (folder / "result.json").write_text(json.dumps(trial, indent=4))
        scores = _import(Path(tmp)).scores.set_index("case_id")
    for i, (value, want) in enumerate(zip(values, contract(values), strict=True)):
        assert same_record(scores.loc[f"task{i}"], want), (value, want)


def test_detected_and_stored_from_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "runs"
    done = cli("import", str(JOB), "--store", str(store), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    loaded = eb.load_run(eb.runs(store).path[0])
    assert loaded.options["imported"]["format"] == "harbor"  # detected
    assert loaded.cases.outcome.tolist() == _import(JOB).cases.outcome.tolist()
    garbage = tmp_path / "result.json"
    garbage.write_text('{"task_name": "x", "trial_name": "x__1", "task_checksum": "s"')
    done = cli("import", str(garbage), "--format", "harbor", cwd=tmp_path)
    assert_user_error(done, "line 1")
