"""Import EvalScope results: format `"evalscope"` (docs/interop.md).

Learnt from the writer code of evalscope 1.14.1 (not imported: EvalScope is not a dependency):

- `evalscope/api/evaluator/cache.py`: `CacheManager.save_review_cache` appends one
  `ReviewResult` per scored sample (`index, target, messages, agent_trace, sample_score`,
  `model_dump()` then `JsonlWriter.write`: `json.dumps(ensure_ascii=False)`) to
  `<outputs>/reviews/<model>/<benchmark>_<subset>.jsonl`; the report is
  `<outputs>/reports/<model>/<benchmark>.json` (`get_report_file`, `Report.to_json`).
  `filter_review_cache` reads a review file back keeping the last row of a sample id.
- `evalscope/api/metric/scorer.py`: `SampleScore` (`score, sample_id, group_id,
  generation_index`) and `Score` (`value` = {metric: number}, `status`, `judge_summary`,
  `prediction`, `explanation`, `metadata`); a status that is not usable (`ScoreStatus`:
  `transport_error`, `parse_error`, `invalid_session`, `excluded`) leaves its metrics out of
  `value` and the sample out of the metric's aggregation.
- `evalscope/api/benchmark/adapters/default_data_adapter.py`: `match_score` (a metric that
  raised: `metadata[<metric>] = "error: ..."`, status `degraded`) and `calculate_metrics`
  (`generation_index = sample_id % repeats`, `group_id` the sample's group of repeats);
  `benchmarks/general_qa/general_qa_adapter.py` (and general_vqa): a metric that raised writes
  `0.0` for each of its keys (`METRIC_SCORE_KEYS`: `BLEU` -> `bleu-1`..`bleu-4`) and
  `metadata["metric_errors"][<metric>] = "<Error>: ..."`, status still `success`.
- `evalscope/report/report.py`: `Report` (schema 2: `metrics[].identity`,
  `primary_metric_identity`, subsets' `score` rounded to 4 decimals and `num`,
  `execution_summary` per subset `requested`, `succeeded`, `errored`).
- `evalscope/metrics/semantics/naming.py`: `canonicalize_producer_identity`, how a review key
  becomes a report metric's identity (`AggScore`): `bleu-1` is `bleu` with `ngram: 1`,
  `Rouge-L-R` is `rouge` with `variant: "l", statistic: "recall"`, `acc` is `accuracy`.

A case is a sample group (`<benchmark>_<subset>/<group_id>`), its repeats are epochs
(`generation_index + 1`), each metric of `value` a score. Samples that errored before scoring
have no review line (the report's `execution_summary` counts them, kept in `options`); a
sample the report asked for that the file does not hold is not run (docs/interop.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from .._model._contract import Score, ScoreError, Unscored
from ._imported import (
    FormatError,
    Imported,
    ImportedSample,
    ImportedScore,
    json_safe,
)
from ._reading import (
    FileError,
    Reported,
    check_means,
    check_version,
    folder_entries,
    head,
    json_lines,
    read_json,
)

__all__ = ["EXPECTED", "NAME", "identity_of", "read", "sniff"]

NAME = "evalscope"
EXPECTED = (
    "EvalScope's output: a reviews/<model>/<benchmark>_<subset>.jsonl file, or the output folder "
    "holding reviews/ (and reports/)"
)
# what JsonlWriter writes first on a review line (ReviewResult's first two fields)
_HEAD = re.compile(rb'\{"index": -?\d+, "target": ')
# EvalScope's unusable statuses, as evalbook records: an error code, or unscored
_STATUS = {
    "transport_error": "judge_raised",
    "parse_error": "invalid_judge_output",
    "invalid_session": "invalid_judge_output",
}
# the report schema evalbook reads (Report.schema_version)
_SCHEMA = 2
# the metadata key general_qa's match_score records a metric that raised under
_ERRORS = "metric_errors"
# canonicalize_producer_identity's spellings (metrics/semantics/naming.py, aliases.py's
# PRODUCER scope): what a review key's metric is named in the report
# (at most 18 digits: int() of a hostile 5,000-digit key raises; such a key is then unknown)
_BLEU = re.compile(r"^(?:mean_)?[Bb]leu[-_](?P<ngram>\d{1,18})$")
_ROUGE = re.compile(r"^(?:mean_)?Rouge-(?P<variant>[12L])-(?P<statistic>[RPF])$")
_STATISTIC = {"R": "recall", "P": "precision", "F": "f1"}
_ALIASES = {"acc": "accuracy", "f1_score": "f1", "em": "exact_match", "bertscore": "bert_score"}
_CANONICAL = re.compile(r"^[a-z][a-z0-9_]*$")
_AMBIGUOUS = {"score", "overall", "total_score"}  # MetricIdentity refuses them as names
_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NOT_NAME = re.compile(r"[^a-z0-9]+")

# a metric's identity without its aggregation: (name, its dimensions as canonical JSON)
_Identity = tuple[str, str]


def _dims(dimensions: dict[str, object]) -> str:
    # MetricIdentity stores an integral float dimension as an int (1.0 and 1 are one identity)
    normal = {
        k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in dimensions.items()
    }
    return json.dumps(normal, sort_keys=True, ensure_ascii=False)


@functools.lru_cache(maxsize=4096)  # called for each key of each line
def identity_of(key: str) -> _Identity:
    """The report identity (name, dimensions) EvalScope gives the metric of review key `key`.

    Example:
        >>> identity_of("bleu-1"), identity_of("Rouge-L-R"), identity_of("acc")
        (('bleu', '{"ngram": 1}'), ('rouge', '{"statistic": "recall", "variant": "l"}'), \
('accuracy', '{}'))
    """
    dims: dict[str, object] = {}
    if bleu := _BLEU.fullmatch(key):
        return "bleu", _dims({"ngram": int(bleu["ngram"])})
    if rouge := _ROUGE.fullmatch(key):
        variant = rouge["variant"]
        dims = {"variant": "l"} if variant == "L" else {"ngram": int(variant)}
        dims["statistic"] = _STATISTIC[rouge["statistic"]]
        return "rouge", _dims(dims)
    snake = _NOT_NAME.sub("_", _BOUNDARY.sub("_", key).lower()).strip("_")
    name = _ALIASES.get(snake, snake)
    if not _CANONICAL.fullmatch(name) or name in _AMBIGUOUS:
        return "legacy_metric", _dims({"original_name": key})
    return name, "{}"


def _report_identity(identity: object) -> tuple[_Identity, object] | None:
    """A report identity as (name, dimensions) and its aggregation, or None if not one."""
    if not isinstance(identity, dict):
        return None
    name, dims = identity.get("name"), identity.get("dimensions", {})
    if not isinstance(name, str) or not isinstance(dims, dict):
        return None
    return (name, _dims(dims)), identity.get("aggregation")


@dataclass
class _Line:
    where: str
    sample_id: int | str
    case: str
    epoch: int
    record: dict[str, Any]
    score: dict[str, Any]
    # the metrics that raised (their value, if any, is EvalScope's stand-in): key -> why
    failed: dict[str, str]

    def metrics(self) -> list[str]:
        return list(dict.fromkeys([*self.score["value"], *self.failed]))


def _is_review_file(path: Path) -> bool:
    if path.suffix != ".jsonl" or not path.is_file():
        return False
    return bool(_HEAD.match(head(path)))


def _reviews_in(folder: Path) -> list[Path]:
    return [p for p in folder_entries(folder) if _is_review_file(p)]


def _jsonl_in(folder: Path) -> list[Path]:
    return [p for p in folder_entries(folder) if p.suffix == ".jsonl" and p.is_file()]


def _model_dirs(reviews: Path) -> list[Path]:
    return [p for p in folder_entries(reviews) if p.is_dir() and _reviews_in(p)]


def sniff(path: Path) -> bool:
    """Cheap and never raises: a review file by its first bytes, or a folder holding them."""
    try:
        if path.is_file():
            return _is_review_file(path)
        if path.is_dir():
            reviews = path / "reviews"
            if reviews.is_dir():
                return bool(_model_dirs(reviews))
            return bool(_reviews_in(path) or _model_dirs(path))
    except (OSError, ValueError):
        return False
    return False


def _one_model(reviews: Path) -> Path:
    models = _model_dirs(reviews)
    if len(models) > 1:
        names = ", ".join(p.name for p in models)
        raise FormatError(
            f"{reviews}: holds EvalScope reviews of several models ({names}): import one "
            "model's folder at a time"
        )
    if not models:
        raise FormatError(f"{reviews}: no EvalScope review file: expected {EXPECTED}")
    return models[0]


def _locate(path: Path) -> tuple[list[Path], Path]:
    """The review files and the model's reviews folder (reports sit at ../../reports/<model>)."""
    if not path.is_dir():  # a file (or a FIFO, a device: the core refuses to read it)
        if path.suffix != ".jsonl":
            raise FormatError(f"{path}: not an EvalScope review file: expected {EXPECTED}")
        return [path], path.parent
    if (path / "reviews").is_dir():
        model = _one_model(path / "reviews")
    elif _reviews_in(path):
        model = path
    elif _model_dirs(path):
        model = _one_model(path)
    else:
        raise FormatError(f"{path}: not an EvalScope output folder: expected {EXPECTED}")
    # every .jsonl file there: one whose first line is damaged is read (and counted), not hidden
    return _jsonl_in(model), model


def _reports(model: Path, skipped: list[str]) -> dict[str, dict[str, Any]]:
    folder = model.parent.parent / "reports" / model.name
    found: dict[str, dict[str, Any]] = {}
    if not folder.is_dir():
        return found
    for p in folder_entries(folder):
        if p.suffix != ".json" or not p.is_file():
            continue
        try:
            data = read_json(p)
        except (OSError, ValueError) as exc:
            why = exc.why if isinstance(exc, FileError) else exc
            skipped.append(f"{p.name}: not readable as an EvalScope report ({why})")
            continue
        if isinstance(data, dict) and ("metrics" in data or "schema_version" in data):
            # one rule for a declared version (docs/interop.md): a newer report is refused by
            # name, an older one says which is read
            version = data.get("schema_version")
            check_version(p, version, harness="EvalScope report", reads=[_SCHEMA])
            if isinstance(data.get("metrics"), list):
                found[p.stem] = data
    return found


def _split(stem: str, reports: dict[str, dict[str, Any]]) -> tuple[str | None, str | None]:
    """(benchmark, subset) of a `<benchmark>_<subset>` file stem, from the reports' names."""
    named = [b for b in reports if stem.startswith(f"{b}_")]
    if not named:
        return None, None
    benchmark = max(named, key=len)
    return benchmark, stem[len(benchmark) + 1 :]


def _key(value: object) -> TypeGuard[int | str]:
    return isinstance(value, int | str) and not isinstance(value, bool)


def _parse(record: dict[str, Any], where: str, stem: str) -> _Line | str:
    """One review line as EvalScope wrote it, or why it is not one."""
    sample = record.get("sample_score")
    score = sample.get("score") if isinstance(sample, dict) else None
    if not isinstance(sample, dict) or not isinstance(score, dict):
        return "not an EvalScope review: no sample_score.score"
    value, status = score.get("value"), score.get("status")
    if not isinstance(value, dict) or not isinstance(status, str):
        return "not an EvalScope review: no score value and status"
    index, sample_id = record.get("index"), sample.get("sample_id")
    # ReviewResult.index and SampleScore.sample_id are both the task state's sample_id
    if not _key(index) or index != sample_id:
        return f"index {index!r} and sample_id {sample_id!r} disagree"
    group, position = sample.get("group_id"), sample.get("generation_index")
    if group is not None and not _key(group):
        return f"group_id {group!r} is not an id"
    if position is not None and (
        isinstance(position, bool) or not isinstance(position, int) or position < 0
    ):
        return f"generation_index {position!r} is not a whole number >= 0"
    # where EvalScope records a metric that raised: a damaged key there would read its
    # stand-in 0.0 as a score, so the line is refused instead
    if "metadata" not in score:
        return "its score has no metadata (where EvalScope records a metric that raised)"
    metadata = score["metadata"]
    for k in metadata if isinstance(metadata, dict) else ():
        if k != _ERRORS and _one_off(str(k), _ERRORS):
            return f"metadata key {k!r} is not {_ERRORS!r}: damaged"
    failed = _failed(score)
    if isinstance(failed, str):
        return failed
    case = f"{stem}/{sample_id if group is None else group}"
    epoch = 1 if position is None else position + 1
    return _Line(where, index, case, epoch, record, score, failed)


def _one_off(a: str, b: str) -> bool:
    """`a` is `b` with one character changed (what a flipped bit or byte makes of a key)."""
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1


def _failed(score: dict[str, Any]) -> dict[str, str] | str:
    """The metrics that raised, each with why, in both shapes EvalScope 1.14.1 writes (or why
    the line is damaged).

    `match_score` (default_data_adapter.py) leaves the metric out of `value` and writes
    `metadata[<metric>] = "error: ..."`; general_qa's and general_vqa's write `0.0` for each of
    the metric's keys and `metadata["metric_errors"][<metric>] = "<Error>: ..."`: those keys are
    the ones whose report name is the metric's (`BLEU` -> `bleu-1`..`bleu-4`), and there is
    always one at least."""
    metadata = score.get("metadata")
    if not isinstance(metadata, dict):
        return {}
    failed = {
        k: f"EvalScope: {v}"
        for k, v in metadata.items()
        if isinstance(v, str) and v.startswith("error:")
    }
    errors = metadata.get(_ERRORS)
    if not isinstance(errors, dict):
        return failed
    for metric, why in errors.items():
        name = identity_of(str(metric))
        keys = [
            k
            for k in score["value"]
            if k == metric or (name[0] != "legacy_metric" and identity_of(k)[0] == name[0])
        ]
        if not keys:
            return f"metric_errors names {metric!r}, which has no value on the line"
        message = (
            f"EvalScope: metric {metric} raised ({why}); the 0.0 EvalScope wrote for it is "
            "not a score"
        )
        failed.update(dict.fromkeys(keys, message))
    return failed


def _read_lines(path: Path, skipped: list[str], known: set[_Identity] | None) -> list[_Line]:
    """The file's review lines; `known`: its report's metric identities (None: no report)."""
    lines: dict[int | str, _Line] = {}
    for where, record in json_lines(path):
        parsed = record if isinstance(record, str) else _parse(record, where, path.stem)
        if isinstance(parsed, str):
            skipped.append(f"{where}: {parsed}")
            continue
        earlier = lines.pop(parsed.sample_id, None)
        if earlier is not None:  # as filter_review_cache: the last row of a sample wins
            skipped.append(f"{earlier.where}: sample {parsed.sample_id!r} again at {where}")
        lines[parsed.sample_id] = parsed
    slots = Counter((line.case, line.epoch) for line in lines.values())
    scheme = _id_scheme(list(lines.values()))
    # a key on most lines is the benchmark's own even if its report names it otherwise; a rare
    # one the report does not name is a damaged name
    common = Counter(k for line in lines.values() for k in line.metrics())
    kept = []
    for line in lines.values():
        unknown = [
            k
            for k in line.metrics()
            if known is not None and identity_of(k) not in known and common[k] * 2 <= len(lines)
        ]
        if slots[line.case, line.epoch] > 1:
            why = f"another sample is also {line.case} repeat {line.epoch}"
        elif scheme is not None and not scheme(line):
            why = "its sample_id, group_id and generation_index disagree"
        elif unknown:
            why = f"metric {unknown[0]!r} is not in the benchmark's report"
        else:
            kept.append(line)
            continue
        skipped.append(f"{line.where}: {why}")
    return kept


def _id_scheme(lines: list[_Line]) -> Callable[[_Line], bool] | None:
    """EvalScope's own ids (`MemoryDataset.reindex`, `calculate_metrics`): sample i of R repeats
    is in group i // R at position i % R. When most lines follow it, a line that does not is
    damaged; a dataset with ids of its own follows no scheme and is not checked."""
    groups = Counter(line.record["sample_score"].get("group_id") for line in lines)
    if not groups:
        return None
    repeats = Counter(groups.values()).most_common(1)[0][0]

    def follows(line: _Line) -> bool:
        sample = line.record["sample_score"]
        i, group, position = line.sample_id, sample.get("group_id"), line.epoch - 1
        return isinstance(i, int) and group == i // repeats and position == i % repeats

    return follows if sum(map(follows, lines)) * 2 > len(lines) else None


def _text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        parts = [c.get("text") for c in content if isinstance(c, dict)]
        return "\n".join(p for p in parts if isinstance(p, str))
    return None


def _message(record: dict[str, Any], role: str, last: bool) -> str | None:
    messages = record.get("messages")
    if not isinstance(messages, list):
        return None
    found = [m for m in messages if isinstance(m, dict) and m.get("role") == role]
    return _text(found[-1 if last else 0].get("content")) if found else None


def _value(line: _Line, metric: str) -> object | None:
    """A metric's raw value on one line; None: the core records missing_score."""
    score = line.score
    value = score["value"]
    if metric in line.failed:  # it raised: an error, never EvalScope's stand-in 0.0
        return ScoreError("scorer_raised", line.failed[metric])
    if metric in value:
        rationale = score.get("explanation")
        meta = {"status": score["status"]}
        if isinstance(score.get("extracted_prediction"), str):
            meta["extracted_prediction"] = score["extracted_prediction"]
        return Score(
            value[metric],
            rationale=rationale if isinstance(rationale, str) else None,
            metadata=meta,
        )
    status = score["status"]
    judge = score.get("judge_summary")
    judge = judge if isinstance(judge, dict) else {}
    failures = judge.get("failures")
    # a judge that failed: the line's own status, or (the rule score kept, status degraded)
    # the failures of a judge summary that is not a success (with several judges, one may
    # fail while the others give the verdict)
    failed = [status] if status in _STATUS else []
    if isinstance(failures, dict) and judge.get("status") != "success":
        failed += [f for f in failures if f in _STATUS]
    if failed:
        return ScoreError(_STATUS[failed[0]], f"EvalScope {failed[0]}: {_judge_error(score)}")
    if status == "excluded":
        return Unscored("excluded")
    if judge and status == "success":  # the judge scored the line: no rule metric is computed
        return Unscored("rule_metric_not_computed")
    return None


def _judge_error(score: dict[str, Any]) -> object:
    """Why the judge gave no verdict: its summary's error and each attempt's."""
    judge = score.get("judge_summary")
    error = judge.get("error") if isinstance(judge, dict) else None
    metadata = score.get("metadata")
    attempts = metadata.get("judge_attempts") if isinstance(metadata, dict) else None
    errors = [a.get("error") for a in attempts or [] if isinstance(a, dict)]
    why = [e for e in errors if isinstance(e, str)]
    if isinstance(error, str):
        return f"{error} ({'; '.join(why)})" if why else error
    return "; ".join(why) if why else score.get("explanation")


def _report_ids(report: dict[str, Any]) -> dict[_Identity, list[tuple[object, dict[str, Any]]]]:
    """The report's metrics by identity (name, dimensions): each aggregation with its metric."""
    found: dict[_Identity, list[tuple[object, dict[str, Any]]]] = {}
    for metric in report.get("metrics", []):
        parsed = _report_identity(metric.get("identity")) if isinstance(metric, dict) else None
        if parsed is not None:
            found.setdefault(parsed[0], []).append((parsed[1], metric))
    return found


def _means(
    lines: list[_Line], report: dict[str, Any] | None, subset: str | None
) -> tuple[dict[str, list[object]], list[Reported]]:
    """The values of each mean-aggregated metric and the means the report gives the subset
    (EvalScope writes no checksum: `check_means` catches a damaged value that still reads as a
    number; the report rounds to 4 decimals). A key's report metric is the one of its identity
    (`identity_of`); the values are the line's own, EvalScope's stand-in 0.0 of a metric that
    raised included, as EvalScope's mean counts it."""
    values: dict[str, list[object]] = {}
    reported: list[Reported] = []
    if report is None:
        return values, reported
    by_identity: dict[_Identity, list[str]] = {}
    for key in dict.fromkeys(k for line in lines for k in line.score["value"]):
        by_identity.setdefault(identity_of(key), []).append(key)
    for identity, metrics in _report_ids(report).items():
        keys = by_identity.get(identity, [])
        if len(keys) != 1:  # none, or two spellings of one metric: no single key to check
            continue
        key = keys[0]
        for aggregation, metric in metrics:
            if aggregation != "mean":
                continue
            values[key] = [line.score["value"].get(key) for line in lines]
            for category in metric.get("categories", []):
                for s in category.get("subsets", []) if isinstance(category, dict) else []:
                    if isinstance(s, dict) and s.get("name") == subset:
                        reported.append(Reported(key, s.get("score"), s.get("num")))
    return values, reported


def _report_source(report: dict[str, Any]) -> dict[str, Any]:
    metrics = []
    for m in report.get("metrics", []):
        if isinstance(m, dict):
            metrics.append({k: m.get(k) for k in ("identity", "score", "num")})
    return {
        "pretty_name": report.get("dataset_pretty_name"),
        "model_name": report.get("model_name"),
        "primary_metric_identity": report.get("primary_metric_identity"),
        "metrics": metrics,
        "execution_summary": report.get("execution_summary"),
    }


def _primary(benchmarks: dict[str, set[str]], reports: dict[str, dict[str, Any]]) -> str | None:
    """The review key of the reports' primary metric when every imported benchmark's report
    names one and it is the same key (`benchmarks`: each benchmark's keys)."""
    names: set[str | None] = set()
    for benchmark, keys in benchmarks.items():
        parsed = _report_identity(reports[benchmark].get("primary_metric_identity"))
        found = [k for k in keys if parsed is not None and identity_of(k) == parsed[0]]
        names.add(found[0] if len(found) == 1 else None)
    return names.pop() if len(names) == 1 else None


def _asked(
    file: Path, report: dict[str, Any] | None, subset: str | None, skipped: list[str]
) -> dict[str, int] | None:
    """The report's `execution_summary` counts of a subset (requested, succeeded, errored).

    A report written before EvalScope tracked completeness has no `execution_summary`; one that
    has it without this subset's counts is damaged (counted: the completion is then unknown)."""
    summary = report.get("execution_summary") if report is not None else None
    if summary is None:
        return None
    subsets = summary.get("subsets") if isinstance(summary, dict) else None
    counts = subsets.get(subset) if isinstance(subsets, dict) and subset is not None else None
    out = {k: counts.get(k) for k in ("requested", "succeeded", "errored")} if counts else {}
    if not out or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in out.values()
    ):
        skipped.append(
            f"{file.name}: its report's execution_summary has no counts of subset {subset!r}: "
            "how many samples were asked is not known"
        )
        return None
    return {k: int(v) for k, v in out.items() if isinstance(v, int)}


def _missing(
    file: Path,
    lines: list[_Line],
    counts: dict[str, int] | None,
    repeats: int,
    base: dict[str, Any],
    skipped: list[str],
) -> tuple[list[str] | None, list[ImportedSample]]:
    """The cases the report asked of this file (None: not known) and the samples it says
    errored.

    EvalScope's ids are its own (`reindex`: sample `i` is group `i // repeats`, position
    `i % repeats`), so the report's `requested` names every slot. A slot the file does not hold
    is not run; when the file holds exactly the report's `succeeded` samples, the others are
    the `errored` ones (EvalScope keeps no line of a sample that errored)."""
    if counts is None or len(lines) >= counts["requested"]:
        return None, []
    requested = counts["requested"]
    fits = requested % repeats == 0 and all(
        isinstance(line.sample_id, int)
        and 0 <= line.sample_id < requested
        and line.case == f"{file.stem}/{line.sample_id // repeats}"
        and line.epoch == line.sample_id % repeats + 1
        for line in lines
    )
    if not fits:
        skipped.append(
            f"{file.name}: its report asks {requested} samples, the file holds {len(lines)}; "
            "its ids are not EvalScope's own, so which are missing is not known"
        )
        return None, []
    planned = [f"{file.stem}/{g}" for g in range(requested // repeats)]
    errored: list[ImportedSample] = []
    if len(lines) == counts["succeeded"] and requested - len(lines) == counts["errored"]:
        held = {line.sample_id for line in lines}
        errored = [
            ImportedSample(
                case_id=f"{file.stem}/{i // repeats}",
                epoch=i % repeats + 1,
                input=base,
                outcome="errored",
                error_type="EvalScope",
                error_message="the sample errored before it was scored (its report counts it "
                "in execution_summary.errored; EvalScope writes no review of it)",
            )
            for i in range(requested)
            if i not in held
        ]
    return planned, errored


def read(path: Path) -> Imported:
    """Read an EvalScope review file or output folder (see the module doc)."""
    files, model = _locate(path)
    skipped: list[str] = []
    reports = _reports(model, skipped)
    per_file: dict[str, tuple[Path, list[_Line], str | None, str | None]] = {}
    for file in files:
        benchmark, subset = _split(file.stem, reports)
        report = reports.get(benchmark) if benchmark else None
        known = set(_report_ids(report)) if report is not None else None
        lines = _read_lines(file, skipped, known)
        values_read, reported = _means(lines, report, subset)
        check_means(
            file, values_read, reported, harness="EvalScope", source="the report", decimals=4
        )
        per_file[file.stem] = (file, lines, benchmark, subset)
    if not any(lines for _, lines, _, _ in per_file.values()):
        why = "; ".join(skipped[:3]) or "no review file"
        raise FormatError(f"{path}: no line is an EvalScope review ({why}): expected {EXPECTED}")
    order: dict[str, None] = {}
    keys_of: dict[str, set[str]] = {}
    for stem, (_, lines, _, _) in per_file.items():
        keys_of[stem] = {k for line in lines for k in line.metrics()}
        for line in lines:
            order.update(dict.fromkeys(line.metrics()))
    per_benchmark: dict[str, set[str]] = {}
    for stem, (_, _, benchmark, _) in per_file.items():
        if benchmark is not None:
            per_benchmark.setdefault(benchmark, set()).update(keys_of[stem])
    primary = _primary(per_benchmark, reports) if per_benchmark else None
    scores = [ImportedScore(name, primary=name == primary) for name in order]
    # EvalScope's repeats is one setting of a run: the highest position read in any file
    repeats = 1 + max(line.epoch - 1 for _, ls, _, _ in per_file.values() for line in ls)
    samples: list[ImportedSample] = []
    # every case in file order: a file's planned ones where its report says what was asked
    planned: list[str] = []
    for stem, (file, lines, benchmark, subset) in per_file.items():
        base = {"dataset": stem, "benchmark": benchmark, "subset": subset}
        for line in lines:
            values: dict[str, object] = {}
            for name in order:
                if name not in keys_of[stem]:
                    values[name] = Unscored(f"not_a_metric_of_{stem}")
                elif (value := _value(line, name)) is not None:
                    values[name] = value
            prediction = line.score.get("prediction")
            samples.append(
                ImportedSample(
                    case_id=line.case,
                    epoch=line.epoch,
                    input={
                        **base,
                        "input": _message(line.record, "user", last=False),
                        "target": line.record.get("target"),
                        "sample_metadata": json.dumps(
                            line.record["sample_score"].get("sample_metadata"), ensure_ascii=False
                        ),
                    },
                    output=prediction
                    if isinstance(prediction, str)
                    else _message(line.record, "assistant", last=True),
                    scores=values,
                )
            )
        report = reports.get(benchmark) if benchmark else None
        counts = _asked(file, report, subset, skipped)
        asked, errored = _missing(file, lines, counts, repeats, base, skipped)
        planned += asked if asked is not None else dict.fromkeys(line.case for line in lines)
        samples += errored
    benchmarks = sorted(per_benchmark)
    source = {
        "model": model.name,
        "files": [f.name for f in files],
        "benchmarks": {b: _report_source(reports[b]) for b in benchmarks},
    }
    name = "+".join(benchmarks) if benchmarks else "+".join(per_file)
    return Imported(
        NAME,
        path,
        name,
        scores,
        samples,
        skipped,
        json_safe(source),
        planned_cases=planned,
        planned_epochs=repeats,
    )
