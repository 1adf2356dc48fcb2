"""Importers map their harness's own error kinds to a failure origin (docs/origin.md):
Harbor's environment start errors and agent timeouts are the environment's, its verifier's
failures the grader's, a model API's errors the provider's, anything else the task's;
Inspect's sample errors are the task's (a model API's the provider's), and so are its limits."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

import evalbook as eb
from evalbook._interop._harbor import harbor_origin

JOB = Path(__file__).parent / "fixtures" / "harbor" / "job"


def _trial(task: str) -> dict[str, Any]:
    (folder,) = sorted(p for p in JOB.iterdir() if p.name.startswith(f"{task}__"))[:1]
    doc: dict[str, Any] = json.loads((folder / "result.json").read_text())
    return doc


def _import(path: Path) -> eb.Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return eb.import_results(path, format="harbor")


def test_the_fixture_jobs_failures_by_origin() -> None:
    run = _import(JOB)
    by_task = run.cases.groupby("case_id")["origin"].agg(lambda s: sorted(set(map(str, s))))
    assert by_task["slow-fix"] == ["environment"]  # AgentTimeoutError, as Harbor recorded it
    assert by_task["no-reward"] == ["grader"]  # RewardFileNotFoundError: the verifier's
    assert by_task["hello-world"] == ["nan"] and by_task["fix-bug"] == ["nan"]
    errors = run.scores[run.scores["status"] == "error"]
    slow = errors[errors["case_id"] == "slow-fix"]
    assert set(slow["origin"]) == {"environment"}  # case_timed_out records: the sample's


def test_a_trial_whose_environment_timed_out_starting_is_the_environments(tmp_path: Path) -> None:
    doc = _trial("hello-world")
    doc["verifier_result"] = None
    doc["exception_info"] = {
        "exception_type": "EnvironmentStartTimeoutError",
        "exception_message": "Environment start timed out after 600.0 seconds",
        "exception_traceback": "",
        "occurred_at": doc["started_at"],
    }
    path = tmp_path / "result.json"
    path.write_text(json.dumps(doc, indent=4))
    run = _import(path)
    row = run.cases.iloc[0]
    assert (row.outcome, row.error_type, row.origin) == (
        "timed_out",
        "EnvironmentStartTimeoutError",
        "environment",
    )
    assert "1 sample failed outside the model (environment 1)" in run.headline.text


@pytest.mark.parametrize(
    ("kind", "origin"),
    [
        ("AgentTimeoutError", "environment"),
        ("AgentSetupTimeoutError", "environment"),
        ("EnvironmentStartTimeoutError", "environment"),
        ("VerifierTimeoutError", "grader"),
        ("RewardFileNotFoundError", "grader"),
        ("RateLimitError", "provider"),
        ("ApiRateLimitError", "provider"),
        ("NonZeroAgentExitCodeError", "task"),
        ("ValueError", "task"),
        (None, None),
    ],
)
def test_harbors_error_kinds(kind: str | None, origin: str | None) -> None:
    assert harbor_origin(kind) == origin


def test_inspect_sample_errors_and_limits_are_the_tasks(made: Path) -> None:
    pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")
    from _inspect_task import cell, run_of

    run = run_of(made)
    for epoch in (1, 2):
        assert cell(run.cases, "boom", epoch).origin == "task"  # the solver raised
        assert cell(run.cases, "long", epoch).origin == "task"  # a message limit
        assert cell(run.cases, "slow", epoch).origin == "task"  # a time limit
        assert str(cell(run.cases, "a", epoch).origin) == "nan"
    assert "outside the model" not in run.headline.text
