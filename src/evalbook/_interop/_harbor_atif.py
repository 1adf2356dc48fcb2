"""A Harbor trial's ATIF trajectory as its transcript.

Harbor's agents write what they did as an ATIF trajectory (Agent Trajectory Interchange Format,
pydantic models in harbor/models/trajectories/, `Trajectory.to_json_dict()`): the trial's
`agent/trajectory.json` (`logs_dir / "trajectory.json"`, e.g. Terminus2._dump_trajectory), or
for a multi-step trial each step's `steps/<step_name>/agent/trajectory.json`. A trajectory that
is continued in another file (`continued_trajectory_ref`, terminus-2's
`trajectory.cont-1.json` after a summarization) is followed, leaving out the steps the
continuation copied (`is_copied_context`). What each field becomes is in docs/interop.md
("Harbor", "Transcripts").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from .._errors import ConfigurationError
from .._model._transcript import Transcript
from ._reading import FileError, read_json

__all__ = ["TRAJECTORY", "BadTrajectory", "trajectory_files", "transcript_of"]

TRAJECTORY = "trajectory.json"
# the ATIF versions harbor 0.26 writes and reads (Trajectory.schema_version)
_VERSION = "ATIF-v1."
_SOURCES = {"system": "system", "user": "user", "agent": "assistant"}
# how many continuation files one trajectory may chain (terminus-2 adds one per summarization)
_MAX_PARTS = 1000


class BadTrajectory(ValueError):
    """A trajectory file evalbook cannot take as a transcript: `where` names the file."""

    def __init__(self, where: Path, why: str) -> None:
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


def trajectory_files(folder: Path, doc: Mapping[str, Any]) -> list[Path]:
    """The trial's trajectory files that are there, in order (none for an agent that writes
    none, such as Harbor's oracle)."""
    single = folder / "agent" / TRAJECTORY
    if single.is_file():
        return [single]
    steps = doc.get("step_results")
    found = []
    for step in steps if isinstance(steps, list) else []:
        name = step.get("step_name") if isinstance(step, dict) else None
        # a step name is one folder (Harbor's validate_step_name): never a path out of the trial
        if isinstance(name, str) and name and Path(name).name == name and name not in {".", ".."}:
            path = folder / "steps" / name / "agent" / TRAJECTORY
            if path.is_file():
                found.append(path)
    return found


def transcript_of(files: Sequence[Path]) -> Transcript | None:
    """The steps of the trajectory files, in order, as one transcript (None: no file).

    Raises:
        BadTrajectory: a file is not an ATIF trajectory, or a step cannot be read; its message
            names the file and the step.
    """
    if not files:
        return None
    messages: list[dict[str, Any]] = []
    for first in files:
        for path, doc in _parts(first):
            messages += _messages(path, doc)
    try:
        return Transcript(messages)
    except ConfigurationError as exc:  # a result answering no call, an amount < 0, ...
        why = str(exc).removeprefix("eb.Transcript: ")
        raise BadTrajectory(files[0], f"its steps are not a transcript ({why})") from None


def _parts(first: Path) -> list[tuple[Path, Mapping[str, Any]]]:
    """The file and those it is continued in (`continued_trajectory_ref`), each read once."""
    parts: list[tuple[Path, Mapping[str, Any]]] = []
    seen: set[Path] = set()
    path: Path | None = first
    while path is not None:
        if path in seen or len(parts) >= _MAX_PARTS:
            raise BadTrajectory(first, f"its continuations go round, back to {path.name}")
        seen.add(path)
        doc = _read(path)
        parts.append((path, doc))
        ref = doc.get("continued_trajectory_ref")
        if ref is None:
            break
        # a continuation is a file beside it (terminus-2's trajectory.cont-N.json); a
        # reference elsewhere (a folder, a URL) is not followed
        if not isinstance(ref, str) or not ref or Path(ref).name != ref or ref in {".", ".."}:
            raise BadTrajectory(path, f"continued_trajectory_ref {ref!r} is not a file beside it")
        path = path.parent / ref
        if not path.is_file():
            raise BadTrajectory(first, f"it continues in {ref}, which is not there")
    return parts


def _read(path: Path) -> Mapping[str, Any]:
    try:
        doc = read_json(path)
    except FileError as e:
        raise BadTrajectory(path, e.why) from None
    except OSError as e:
        raise BadTrajectory(path, f"cannot be read ({e.strerror or e})") from None
    if not isinstance(doc, dict):
        raise BadTrajectory(path, f"not an ATIF trajectory: a JSON {type(doc).__name__}")
    version = doc.get("schema_version", "ATIF-v1.0")
    if not isinstance(version, str) or not version.startswith(_VERSION):
        raise BadTrajectory(
            path, f"schema_version {version!r} is not one evalbook reads (ATIF-v1.x)"
        )
    if not isinstance(doc.get("steps"), list):
        raise BadTrajectory(path, "not an ATIF trajectory: no list of steps")
    return doc


def _messages(path: Path, doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One file's steps as chat messages: an agent step is an assistant message with its tool
    calls, then one tool message per observation result answering a call; a result answering
    none (a batch of commands sharing one output) is a user message, as terminus-2 sends it."""
    agent = doc.get("agent")
    default_model = agent.get("model_name") if isinstance(agent, dict) else None
    out: list[dict[str, Any]] = []
    for k, step in enumerate(doc["steps"]):
        where = f"step {k + 1}"
        if not isinstance(step, dict):
            raise BadTrajectory(path, f"{where} is a JSON {type(step).__name__}, not a step")
        if isinstance(step.get("step_id"), int):
            where = f"step {step['step_id']}"
        if step.get("is_copied_context") is True:
            continue  # already in the trajectory it was copied from
        source = step.get("source")
        role = _SOURCES.get(source) if isinstance(source, str) else None
        if role is None:
            raise BadTrajectory(
                path, f"{where}: source {step.get('source')!r} is not system, user or agent"
            )
        message: dict[str, Any] = {"role": role, "content": _content(path, where, step)}
        when = _started(path, where, step.get("timestamp"))
        if when is not None:
            message["started_at"] = when
        calls: dict[str, str] = {}
        if role == "assistant":
            message["model"] = step.get("model_name") or default_model
            message["tool_calls"] = [
                _call(path, where, c, calls) for c in _list(path, where, step, "tool_calls")
            ]
            metrics = step.get("metrics")
            if metrics is not None and not isinstance(metrics, dict):
                raise BadTrajectory(path, f"{where}: metrics is {metrics!r}, not an object")
            for key, name in (
                ("prompt_tokens", "input_tokens"),
                ("completion_tokens", "output_tokens"),
                ("cost_usd", "cost"),
            ):
                value = (metrics or {}).get(key)
                if value is not None:
                    if isinstance(value, bool) or not isinstance(value, int | float):
                        raise BadTrajectory(path, f"{where}: {key} is {value!r}, not a number")
                    message[name] = value
        out.append(message)
        out += _results(path, where, step, calls)
    return out


def _content(path: Path, where: str, step: Mapping[str, Any]) -> str | list[Any] | None:
    text = step.get("message")
    if text is None or isinstance(text, str):
        return text
    if isinstance(text, list) and all(isinstance(p, dict) for p in text):
        return text  # ContentParts: the text parts' text, an image or audio part named
    raise BadTrajectory(path, f"{where}: message is a JSON {type(text).__name__}, not text")


def _started(path: Path, where: str, value: object) -> float | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(str(value)).timestamp()
    except (ValueError, OverflowError, OSError):
        raise BadTrajectory(path, f"{where}: timestamp {value!r} is not ISO 8601") from None
    return when if math.isfinite(when) and when >= 0 else None


def _list(path: Path, where: str, parent: Mapping[str, Any], key: str) -> list[Any]:
    value = parent.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadTrajectory(path, f"{where}: {key} is a JSON {type(value).__name__}, not a list")
    return value


def _call(path: Path, where: str, call: object, calls: dict[str, str]) -> dict[str, Any]:
    """An ATIF ToolCall (tool_call_id, function_name, arguments) in the OpenAI format."""
    if not isinstance(call, dict):
        raise BadTrajectory(path, f"{where}: a tool call is {call!r}, not an object")
    ident, name, arguments = (call.get(k) for k in ("tool_call_id", "function_name", "arguments"))
    if not isinstance(ident, str) or not isinstance(name, str):
        raise BadTrajectory(
            path, f"{where}: a tool call without a tool_call_id and function_name ({call!r})"
        )
    if arguments is not None and not isinstance(arguments, dict):
        raise BadTrajectory(path, f"{where}: tool call {ident!r}'s arguments are not an object")
    calls[ident] = name
    return {"id": ident, "function": {"name": name, "arguments": arguments or {}}}


def _results(
    path: Path, where: str, step: Mapping[str, Any], calls: Mapping[str, str]
) -> list[dict[str, Any]]:
    """The step's observation results: tool messages answering its calls, user messages for
    the rest; a result with nothing to say (only a subagent's reference) is left out."""
    observation = step.get("observation")
    if observation is None:
        return []
    if not isinstance(observation, dict):
        raise BadTrajectory(path, f"{where}: observation is {observation!r}, not an object")
    out: list[dict[str, Any]] = []
    for result in _list(path, f"{where}: observation", observation, "results"):
        if not isinstance(result, dict):
            raise BadTrajectory(path, f"{where}: an observation result is {result!r}")
        content = _content(
            path, f"{where}: an observation result", {"message": result.get("content")}
        )
        call = result.get("source_call_id")
        if call is not None and not isinstance(call, str):
            raise BadTrajectory(path, f"{where}: source_call_id {call!r} is not text")
        if call is not None:
            # ATIF: a result answers a call of its own step (Trajectory's validator says so)
            out.append(
                {"role": "tool", "tool_call_id": call, "name": calls.get(call), "content": content}
            )
        elif content is not None:
            out.append({"role": "user", "content": content})
    return out
