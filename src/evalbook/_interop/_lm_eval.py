"""Import lm-evaluation-harness results: format `"lm-eval"` (docs/interop.md).

Learnt from the writer code of lm-eval 0.4.13 (not imported: lm-eval is not a dependency):

- `lm_eval/evaluator.py`, `evaluate()`: one logged sample per (filter, doc) with the keys
  `doc_id, doc, target, arguments, resps, filtered_resps, filter, metrics, doc_hash,
  prompt_hash, target_hash` and then one key per metric (`example.update(metrics)`). The hashes
  are sha256 of `json.dumps(doc, indent=2, ensure_ascii=False)`, of the first request's
  `arguments[0]` and of `str(target)`; nothing hashes the responses or the metric values.
- `lm_eval/evaluator_utils.py`, `_compute_task_aggregations` / `_to_eval_results`: aggregated
  results keyed `"<metric>,<filter>"`, with `configs`, `versions`, `n-shot`,
  `higher_is_better` and `n-samples` per task.
- `lm_eval/loggers/evaluation_tracker.py`, `save_results_aggregated` (`results_<date_id>.json`
  in `<output>/<model_name_sanitized>/`, or `<stem>_<date_id>.json` beside an output path
  ending in `.json`) and `save_results_samples` (`samples_<task>_<date_id>.jsonl` beside it;
  arguments as `{"gen_args_<i>": {"arg_<j>": ...}}`, responses as strings).

A run's case is a doc: case id `<task>/<doc_id>`, the lines of its filters merged. A score is a
(metric, filter) pair named as lm-eval's own tables name it (the results key with `,none`
removed, `remove_none_pattern`): `acc`, `exact_match,strict-match`. Per-sample values that are
lists (the arguments lm-eval passes to a corpus-level aggregation: f1's `(gold, pred)`, bleu,
perplexity tuples) or null (`bypass`) are not scores and are not imported; their aggregate
stays in the run's `options["imported"]`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._model._contract import Score, Unscored
from ._imported import FormatError, Imported, ImportedSample, ImportedScore, json_safe
from ._lm_eval_files import EXPECTED, locate, sniff
from ._reading import FileError, Reported, check_means, json_lines, read_json

__all__ = ["EXPECTED", "NAME", "read", "sniff"]

NAME = "lm-eval"
_KEYS = ("doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter")
_HASHES = ("doc_hash", "prompt_hash", "target_hash")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def score_key(metric: str, filter_key: str) -> str:
    """The score name of a (metric, filter): lm-eval's results key without `,none`.

    Example:
        >>> score_key("acc", "none"), score_key("exact_match", "strict-match")
        ('acc', 'exact_match,strict-match')
    """
    return metric if filter_key == "none" else f"{metric},{filter_key}"


@dataclass
class _Line:
    where: str
    doc_id: int
    filter: str
    hashes: tuple[str, str, str]
    record: dict[str, Any]
    metrics: list[str]
    doc_ok: bool


# --- reading ----------------------------------------------------------------------------


def _load_results(path: Path | None, skipped: list[str]) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        data = read_json(path)
    except (OSError, ValueError) as exc:
        why = exc.why if isinstance(exc, FileError) else exc
        skipped.append(f"{path.name}: not readable as lm-eval results JSON ({why})")
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        skipped.append(f"{path.name}: no 'results' object; read without it")
        return {}
    return data


def _parse(record: dict[str, Any], where: str) -> _Line | str:
    """One samples line as lm-eval wrote it, or why it is not one."""
    missing = [k for k in (*_KEYS, "metrics", *_HASHES) if k not in record]
    if missing:
        return f"not an lm-eval sample: no {', '.join(missing)}"
    doc_id, filter_key, metrics = record["doc_id"], record["filter"], record["metrics"]
    if isinstance(doc_id, bool) or not isinstance(doc_id, int):
        return f"doc_id {doc_id!r} is not a whole number"
    if not isinstance(filter_key, str):
        return f"filter {filter_key!r} is not a string"
    if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics):
        return "metrics is not a list of names"
    absent = [m for m in metrics if m not in record]
    if absent:
        return f"no value for metric {', '.join(map(repr, absent))}"
    hashes = tuple(record[k] for k in _HASHES)
    if not all(isinstance(h, str) for h in hashes):
        return "a hash is not a string"
    target, arguments = record["target"], record["arguments"]
    if not isinstance(target, str) or _sha(target) != record["target_hash"]:
        return "target does not match its target_hash"
    prompt = arguments.get("gen_args_0", {}).get("arg_0") if isinstance(arguments, dict) else None
    # lm-eval hashed `arguments[0]`: the prompt of a tuple, the first letter of a bare string
    if not isinstance(prompt, str) or record["prompt_hash"] not in (_sha(prompt), _sha(prompt[:1])):
        return "prompt does not match its prompt_hash"
    doc_text = json.dumps(record["doc"], indent=2, ensure_ascii=False)
    doc_ok = _sha(doc_text) == record["doc_hash"]
    return _Line(where, doc_id, filter_key, hashes, record, metrics, doc_ok)


def _read_lines(path: Path, skipped: list[str], unchecked: list[str]) -> list[_Line]:
    lines: list[_Line] = []
    for where, record in json_lines(path):
        parsed = record if isinstance(record, str) else _parse(record, where)
        if isinstance(parsed, str):
            skipped.append(f"{where}: {parsed}")
        else:
            lines.append(parsed)
    if len(lines) >= 2 and not any(line.doc_ok for line in lines):
        # lm-eval hashed each doc before replacing its images by their hashes (LMEVAL_HASHMM):
        # when no doc of a file matches, the doc hash cannot be checked there
        unchecked.append(path.name)
        return lines
    for line in lines:
        if not line.doc_ok:
            skipped.append(f"{line.where}: doc does not match its doc_hash")
    return [line for line in lines if line.doc_ok]


def _within(lines: list[_Line], original: object, skipped: list[str]) -> list[_Line]:
    """Drop the lines whose doc_id is not one of the task's docs.

    lm-eval numbers a task's docs 0..n-1 (`n-samples.original` in the results file) and
    `--limit` or `--samples` pick among them; nothing hashes the doc_id, so a damaged one
    would otherwise read as a doc of its own."""
    if isinstance(original, bool) or not isinstance(original, int):
        return lines
    kept = []
    for line in lines:
        if 0 <= line.doc_id < original:
            kept.append(line)
        else:
            skipped.append(
                f"{line.where}: doc_id {line.doc_id} is not one of the task's {original} docs "
                "(n-samples in its results file)"
            )
    return kept


def _consistent(
    lines: list[_Line], task_results: dict[str, Any], skipped: list[str]
) -> list[_Line]:
    """Drop every line of a doc whose lines disagree, and lines that repeat a (doc, filter)."""
    twice = Counter((line.doc_id, line.filter) for line in lines)
    docs: dict[int, set[tuple[str, str, str]]] = defaultdict(set)
    for line in lines:
        docs[line.doc_id].add(line.hashes)
    kept = []
    for line in lines:
        if twice[line.doc_id, line.filter] > 1:
            n = twice[line.doc_id, line.filter]
            why = f"doc_id {line.doc_id} appears {n} times for filter {line.filter!r}"
        elif len(docs[line.doc_id]) > 1:
            why = f"the lines of doc_id {line.doc_id} disagree on its doc"
        elif task_results and (
            bad := [m for m in line.metrics if f"{m},{line.filter}" not in task_results]
        ):
            why = f"metric {bad[0]},{line.filter} is not in the task's results"
        else:
            kept.append(line)
            continue
        skipped.append(f"{line.where}: {why}")
    return kept


def _is_argument(value: object) -> bool:
    return value is None or isinstance(value, list)


def _output(resps: object) -> object:
    # one request answered once (a generation) is its text; otherwise lm-eval's list as it is
    if isinstance(resps, list) and len(resps) == 1:
        only = resps[0]
        if isinstance(only, list) and len(only) == 1:
            return only[0]
        return only
    return resps


def _mean_aggregated(config: object) -> set[str]:
    metric_list = config.get("metric_list") if isinstance(config, dict) else None
    if not isinstance(metric_list, list):
        return set()
    return {
        m["metric"]
        for m in metric_list
        if isinstance(m, dict)
        and m.get("aggregation") == "mean"
        and isinstance(m.get("metric"), str)
    }


def _means(
    task: str, lines: list[_Line], results: dict[str, Any], n_docs: int
) -> tuple[dict[str, list[object]], list[Reported]]:
    """The values of each mean-aggregated (metric, filter) and the means the results file
    reports for them; none when its count of docs is not the lines' (lm-eval writes no
    checksum of the values: `check_means` catches a damaged one that still reads as a number)."""
    task_results = results.get("results", {}).get(task)
    count = results.get("n-samples", {}).get(task, {})
    if not isinstance(task_results, dict) or not isinstance(count, dict):
        return {}, []
    if count.get("effective") != n_docs:
        return {}, []
    means = _mean_aggregated(results.get("configs", {}).get(task))
    values: dict[str, list[object]] = defaultdict(list)
    for line in lines:
        for m in line.metrics:
            if m in means:
                values[f"{m},{line.filter}"].append(line.record[m])
    return values, [Reported(key, task_results.get(key), n_docs) for key in values]


# --- the import -------------------------------------------------------------------------


def _task_source(
    task: str, file: Path, results: dict[str, Any], not_imported: dict[str, str]
) -> dict[str, Any]:
    def of(key: str) -> Any:
        block = results.get(key)
        return block.get(task) if isinstance(block, dict) else None

    task_results = of("results")
    metrics = (
        {k: v for k, v in task_results.items() if "," in k}
        if isinstance(task_results, dict)
        else None
    )
    return {
        "file": file.name,
        "version": of("versions"),
        "n-shot": of("n-shot"),
        "n-samples": of("n-samples"),
        "higher_is_better": of("higher_is_better"),
        "results": metrics,
        "not_imported": not_imported,
    }


def read(path: Path) -> Imported:
    """Read an lm-eval samples file, results file or output folder (see the module doc)."""
    files = locate(path)
    skipped: list[str] = []
    unchecked: list[str] = []
    results = _load_results(files.results, skipped)
    all_results = results.get("results", {})
    read_any = False
    # (metric, filter) keys per task, in the order lines carry them, and their values' kinds
    per_task: dict[str, dict[int, list[_Line]]] = {}
    keys: dict[str, dict[str, tuple[str, str]]] = {}
    not_imported: dict[str, dict[str, str]] = {}
    for task, file in files.samples.items():
        lines = _read_lines(file, skipped, unchecked)
        read_any = read_any or bool(lines)
        task_results = all_results.get(task) if isinstance(all_results, dict) else None
        count = results.get("n-samples", {}).get(task) if results else None
        lines = _within(lines, count.get("original") if isinstance(count, dict) else None, skipped)
        lines = _consistent(lines, task_results if isinstance(task_results, dict) else {}, skipped)
        docs: dict[int, list[_Line]] = {}
        for line in lines:
            docs.setdefault(line.doc_id, []).append(line)
        per_task[task] = docs
        effective = count.get("effective") if isinstance(count, dict) else None
        if isinstance(effective, int) and len(docs) < effective:
            skipped.append(
                f"{file.name}: {effective - len(docs)} of the {effective} docs its results file "
                "counts have no readable line"
            )
        values_read, reported = _means(task, lines, results, len(docs))
        check_means(file, values_read, reported, harness="lm-eval", source="the results file")
        values: dict[tuple[str, str], list[object]] = {}
        for line in lines:
            for metric in line.metrics:
                values.setdefault((metric, line.filter), []).append(line.record[metric])
        keys[task] = {}
        not_imported[task] = {}
        for (metric, filter_key), got in values.items():
            name = score_key(metric, filter_key)
            if all(_is_argument(v) for v in got):
                not_imported[task][name] = (
                    "its per-sample values are lm-eval's arguments to a corpus-level "
                    "aggregation, not scores"
                )
            else:
                keys[task][name] = (metric, filter_key)
    if not read_any:
        why = "; ".join(skipped[:3])
        raise FormatError(f"{path}: no line is an lm-eval sample ({why}): expected {EXPECTED}")
    scores: dict[str, ImportedScore] = {}
    hib = results.get("higher_is_better", {}) if results else {}
    for task, names in keys.items():
        for name, (metric, filter_key) in names.items():
            if name in scores:
                continue
            better = hib.get(task, {}).get(metric) if isinstance(hib, dict) else None
            direction = (
                "; higher is better"
                if better is True
                else "; lower is better"
                if better is False
                else ""
            )
            scores[name] = ImportedScore(
                name, description=f"lm-eval metric {metric}, filter {filter_key}{direction}"
            )
    samples = [
        _sample(task, doc_id, lines, keys[task], scores)
        for task, docs in per_task.items()
        for doc_id, lines in docs.items()
    ]
    cfg = results.get("config")
    config: dict[str, Any] = cfg if isinstance(cfg, dict) else {}
    source = {
        "lm_eval_version": results.get("lm_eval_version"),
        "created": _created(results.get("date")),
        "model": config.get("model"),
        "model_args": config.get("model_args"),
        "model_name": results.get("model_name"),
        "date_id": files.date,
        "results_file": None if files.results is None else files.results.name,
        "other_runs": files.others,
        "tasks": {
            task: _task_source(task, file, results, not_imported[task])
            for task, file in files.samples.items()
        },
        "groups": results.get("groups"),
        "doc_hash_unchecked": unchecked,
    }
    return Imported(
        format=NAME,
        path=path,
        name="+".join(files.samples),
        scores=list(scores.values()),
        samples=samples,
        skipped=skipped,
        source=json_safe(source),
    )


def _sample(
    task: str,
    doc_id: int,
    lines: list[_Line],
    keys: dict[str, tuple[str, str]],
    scores: dict[str, ImportedScore],
) -> ImportedSample:
    first = lines[0].record
    by_filter = {line.filter: line.record for line in lines}
    values: dict[str, object] = {}
    for name in scores:
        if name not in keys:  # a metric of another task
            values[name] = Unscored(f"not_a_metric_of_{task}")
            continue
        metric, filter_key = keys[name]
        record = by_filter.get(filter_key)
        if record is not None and metric in record.get("metrics", ()):
            meta = {"filter": filter_key, "filtered_resps": json_safe(record["filtered_resps"])}
            values[name] = Score(record[metric], metadata=meta)
        # else: the doc's line for this filter was skipped: the core records missing_score
    return ImportedSample(
        case_id=f"{task}/{doc_id}",
        input={
            "task": task,
            "doc_id": doc_id,
            "doc": json.dumps(first["doc"], ensure_ascii=False),
            "target": first["target"],
            "prompt": first["arguments"]["gen_args_0"]["arg_0"],
        },
        output=_output(first["resps"]),
        scores=values,
    )


def _created(date: object) -> str | None:
    """lm-eval's `date` (`time.time()` when the run began) as an ISO time; None if not one."""
    if isinstance(date, bool) or not isinstance(date, int | float) or not math.isfinite(date):
        return None
    try:
        return datetime.fromtimestamp(date, UTC).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None
