"""Finding lm-evaluation-harness output files (format `"lm-eval"`, `_lm_eval.py`).

lm-eval 0.4.13's `lm_eval/loggers/evaluation_tracker.py` names them: `save_results_aggregated`
writes `results_<date_id>.json` into `<output>/<model_name_sanitized>/` (or `<stem>_<date_id>.json`
beside an output path ending in `.json`), `save_results_samples` writes
`samples_<task>_<date_id>.jsonl` beside it, `date_id` being the run's start,
`datetime.now().isoformat()` with `:` replaced by `-`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from ._imported import FormatError
from ._reading import folder_entries, head

__all__ = ["EXPECTED", "Files", "locate", "sniff"]

EXPECTED = (
    "an lm-evaluation-harness --log_samples output: a samples_<task>_<date>.jsonl file, its "
    "results_<date>.json, or the folder holding them"
)
_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
_SAMPLES = re.compile(rf"samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl")
_RESULTS = re.compile(rf"(?P<stem>.+)_(?P<date>{_DATE})\.json")
# what lm-eval's json.dumps writes first: a sample line's first key; a results file's first key
_SAMPLE_HEAD = b'{"doc_id": '
_RESULTS_HEAD = b'{\n  "results": {'
# a folder is looked at one level down (lm-eval writes into <output>/<model>/); bounded


@dataclass
class Files:
    """One lm-eval run's files: samples by task, its results file, its date, other runs."""

    samples: dict[str, Path]
    results: Path | None
    date: str | None
    others: list[str]


def _samples_in(folder: Path) -> list[Path]:
    return [p for p in folder_entries(folder) if _SAMPLES.fullmatch(p.name) and p.is_file()]


def sniff(path: Path) -> bool:
    """Cheap and never raises: a samples or results file by name and first bytes, or a folder
    holding samples files (or one of its subfolders does)."""
    try:
        if path.is_file():
            if path.suffix == ".jsonl":
                return head(path).startswith(_SAMPLE_HEAD)
            return bool(_RESULTS.fullmatch(path.name)) and head(path).startswith(_RESULTS_HEAD)
        if path.is_dir():
            if _samples_in(path):
                return True
            return any(p.is_dir() and _samples_in(p) for p in folder_entries(path)[:50])
    except (OSError, ValueError):
        return False
    return False


def _results_beside(folder: Path, date: str) -> Path | None:
    found = [
        p
        for p in folder_entries(folder)
        if (m := _RESULTS.fullmatch(p.name)) and m["date"] == date and p.is_file()
    ]
    preferred = [p for p in found if p.name.startswith("results_")]
    return (preferred or found)[0] if found else None


def _run_files(folder: Path, date: str | None) -> Files:
    by_date: dict[str, dict[str, Path]] = defaultdict(dict)
    for p in _samples_in(folder):
        m = _SAMPLES.fullmatch(p.name)
        assert m is not None
        by_date[m["date"]][m["task"]] = p
    if not by_date or (date is not None and date not in by_date):
        raise FormatError(
            f"{folder}: no lm-eval samples_<task>_<date>.jsonl file"
            + (f" of the run {date}" if date else "")
            + ": run lm-eval with --log_samples (and --output_path) to write them"
        )
    # lm-eval writes each run's files with the run's date_id: a folder of several runs is read
    # as its latest, as lm-eval's own get_latest_filename does; the others are named
    chosen = date or max(by_date)
    others = sorted(d for d in by_date if d != chosen)
    samples = dict(sorted(by_date[chosen].items()))
    return Files(samples, _results_beside(folder, chosen), chosen, others)


def locate(path: Path) -> Files:
    """The files of the lm-eval run at `path`; a FormatError says what was expected."""
    if path.is_dir():
        if _samples_in(path):
            return _run_files(path, None)
        subs = [p for p in folder_entries(path) if p.is_dir() and _samples_in(p)]
        if len(subs) == 1:  # lm-eval's <output_path>/<model_name_sanitized>/
            return _run_files(subs[0], None)
        if subs:
            names = ", ".join(sorted(p.name for p in subs))
            raise FormatError(
                f"{path}: holds lm-eval results of several models ({names}): import one "
                "folder at a time"
            )
        raise FormatError(f"{path}: not an lm-eval output folder: expected {EXPECTED}")
    if path.suffix == ".jsonl":
        m = _SAMPLES.fullmatch(path.name)
        if m is None:  # renamed: the task is the file's stem, no results file
            return Files({path.stem: path}, None, None, [])
        return Files({m["task"]: path}, _results_beside(path.parent, m["date"]), m["date"], [])
    m = _RESULTS.fullmatch(path.name)
    if m is None or path.suffix != ".json":
        raise FormatError(f"{path}: not an lm-eval results file: expected {EXPECTED}")
    files = _run_files(path.parent, m["date"])
    files.results = path
    return files
