"""Import Harbor results: a job folder of trials, one trial folder, or one trial's result.json.

Harbor (harbor 0.26) writes a job as a folder: the job's `result.json` (a `JobResult` without
its trials, `Job._write_job_result(exclude_trial_results=True)` in harbor/job.py) and one folder
per trial, whose `result.json` is `TrialResult.model_dump_json(indent=4)` (`Trial._finalize`,
harbor/trial/trial.py; the model is in harbor/models/trial/result.py). A trial's rewards are
`verifier_result.rewards`, parsed by `Verifier.verify` (harbor/verifier/verifier.py) from the
test script's `verifier/reward.json` (named rewards) or `verifier/reward.txt` (one number, named
`reward`); both files stay in the trial folder, and where one does, it must agree with
result.json. A trial's ATIF trajectory (agent/trajectory.json), where its agent wrote one, is its
transcript (`_harbor_atif.py`). The mapping is in docs/interop.md ("Harbor").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from .._model._contract import Unscored
from .._model._tally import InvalidUsage, Tally, amount
from .._model._transcript import Transcript
from .._util._warn import warn
from ._harbor_atif import BadTrajectory, trajectory_files, transcript_of
from ._imported import FormatError, Imported, ImportedSample, ImportedScore, exception_origin
from ._reading import FileError, Refused, decode, head, read_bytes, read_json

__all__ = ["EXPECTED", "NAME", "harbor_origin", "read", "sniff"]

NAME = "harbor"
EXPECTED = (
    "a Harbor job folder (its result.json and one folder per trial), a trial folder, or a "
    "trial's result.json (a TrialResult: task_name, trial_name, verifier_result.rewards, ...)"
)
RESULT = "result.json"
# the name Harbor gives a reward read from reward.txt (Verifier._parse_reward_text)
REWARD = "reward"
# how many folders of a job sniff opens before it decides
_SNIFF_TRIALS = 20


def _is_trial(path: Path) -> bool:
    first = head(path)
    return b'"trial_name"' in first and b'"task_checksum"' in first


def _is_job(path: Path) -> bool:
    first = head(path)
    return b'"n_total_trials"' in first and b'"stats"' in first


def sniff(path: Path) -> bool:
    """A trial's result.json, or a folder holding one (a trial) or trial folders (a job)."""
    try:
        if path.is_file():
            return path.suffix.lower() == ".json" and _is_trial(path)
        if not path.is_dir():
            return False
        result = path / RESULT
        if result.is_file() and (_is_trial(result) or _is_job(result)):
            return True
        for n, child in enumerate(path.iterdir()):
            if n >= _SNIFF_TRIALS:
                break
            if child.is_dir() and (child / RESULT).is_file() and _is_trial(child / RESULT):
                return True
    except OSError:
        return False
    return False


def _not_harbor(path: Path, why: str) -> FormatError:
    return FormatError(f"{path}: not Harbor results ({why}); expected {EXPECTED}")


def _why(e: Exception) -> str:
    """Why a file was not read, without its path (the caller says where)."""
    return e.why if isinstance(e, FileError) else str(e)


def _trials(path: Path) -> tuple[list[tuple[Path, dict[str, Any]]], dict[str, Any], list[str]]:
    """(trial folder or file, its TrialResult), the job's result (or {}), what was skipped."""
    if path.is_file():
        doc = _read_trial_file(path, path.name)
        return [(path, doc)], {}, []
    if not path.is_dir():
        raise _not_harbor(path, "neither a file nor a folder")
    result = path / RESULT
    if result.is_file() and _is_trial(result):
        return [(path, _read_trial_file(result, f"{path.name}/{RESULT}"))], {}, []
    job: dict[str, Any] = {}
    skipped: list[str] = []
    if result.is_file():
        try:
            found = read_json(result)
        except (OSError, ValueError) as e:
            skipped.append(f"{RESULT}: {_why(e)}")
        else:
            if isinstance(found, dict) and "n_total_trials" in found:
                job = found
            else:
                raise _not_harbor(result, "neither a job's nor a trial's result.json")
    trials: list[tuple[Path, dict[str, Any]]] = []
    for child in sorted(path.iterdir()):
        if not child.is_dir() or child.is_symlink():
            continue
        where = f"{child.name}/{RESULT}"
        if not (child / RESULT).is_file():
            # Harbor itself deletes such a folder on resume (Job._maybe_init_existing_job)
            skipped.append(f"{child.name}: no {RESULT} (a trial that did not finish)")
            continue
        try:
            trials.append((child, _trial(read_json(child / RESULT), child)))
        except (OSError, ValueError) as e:
            skipped.append(f"{where}: {_why(e)}")
    if not trials and not job and not skipped:
        raise _not_harbor(path, f"no {RESULT} in it or in its folders")
    return trials, job, skipped


def _read_trial_file(path: Path, where: str) -> dict[str, Any]:
    try:
        return _trial(read_json(path), path.parent if path.name == RESULT else None)
    except Refused:
        raise  # not read at all (over the cap, not a regular file): the core's one message
    except (OSError, ValueError) as e:
        raise _not_harbor(path, f"{where}: {_why(e)}") from None


def _trial(doc: object, folder: Path | None) -> dict[str, Any]:
    """A TrialResult checked for what evalbook reads; ValueError saying what is wrong."""
    if not isinstance(doc, dict):
        raise ValueError(f"not a TrialResult: a JSON {type(doc).__name__}")
    for key in ("task_name", "trial_name"):
        if not isinstance(doc.get(key), str) or not doc[key]:
            raise ValueError(f"not a TrialResult: `{key}` is {doc.get(key)!r}")
    verifier = doc.get("verifier_result")
    if verifier is not None and not (
        isinstance(verifier, dict) and isinstance(verifier.get("rewards", {}), dict | None)
    ):
        raise ValueError(f"`verifier_result` is {verifier!r}, not {{'rewards': {{...}}}}")
    for info in _exceptions(doc):
        if not isinstance(info, dict) or not isinstance(info.get("exception_type"), str):
            raise ValueError(f"an `exception_info` is {info!r}, without an exception_type")
    if folder is not None:
        _check_reward_file(doc, folder)
        # Trial._record_exception writes exception.txt beside the exception_info it records
        if (folder / "exception.txt").is_file() and not _exceptions(doc):
            raise ValueError("exception.txt is there but no exception_info: the trial is damaged")
    return doc


def _exceptions(doc: Mapping[str, Any]) -> list[Any]:
    """The trial's exception first, then each step's (TrialResult.recorded_exceptions)."""
    found = [] if doc.get("exception_info") is None else [doc["exception_info"]]
    steps = doc.get("step_results")
    for step in steps if isinstance(steps, list) else []:
        if isinstance(step, dict) and step.get("exception_info") is not None:
            found.append(step["exception_info"])
    return found


def _rewards(doc: Mapping[str, Any]) -> dict[str, object]:
    verifier = doc.get("verifier_result")
    rewards = verifier.get("rewards") if isinstance(verifier, dict) else None
    return dict(rewards) if isinstance(rewards, dict) else {}


def _check_reward_file(doc: Mapping[str, Any], folder: Path) -> None:
    """The verifier's reward file, where kept, must hold the rewards result.json has."""
    verifier = folder / "verifier"
    as_json, as_text = verifier / "reward.json", verifier / "reward.txt"
    # Verifier.verify reads reward.json when there is one, else reward.txt
    if as_json.is_file():
        name = "verifier/reward.json"
        try:
            file_rewards = read_json(as_json)
        except FileError as e:
            raise ValueError(f"{name}: {e.why}") from None
    elif as_text.is_file():
        name = "verifier/reward.txt"
        try:
            file_rewards = {REWARD: float(decode(as_text, read_bytes(as_text)))}
        except Refused as e:
            raise ValueError(f"{name}: {e.why}") from None
        except ValueError:  # not UTF-8 (NotJson), or not a number
            raise ValueError(f"{name} does not hold one number") from None
    else:
        return
    rewards = _rewards(doc)
    if not rewards and _exceptions(doc):
        return  # an exception ended the trial before its rewards were recorded
    if not isinstance(file_rewards, dict) or not _same_rewards(rewards, file_rewards):
        raise ValueError(
            f"its rewards {rewards!r} differ from {name}'s {file_rewards!r}: the trial is damaged"
        )


def _same_rewards(a: Mapping[str, object], b: Mapping[str, object]) -> bool:
    # pydantic keeps a JSON 1 an int and reward.txt's float(text) a float: compare as numbers
    return (
        a.keys() == b.keys()
        and all(type(a[k]) is type(b[k]) or {type(a[k]), type(b[k])} == {int, float} for k in a)
        and all(a[k] == b[k] for k in a)
    )


def _time(value: object) -> float:
    """A pydantic datetime ("2026-11-30T09:00:01.25Z") as Unix seconds; NaN when absent."""
    if not isinstance(value, str):
        return math.nan
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return math.nan


def _usage(doc: Mapping[str, Any]) -> dict[str, Tally] | None:
    """The agent's tokens and cost (TrialResult.compute_token_cost_totals' sources)."""
    found: list[object] = [doc.get("agent_result")]
    if found[0] is None and isinstance(doc.get("step_results"), list):
        found = [_object(step).get("agent_result") for step in doc["step_results"]]
    contexts = [c for c in found if isinstance(c, dict)]
    if not contexts:
        return None
    tally = Tally()
    for context in contexts:
        try:
            tin, tout, cost = (
                amount(key, context.get(key))
                for key in ("n_input_tokens", "n_output_tokens", "cost_usd")
            )
        except InvalidUsage as e:
            tally.calls += 1
            tally.invalid = tally.invalid or str(e)
            continue
        # one agent run, whose model calls Harbor does not count
        tally.add(_known(tin), _known(tout), _known(cost))
    return {"task": tally}


def _known(value: float | None) -> float:
    return math.nan if value is None else value


def _outcome(doc: Mapping[str, Any]) -> tuple[str, str | None, str | None]:
    errors = _exceptions(doc)
    if not errors:
        return "passed", None, None
    first = errors[0]
    kind = str(first["exception_type"])
    message = first.get("exception_message")
    # Harbor's timeouts (AgentTimeoutError, VerifierTimeoutError, AgentSetupTimeoutError,
    # EnvironmentStartTimeoutError: harbor/trial/errors.py) all subclass asyncio.TimeoutError
    outcome = "timed_out" if kind.endswith("TimeoutError") else "errored"
    return outcome, kind, message if isinstance(message, str) else repr(message)


# Harbor's own error kinds (harbor/trial/errors.py, harbor/verifier) by origin: its environment
# (a container or sandbox that did not start, an agent's setup or time budget) is the
# environment's; its verifier (the reward file, the tests' own time budget) is the grader's; the
# rest as `exception_origin` says (a model API's errors are the provider's, others the task's).
_ENVIRONMENT_KINDS = frozenset(
    {"AgentTimeoutError", "AgentSetupTimeoutError", "EnvironmentStartTimeoutError"}
)
_GRADER_KINDS = frozenset(
    {
        "VerifierTimeoutError",
        "RewardFileNotFoundError",
        "RewardFileEmptyError",
        "VerifierOutputParseError",
    }
)


def harbor_origin(kind: str | None) -> str | None:
    """The origin of a trial's first exception, by Harbor's exception type (None: none).

    Example:
        >>> harbor_origin("EnvironmentStartTimeoutError"), harbor_origin("ValueError")
        ('environment', 'task')
    """
    if kind is None:
        return None
    if kind in _ENVIRONMENT_KINDS or kind.startswith("Environment"):
        return "environment"
    if kind in _GRADER_KINDS or kind.startswith("Verifier"):
        return "grader"
    return exception_origin(kind)


def read(path: Path) -> Imported:
    """Read Harbor trials into samples: one per trial, a task's trials its epochs.

    Example:
        >>> import json, pathlib, tempfile
        >>> trial = {"task_name": "hello", "trial_name": "hello__abc1234",
        ...          "task_checksum": "sha256:0", "verifier_result": {"rewards": {"reward": 1.0}},
        ...          "started_at": "2026-11-30T09:00:00Z", "finished_at": "2026-11-30T09:01:00Z"}
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "result.json"
        >>> _ = p.write_text(json.dumps(trial, indent=4))
        >>> imported = read(p)
        >>> imported.samples[0].case_id, imported.samples[0].scores, imported.samples[0].duration_s
        ('hello', {'reward': 1.0}, 60.0)
    """
    trials, job, skipped = _trials(path)
    # a task's trials are its epochs, in the order they started (then by trial name)
    trials.sort(key=lambda t: (t[1]["task_name"], _order(t[1])))
    names: dict[str, None] = {}
    per_task: dict[str, set[str]] = {}
    for _, doc in trials:
        rewards = _rewards(doc)
        names.update(dict.fromkeys(rewards))
        per_task.setdefault(doc["task_name"], set()).update(rewards)
    epochs: dict[str, int] = {}
    samples = []
    for where, doc in trials:
        task = doc["task_name"]
        epochs[task] = epochs.get(task, 0) + 1
        sample = _sample(doc, epochs[task], per_task[task], list(names))
        sample.transcript = _transcript(where if where.is_dir() else where.parent, doc)
        samples.append(sample)
    primary = REWARD if REWARD in names else (next(iter(names)) if len(names) == 1 else None)
    scores = [ImportedScore(n, primary=n == primary) for n in names]
    first = trials[0][1] if trials else {}
    agent = _object(first.get("agent_info"))
    model = _object(agent.get("model_info"))
    source = {
        "job_id": job.get("id"),
        "created": job.get("started_at"),
        "n_total_trials": job.get("n_total_trials"),
        "n_retries": _object(job.get("stats")).get("n_retries"),
        "agent": agent.get("name"),
        "agent_version": agent.get("version"),
        "model": model.get("name"),
        "dataset": first.get("source"),
    }
    kept = {k: v for k, v in source.items() if isinstance(v, str | int) and v is not True}
    one_trial = path.is_file() or ((path / RESULT).is_file() and _is_trial(path / RESULT))
    name = str(first.get("task_name", path.name)) if one_trial else path.name
    return Imported(NAME, path, name, scores, samples, skipped, kept)


def _transcript(folder: Path, doc: Mapping[str, Any]) -> Transcript | None:
    """The trial's ATIF trajectory as its transcript (None: the agent wrote none); one that
    cannot be read leaves the trial without one, with a warning naming the file."""
    try:
        return transcript_of(trajectory_files(folder, doc))
    except BadTrajectory as e:
        warn(
            f"{e.where}: Harbor trial {doc['trial_name']!r} (task {doc['task_name']!r}): its "
            f"trajectory is not one evalbook can read ({e.why}); it is imported without a "
            "transcript",
            RuntimeWarning,
        )
        return None


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _order(doc: Mapping[str, Any]) -> tuple[float, str]:
    started = _time(doc.get("started_at"))
    # a trial without a start time goes after those with one
    return (math.inf if math.isnan(started) else started, doc["trial_name"])


def _sample(
    doc: Mapping[str, Any], epoch: int, task_rewards: set[str], names: list[str]
) -> ImportedSample:
    outcome, kind, message = _outcome(doc)
    started, finished = _time(doc.get("started_at")), _time(doc.get("finished_at"))
    rewards = _rewards(doc)
    values: dict[str, object] = {}
    for name in names:
        if name in rewards:
            values[name] = rewards[name]
        elif name not in task_rewards:
            # no trial of this task reports that reward: its verifier does not measure it
            values[name] = Unscored("not_rewarded")
    return ImportedSample(
        case_id=doc["task_name"],
        epoch=epoch,
        input={"dataset": doc.get("source")},
        output=None,
        outcome=outcome,
        error_type=kind,
        error_message=message,
        scores=values,
        started_at=started,
        duration_s=finished - started,
        usage=_usage(doc),
        origin=harbor_origin(kind),
    )
