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
  (`generation_index = sample_id % repeats`, `group_id` the sample's group of repeats).
- `evalscope/report/report.py`: `Report` (schema 2: `metrics[].identity`,
  `primary_metric_identity`, subsets' `score` rounded to 4 decimals and `num`).

A case is a sample group (`<benchmark>_<subset>/<group_id>`), its repeats are epochs
(`generation_index + 1`), each metric of `value` a score. Samples that errored before scoring
have no review line (the report's `execution_summary` counts them, kept in `options`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeGuard

from .._model._contract import Score, ScoreError, Unscored
from ._imported import FormatError, Imported, ImportedSample, ImportedScore, json_safe
from ._reading import FileError, Reported, check_means, folder_entries, head, json_lines, read_json

__all__ = ["EXPECTED", "NAME", "read", "sniff"]

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


@dataclass
class _Line:
    where: str
    sample_id: int | str
    case: str
    epoch: int
    record: dict[str, Any]
    score: dict[str, Any]


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
        if isinstance(data, dict) and isinstance(data.get("metrics"), list):
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
    case = f"{stem}/{sample_id if group is None else group}"
    return _Line(where, index, case, 1 if position is None else position + 1, record, score)


def _read_lines(path: Path, skipped: list[str], known: set[str]) -> list[_Line]:
    """The file's review lines; `known`: its report's metric names (empty: no report)."""
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
    kept = []
    for line in lines.values():
        unknown = [m for m in (*line.score["value"], *_failed(line.score)) if m not in known]
        if slots[line.case, line.epoch] > 1:
            why = f"another sample is also {line.case} repeat {line.epoch}"
        elif scheme is not None and not scheme(line):
            why = "its sample_id, group_id and generation_index disagree"
        elif known and unknown:
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
    metadata = score.get("metadata")
    failed = metadata.get(metric) if isinstance(metadata, dict) else None
    if isinstance(failed, str) and failed.startswith("error:"):  # match_score: the metric raised
        return ScoreError("scorer_raised", f"EvalScope: {failed}")
    status = score["status"]
    if status in _STATUS:
        judge = score.get("judge_summary")
        error = judge.get("error") if isinstance(judge, dict) else None
        why = error if isinstance(error, str) else score.get("explanation")
        return ScoreError(_STATUS[status], f"EvalScope {status}: {why}")
    if status == "excluded":
        return Unscored("excluded")
    return None


def _means(
    lines: list[_Line], report: dict[str, Any] | None, subset: str | None
) -> tuple[dict[str, list[object]], list[Reported]]:
    """The values of each mean-aggregated metric and the means the report gives the subset
    (EvalScope writes no checksum: `check_means` catches a damaged value that still reads as a
    number; the report rounds to 4 decimals)."""
    values: dict[str, list[object]] = {}
    reported: list[Reported] = []
    if report is None:
        return values, reported
    for metric in report.get("metrics", []):
        identity = metric.get("identity") if isinstance(metric, dict) else None
        if not isinstance(identity, dict) or identity.get("aggregation") != "mean":
            continue
        name = identity.get("name")
        if not isinstance(name, str):
            continue
        values[name] = [line.score["value"].get(name) for line in lines]
        for category in metric.get("categories", []):
            for s in category.get("subsets", []) if isinstance(category, dict) else []:
                if isinstance(s, dict) and s.get("name") == subset:
                    reported.append(Reported(name, s.get("score"), s.get("num")))
    return values, reported


def _report_metrics(report: dict[str, Any]) -> set[str]:
    return {
        m["identity"]["name"]
        for m in report.get("metrics", [])
        if isinstance(m, dict)
        and isinstance(m.get("identity"), dict)
        and isinstance(m["identity"].get("name"), str)
    }


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


def _primary(benchmarks: set[str], reports: dict[str, dict[str, Any]]) -> str | None:
    """The report's primary metric name when every imported benchmark names the same one."""
    names = set()
    for b in benchmarks:
        identity = reports[b].get("primary_metric_identity")
        names.add(identity.get("name") if isinstance(identity, dict) else None)
    return names.pop() if len(names) == 1 else None


def read(path: Path) -> Imported:
    """Read an EvalScope review file or output folder (see the module doc)."""
    files, model = _locate(path)
    skipped: list[str] = []
    reports = _reports(model, skipped)
    per_file: dict[str, tuple[list[_Line], str | None, str | None]] = {}
    metrics: dict[str, set[str]] = {}
    for file in files:
        benchmark, subset = _split(file.stem, reports)
        known = _report_metrics(reports[benchmark]) if benchmark else set()
        lines = _read_lines(file, skipped, known)
        values_read, reported = _means(lines, reports.get(benchmark) if benchmark else None, subset)
        check_means(
            file, values_read, reported, harness="EvalScope", source="the report", decimals=4
        )
        per_file[file.stem] = (lines, benchmark, subset)
        metrics[file.stem] = {
            m for line in lines for m in (*line.score["value"], *_failed(line.score))
        }
    if not any(lines for lines, _, _ in per_file.values()):
        why = "; ".join(skipped[:3]) or "no review file"
        raise FormatError(f"{path}: no line is an EvalScope review ({why}): expected {EXPECTED}")
    order: dict[str, None] = {}
    for lines, _, _ in per_file.values():
        for line in lines:
            order.update(dict.fromkeys(line.score["value"]))
            order.update(dict.fromkeys(_failed(line.score)))
    benchmarks = {b for _, b, _ in per_file.values() if b is not None}
    primary = _primary(benchmarks, reports) if benchmarks else None
    scores = [ImportedScore(name, primary=name == primary) for name in order]
    samples = []
    for stem, (lines, benchmark, subset) in per_file.items():
        for line in lines:
            values: dict[str, object] = {}
            for name in order:
                if name not in metrics[stem]:
                    values[name] = Unscored(f"not_a_metric_of_{stem}")
                elif (value := _value(line, name)) is not None:
                    values[name] = value
            prediction = line.score.get("prediction")
            samples.append(
                ImportedSample(
                    case_id=line.case,
                    epoch=line.epoch,
                    input={
                        "dataset": stem,
                        "benchmark": benchmark,
                        "subset": subset,
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
    source = {
        "model": model.name,
        "files": [f.name for f in files],
        "benchmarks": {b: _report_source(reports[b]) for b in sorted(benchmarks)},
    }
    name = "+".join(sorted(benchmarks)) if benchmarks else "+".join(per_file)
    return Imported(NAME, path, name, scores, samples, skipped, json_safe(source))


def _failed(score: dict[str, Any]) -> list[str]:
    """The metrics `match_score` recorded as raised (`metadata[<metric>] = "error: ..."`)."""
    metadata = score.get("metadata")
    if not isinstance(metadata, dict):
        return []
    return [k for k, v in metadata.items() if isinstance(v, str) and v.startswith("error:")]
