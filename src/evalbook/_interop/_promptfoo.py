"""Import promptfoo results: the JSON file `promptfoo eval -o results.json` writes.

promptfoo's `writeOutput` writes `JSON.stringify(createOutputData(evalRecord), null, 2)`:
`{evalId, results, config, shareableUrl, metadata, ...}`, where `results` is the eval's
`toEvaluateSummary()`, version 3: `{version, timestamp, prompts, results, stats}`. Each of
`results.results[]` is one (test, prompt x provider) pair: `testIdx`, `promptIdx` (an index into
`prompts`, which holds one entry per prompt and provider), `vars`, `prompt.{raw, label}`,
`provider.{id, label}`, `response.{output, tokenUsage}`, `success`, `score`, `namedScores`,
`gradingResult.componentResults`, `latencyMs`, `cost`, `error` and `failureReason`
(`ResultFailureReason`: 0 none, 1 an assertion failed, 2 an error). The mapping is in
docs/interop.md ("promptfoo").
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .._model._contract import Score, Unscored
from .._model._tally import InvalidUsage, Tally, amount
from ._imported import FormatError, Imported, ImportedSample, ImportedScore
from ._reading import NotJson, check_version, decode, head, read_bytes

__all__ = ["EXPECTED", "NAME", "read", "sniff"]

NAME = "promptfoo"
EXPECTED = (
    "the JSON file `promptfoo eval -o results.json` writes: an object with `evalId` and "
    '`results: {"version": 3, "results": [...]}`'
)
# promptfoo's ResultFailureReason.ERROR: the provider or an assertion raised
_FAILURE_ERROR = 2
# the score promptfoo's own headline counts (testPassCount): `success`, 1 when true, 0 when false
PASS = "pass"
# promptfoo's weighted mean of a result's assertion scores (it may exceed 1)
SCORE = "score"


def sniff(path: Path) -> bool:
    """A `.json` file whose first bytes hold promptfoo's `evalId` and `results` keys."""
    try:
        if not path.is_file() or path.suffix.lower() != ".json":
            return False
    except OSError:
        return False
    first = head(path)
    return b'"evalId"' in first and b'"results"' in first


def _not_promptfoo(path: Path, why: str) -> FormatError:
    return FormatError(f"{path}: not a promptfoo results file ({why}); expected {EXPECTED}")


def _load(path: Path) -> tuple[dict[str, Any], list[str]]:
    """The file's top-level object and what of it was lost; a FormatError when not promptfoo's.

    A file that ends early (a truncated write, a copy cut short) keeps the results written
    before the damage: promptfoo writes `evalId`, then the summary's `version`, `timestamp`,
    `prompts` and `results`, then `config` (whose `description` names the run) and `metadata`,
    in that order, so they are read one by one up to it; the warning says when the run is named
    by its evalId because the description is past the damage.

    Raises:
        Refused: not a regular file, or larger than the cap (`_reading.MAX_BYTES`).
        FormatError: not promptfoo's (the message says why and what was expected).
    """
    if not path.is_file():
        raise _not_promptfoo(path, "not a file")
    lost: list[str] = []
    try:
        text = decode(path, read_bytes(path))
    except NotJson as e:
        raise _not_promptfoo(path, e.why) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        where = f"line {e.lineno}, column {e.colno}"
        found = _read_to_damage(text)
        if found is None:
            raise _not_promptfoo(path, f"invalid JSON at {where}: {e.msg}") from None
        doc, n, unnamed = found
        lost.append(
            f"{path.name}: {where}: invalid JSON ({e.msg}); the {n} complete results before "
            f"the damage were read, the rest of the file was not{unnamed}"
        )
    except RecursionError:
        raise _not_promptfoo(path, "JSON nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise _not_promptfoo(path, "no `results` object at the top level")
    summary = doc["results"]
    # promptfoo 0.60 and later write version 3
    check_version(path, summary.get("version"), harness="promptfoo results", reads=[3])
    if not isinstance(summary.get("results"), list):
        raise _not_promptfoo(path, "its `results.results` is not a list")
    return doc, lost


# how promptfoo's JSON.stringify(output, null, 2) begins
_HEAD = re.compile(
    r'\s*\{\s*"evalId"\s*:\s*("(?:[^"\\]|\\.)*")\s*,\s*"results"\s*:\s*\{\s*"version"\s*:\s*3\b'
)
_SPACE = re.compile(r"\s*")
_DECODER = json.JSONDecoder()
# a member read whole or not at all, unless its key has a reader of its own that keeps the
# complete parts before the damage: (text, position of its value, where to store it) -> end
_Reader = Callable[[str, int, dict[str, Any], str], int]


class _Damaged(Exception):
    """The text breaks off or stops being promptfoo's JSON here: what was read is kept."""


def _skip(text: str, pos: int, sep: str = "") -> int:
    pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
    if sep and text.startswith(sep, pos):
        pos = _SPACE.match(text, pos + 1).end()  # type: ignore[union-attr]
    return pos


def _members(text: str, pos: int, into: dict[str, Any], readers: Mapping[str, _Reader]) -> int:
    """Read an object's `"key": value` members from `pos` into `into`, up to its `}`.

    Returns the position after the `}`; raises on the damage, with the complete members before
    it kept in `into` (a key in `readers` keeps the complete parts of its value too).
    """
    while not text.startswith("}", pos := _skip(text, pos, ",")):
        key, pos = _DECODER.raw_decode(text, pos)
        pos = _skip(text, pos)
        if not isinstance(key, str) or not text.startswith(":", pos):
            raise _Damaged
        pos = _skip(text, pos + 1)
        reader = readers.get(key)
        if reader is None:
            into[key], pos = _DECODER.raw_decode(text, pos)
        else:
            pos = reader(text, pos, into, key)
    return pos + 1


def _results_list(text: str, pos: int, into: dict[str, Any], key: str) -> int:
    """The summary's `results` array: each complete result before the damage."""
    if not text.startswith("[", pos):
        raise _Damaged
    found: list[Any] = []
    into[key] = found
    pos += 1
    while not text.startswith("]", pos := _skip(text, pos, ",")):
        result, pos = _DECODER.raw_decode(text, pos)
        found.append(result)
    return pos + 1


def _summary(text: str, pos: int, into: dict[str, Any], key: str) -> int:
    # the summary's `{"version": 3` was matched by _HEAD; its other members follow
    return _members(text, pos, into[key], {"results": _results_list})


def _partial_object(text: str, pos: int, into: dict[str, Any], key: str) -> int:
    """An object whose complete members before the damage are kept."""
    if not text.startswith("{", pos):
        raise _Damaged
    found: dict[str, Any] = {}
    into[key] = found
    return _members(text, pos + 1, found, {})


def _read_to_damage(text: str) -> tuple[dict[str, Any], int, str] | None:
    """What a file cut short holds before the damage: the evalId, the summary's parts and
    complete results, then the complete top-level parts after it (`config`, `metadata`, ...),
    in the order promptfoo writes them; with how many results were read, and why the run is
    named by its evalId when it is (else "")."""
    head = _HEAD.match(text)
    if head is None:
        return None
    summary: dict[str, Any] = {"version": 3, "results": []}
    doc: dict[str, Any] = {"evalId": json.loads(head.group(1)), "results": summary}
    whole: list[str] = []

    def config(text: str, pos: int, into: dict[str, Any], key: str) -> int:
        # the config comes after the results; its `description` (second, after `tags`) names
        # the run, so its members are read one by one
        end = _partial_object(text, pos, into, key)
        whole.append(key)
        return end

    try:
        pos = _summary(text, head.end(), doc, "results")
        _members(text, pos, doc, {"config": config})
    except (_Damaged, json.JSONDecodeError, RecursionError):
        pass  # the damage: what was read before it is kept
    unnamed = ""
    if "description" not in doc.get("config", {}) and "config" not in whole:
        where = "in its config" if "config" in doc else "before its config"
        unnamed = (
            f"; the run is named by its evalId, as the file breaks off {where}, before the "
            "config.description that would name it"
        )
    return doc, len(summary["results"]), unnamed


def _label(provider: object) -> str | None:
    """A provider's label, else its id (promptfoo shows the label where one is set)."""
    if isinstance(provider, str):
        return provider
    if isinstance(provider, Mapping):
        for key in ("label", "id"):
            if isinstance(provider.get(key), str) and provider[key]:
                return str(provider[key])
    return None


def _usage(result: Mapping[str, Any]) -> dict[str, Tally] | None:
    """The provider call's tokens and cost as the task's usage (unknown stays NaN)."""
    response = result.get("response")
    tokens = response.get("tokenUsage") if isinstance(response, Mapping) else None
    if not isinstance(tokens, Mapping) and result.get("cost") is None:
        return None
    tally = Tally()
    tokens = tokens if isinstance(tokens, Mapping) else {}
    try:
        given = [amount(k, tokens.get(k)) for k in ("prompt", "completion", "numRequests")]
        cost = amount("cost", result.get("cost"))
    except InvalidUsage as e:
        tally.calls, tally.invalid = 1, str(e)
        return {"task": tally}
    tin, tout, requests = (math.nan if v is None else v for v in given)
    calls = int(requests) if requests == requests and requests == int(requests) else 1
    tally.add(tin, tout, math.nan if cost is None else cost, calls=calls)
    return {"task": tally}


def _reasons(result: Mapping[str, Any]) -> dict[str, str]:
    """Each named metric's assertion reason (the first assertion naming it)."""
    grading = result.get("gradingResult")
    parts = grading.get("componentResults") if isinstance(grading, Mapping) else None
    reasons: dict[str, str] = {}
    for part in parts if isinstance(parts, list) else []:
        assertion = part.get("assertion") if isinstance(part, Mapping) else None
        metric = assertion.get("metric") if isinstance(assertion, Mapping) else None
        if isinstance(metric, str) and isinstance(part.get("reason"), str):
            reasons.setdefault(metric, part["reason"])
    return reasons


# the keys promptfoo's EvalResult.toEvaluateResult always writes (`description`, `error` and
# trace ids only when set); a result without one of them is damaged, or not promptfoo's
_REQUIRED = (
    "cost", "gradingResult", "id", "latencyMs", "namedScores", "prompt", "promptId",
    "promptIdx", "provider", "response", "score", "success", "testCase", "testIdx",
    "tokenUsage", "vars", "metadata", "failureReason",
)  # fmt: skip
# toEvaluateResult copies the grading result's verdict, score and named scores to the result:
# the two copies must agree (a damaged value in one of them is caught, never read)
_COPIES = (("success", "pass"), ("score", "score"), ("namedScores", "namedScores"))


def _parsed(result: object) -> tuple[int, int, dict[str, Any]]:
    """(testIdx, promptIdx, result) of a well-formed result; ValueError saying what is wrong."""
    if not isinstance(result, dict):
        raise ValueError(f"not an object but {type(result).__name__}")
    missing = [key for key in _REQUIRED if key not in result]
    if missing:
        raise ValueError(f"no `{'`, `'.join(missing)}` (promptfoo writes every result with them)")
    for key in ("testIdx", "promptIdx"):
        value = result[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"`{key}` is {value!r}, not an index")
    if not isinstance(result["namedScores"], dict):
        raise ValueError(f"`namedScores` is {type(result['namedScores']).__name__}, not an object")
    grading = result["gradingResult"]
    if isinstance(grading, dict):
        for mine, theirs in _COPIES:
            if theirs in grading and not _same(result[mine], grading[theirs]):
                raise ValueError(
                    f"`{mine}` is {result[mine]!r} but `gradingResult.{theirs}` is "
                    f"{grading[theirs]!r}: the file is damaged"
                )
    return result["testIdx"], result["promptIdx"], result


def _same(a: object, b: object) -> bool:
    """Equal JSON values, telling true from 1 (Python's == does not)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    # NaN only in a file Python wrote (JSON.stringify writes null): the same in both copies
    return type(a) is type(b) and (a == b or (a != a and b != b))


def read(path: Path) -> Imported:
    """Read a promptfoo `results.json` into samples: one per (test, prompt, provider).

    Example:
        >>> import json, pathlib, tempfile
        >>> row = {"testIdx": 0, "promptIdx": 0, "vars": {"q": "hi"}, "success": True,
        ...        "score": 1, "namedScores": {"polite": 1}, "response": {"output": "hi"},
        ...        "provider": {"id": "echo"}, "prompt": {"label": "{{q}}"}, "cost": 0,
        ...        "gradingResult": None, "failureReason": 0, "latencyMs": 5, "id": "r1",
        ...        "promptId": "p1", "testCase": {}, "tokenUsage": {}, "metadata": {}}
        >>> doc = {"evalId": "e1", "results": {"version": 3, "results": [row]}}
        >>> p = pathlib.Path(tempfile.mkdtemp()) / "results.json"
        >>> _ = p.write_text(json.dumps(doc))
        >>> imported = read(p)
        >>> [s.name for s in imported.scores], imported.samples[0].case_id
        (['pass', 'score', 'polite'], '0')
    """
    doc, skipped = _load(path)
    rows: list[tuple[int, int, dict[str, Any]]] = []
    for i, result in enumerate(doc["results"]["results"]):
        try:
            rows.append(_parsed(result))
        except ValueError as e:
            skipped.append(f"{path.name}: results[{i}]: {e}")
    # promptfoo writes results in the order they finished; test order, then prompt, is stable
    rows.sort(key=lambda r: (r[0], r[1]))
    listed = _listed(doc["results"].get("prompts"))
    if listed:
        # the summary's prompts (one per prompt and provider, in the config's order, written
        # before the results) decide the case ids, so a file cut short keeps the same ones
        rows, unlisted = _listed_rows(rows, listed)
        skipped += [f"{path.name}: {why}" for why in unlisted]
        pairs = listed
    else:
        pairs = [(_prompt_label(r[2]), _label(r[2].get("provider"))) for r in rows]
    providers = {provider for _, provider in pairs}
    prompt_no = {p: n for n, p in enumerate(dict.fromkeys(p for p, _ in pairs), start=1)}
    metrics: dict[str, None] = {}
    for _, _, result in rows:
        metrics.update(dict.fromkeys(str(k) for k in result.get("namedScores", {})))
    samples = [_sample(t, result, providers, prompt_no, list(metrics)) for t, _, result in rows]
    scores = [
        ImportedScore(
            PASS, primary=True, description="promptfoo's verdict: every assertion passed"
        ),
        ImportedScore(SCORE, description="promptfoo's weighted mean of the assertion scores"),
    ]
    scores += [ImportedScore(_key(m)) for m in metrics]
    config = _object(doc.get("config"))
    meta = _object(doc.get("metadata"))
    description = config.get("description")
    source = {
        "eval_id": _text(doc.get("evalId")),
        "promptfoo_version": _text(meta.get("promptfooVersion")),
        "created": _text(doc["results"].get("timestamp")),
        "description": _text(description),
        "providers": sorted(p for p in providers if p is not None),
    }
    name = description if isinstance(description, str) and description else doc.get("evalId")
    return Imported(
        format=NAME,
        path=path,
        name=str(name or "promptfoo"),
        scores=scores,
        samples=samples,
        skipped=skipped,
        source=source,
    )


def _listed(prompts: object) -> list[tuple[str | None, str | None]]:
    """The (prompt label, provider) pairs of the summary's `prompts`; [] when unusable."""
    if not isinstance(prompts, list) or not all(isinstance(p, dict) for p in prompts):
        return []
    pairs = [(_label_of(p), p.get("provider")) for p in prompts]
    if any(not isinstance(provider, str) for _, provider in pairs):
        return []
    return pairs


def _listed_rows(
    rows: list[tuple[int, int, dict[str, Any]]], listed: list[tuple[str | None, str | None]]
) -> tuple[list[tuple[int, int, dict[str, Any]]], list[str]]:
    """The rows whose prompt and provider the summary lists, and why each other is not kept."""
    kept: list[tuple[int, int, dict[str, Any]]] = []
    unlisted: list[str] = []
    for row in rows:
        pair = (_prompt_label(row[2]), _label(row[2].get("provider")))
        if pair in listed:
            kept.append(row)
        else:
            unlisted.append(
                f"the result of test {row[0]}, prompt {row[1]}: prompt {pair[0]!r} of provider "
                f"{pair[1]!r} is not in the file's prompts: the file is damaged"
            )
    return kept, unlisted


def _object(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, dict) else {}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _prompt_label(result: Mapping[str, Any]) -> str | None:
    return _label_of(result.get("prompt"))


def _label_of(prompt: object) -> str | None:
    """A prompt's label, else its text."""
    if isinstance(prompt, Mapping):
        for key in ("label", "raw"):
            if isinstance(prompt.get(key), str):
                return str(prompt[key])
    return None


def _sample(
    test: int,
    result: dict[str, Any],
    providers: set[str | None],
    prompt_no: Mapping[str | None, int],
    metrics: list[str],
) -> ImportedSample:
    """One result as a sample; its case id keeps prompts and providers apart when several."""
    provider = _label(result.get("provider"))
    prompt = _prompt_label(result)
    case_id = str(test)
    if len(prompt_no) > 1:
        case_id += f"/p{prompt_no[prompt]}"
    if len(providers) > 1:
        case_id += f"@{provider}"
    variables = result.get("vars")
    inputs: dict[str, Any] = dict(variables) if isinstance(variables, dict) else {}
    inputs.update(provider=provider, prompt=prompt)
    response = result.get("response")
    output = response.get("output") if isinstance(response, Mapping) else None
    latency = result.get("latencyMs")
    duration = (
        latency / 1000
        if isinstance(latency, int | float) and not isinstance(latency, bool)
        else math.nan
    )
    sample = ImportedSample(
        case_id, input=inputs, output=output, duration_s=duration, usage=_usage(result)
    )
    error = result.get("error")
    if result.get("failureReason") == _FAILURE_ERROR:
        sample.outcome = "errored"
        sample.error_type = "ResultFailureReason.ERROR"
        sample.error_message = error if isinstance(error, str) else repr(error)
        return sample
    success = result.get("success")
    # promptfoo's boolean verdict as the 0/1 it counts; anything else goes to the contract as is
    verdict: object = (1 if success else 0) if isinstance(success, bool) else success
    values: dict[str, object] = {
        PASS: Score(verdict, rationale=error if isinstance(error, str) else None),
        SCORE: result.get("score"),
    }
    named = result.get("namedScores", {})
    reasons = _reasons(result)
    for metric in metrics:
        if metric in named:
            values[_key(metric)] = Score(named[metric], rationale=reasons.get(metric))
        else:
            # this test has no assertion with that metric: nothing was measured
            values[_key(metric)] = Unscored("not_asserted")
    sample.scores = values
    return sample


def _key(metric: str) -> str:
    """A named metric's score name: as named, unless it is one of the two promptfoo gives."""
    return f"namedScores.{metric}" if metric in (PASS, SCORE) else metric
