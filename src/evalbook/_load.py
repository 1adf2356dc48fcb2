"""Reading the run store: `eb.load_run(path)` and `eb.runs(store)`."""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._contract import STATUSES
from ._events import SCHEMA_VERSION, NotARunLog, SchemaVersionError, replay, version_error
from ._files import check_parquet_version, decode_file_output
from ._results import OUTCOMES, PENDING, Results
from ._run import Run
from ._scores import Grader, ScoreDefinition
from ._store import CASES, DATA, EVENTS, SCORES, SUMMARY, finish_status

__all__ = ["RUNS_COLUMNS", "load_run", "runs", "stored_started_at"]

RUNS_COLUMNS = ["name", "id", "path", "started_at", "status", "n_cases", "completion", "headline"]


def _folder(path: str | os.PathLike[str]) -> Path:
    folder = Path(path).expanduser().resolve()
    if folder.is_file():
        folder = folder.parent
    if not folder.is_dir():
        raise FileNotFoundError(f"no run folder at {folder}")
    return folder


def _read_summary(path: Path) -> dict[str, Any]:
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a JSON object")
    found = data.get("schema_version")
    if found != SCHEMA_VERSION:
        raise version_error(str(path), found)
    return data


def _data(folder: Path, data_file: str | None, case_ids: list[str]) -> pd.DataFrame:
    if data_file and (folder / DATA).exists():
        frame: pd.DataFrame = check_parquet_version(folder / DATA).to_pandas()
        return frame
    return pd.DataFrame(index=pd.Index(case_ids, dtype=object))


def _codes(values: list[Any], names: tuple[str, ...], missing: int) -> np.ndarray:
    code = {name: i for i, name in enumerate(names)}
    return np.array([missing if v is None else code[v] for v in values], dtype=np.int8)


def _results_from_files(folder: Path, n_scores: int) -> Results:
    import pyarrow as pa

    cases = check_parquet_version(folder / CASES)
    scores = check_parquet_version(folder / SCORES)
    ids = [str(x) for x in cases.column("case_id").to_pylist()]
    results = Results(ids, n_scores)
    if scores.num_rows != len(ids) * n_scores:
        raise ValueError(
            f"{folder / SCORES} has {scores.num_rows} rows, expected {len(ids)} cases × "
            f"{n_scores} scores"
        )
    results.outcome[:] = _codes(cases.column("outcome").to_pylist(), OUTCOMES, PENDING)
    results.attempts[:] = np.asarray(cases.column("attempts").to_pylist(), dtype=np.int32)
    texts = cases.column("output").to_pylist()
    kinds = cases.column("output_kind").to_pylist()
    results.output = [decode_file_output(t, k) for t, k in zip(texts, kinds, strict=True)]
    results.error_type = cases.column("error_type").cast(pa.string()).to_pylist()
    results.error_message = cases.column("error_message").cast(pa.string()).to_pylist()
    ns = cases.column("started_at").cast(pa.timestamp("ns", tz="UTC")).cast(pa.int64())
    started = np.array([math.nan if v is None else v / 1e9 for v in ns.to_pylist()])
    results.started_at[:] = started
    results.duration_s[:] = cases.column("duration_s").to_numpy(zero_copy_only=False)
    results.status[:] = _codes(scores.column("status").to_pylist(), STATUSES, 0)
    results.value[:] = scores.column("value").to_numpy(zero_copy_only=False)

    def text(column: str) -> list[Any]:
        values: list[Any] = scores.column(column).cast(pa.string()).to_pylist()
        return values

    results.reason = text("reason")
    results.message = text("message")
    results.rationale = text("rationale")
    results.metadata = [None if m is None else json.loads(m) for m in text("metadata")]
    results.grader = [None if g is None else Grader(**json.loads(g)) for g in text("record_grader")]
    return results


def _from_files(folder: Path) -> Run:
    summary = _read_summary(folder / SUMMARY)
    definitions = [ScoreDefinition.model_validate(d) for d in summary["definitions"]]
    results = _results_from_files(folder, len(definitions))
    return Run(
        name=str(summary["name"]),
        id=str(summary["run_id"]),
        definitions=definitions,
        data=_data(folder, summary.get("data_file"), results.case_ids),
        results=results,
        options=dict(summary.get("options") or {}),
        path=folder,
    )


def _from_log(folder: Path) -> Run:
    log = replay(folder / EVENTS)
    return Run(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=_data(folder, log.data_file, log.case_ids),
        results=log.results,
        options=log.options,
        path=folder,
    )


def _has_final_files(folder: Path) -> bool:
    return all((folder / name).exists() for name in (CASES, SCORES, SUMMARY))


def load_run(path: str | os.PathLike[str]) -> Run:
    """Load a stored run: from its Parquet files, or from its event log after a crash.

    The loaded run has the same tables, summary and headline as the run that was stored.
    A truncated last line in `events.jsonl` is skipped with a warning; a file written with
    another `schema_version` raises an error naming both versions.

    Args:
        path: The run's folder (or any file in it), e.g. `run.path` or a row of `eb.runs()`.

    Example:
        >>> import pandas as pd, evalbook as eb, tempfile
        >>> store = tempfile.mkdtemp()
        >>> run = eb.run(pd.DataFrame({"x": ["a", "b"]}), task=lambda x: x.upper(),
        ...              scorers=[lambda output: float(output == "A")], store=store,
        ...              progress=False)
        >>> eb.load_run(run.path).headline.text
        'lambda 50% · completed 100%'
    """
    folder = _folder(path)
    if _has_final_files(folder):
        try:
            return _from_files(folder)
        except SchemaVersionError:
            raise
        except Exception as exc:  # e.g. a file cut short by a power cut: the log decides
            if not (folder / EVENTS).exists():
                raise
            warnings.warn(
                f"{folder}: the final files cannot be read ({exc}); loading from {EVENTS}",
                RuntimeWarning,
                stacklevel=2,
            )
    if (folder / EVENTS).exists():
        return _from_log(folder)
    raise FileNotFoundError(
        f"{folder} is not a stored run: it has no {EVENTS} (see eb.runs() for the runs of a store)"
    )


def stored_started_at(folder: Path) -> str | None:
    """When a stored run started, from its summary or the first line of its log."""
    if (folder / SUMMARY).exists():
        value = _read_summary(folder / SUMMARY).get("started_at")
        return None if value is None else str(value)
    try:
        with (folder / EVENTS).open("rb") as f:
            first = json.loads(f.readline())
    except (OSError, ValueError):
        return None
    value = first.get("started_at") if isinstance(first, dict) else None
    return None if value is None else str(value)


def _row(folder: Path) -> dict[str, Any] | None:
    if (folder / SUMMARY).exists():
        s = _read_summary(folder / SUMMARY)
        return {
            "name": s["name"],
            "id": s["run_id"],
            "path": str(folder),
            "started_at": s.get("started_at"),
            "status": s.get("status", "complete"),
            "n_cases": s.get("n_cases"),
            "completion": s.get("completion"),
            "headline": (s.get("headline") or {}).get("text"),
        }
    if not (folder / EVENTS).exists():
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a run being written has a partial last line
            log = replay(folder / EVENTS)
    except NotARunLog:
        return None
    run = Run(
        name=log.name,
        id=log.run_id,
        definitions=log.definitions,
        data=pd.DataFrame(),
        results=log.results,
        path=folder,
    )
    status = finish_status(log.results) if log.ended is not None else "incomplete"
    return {
        "name": log.name,
        "id": log.run_id,
        "path": str(folder),
        "started_at": log.started_at,
        "status": status,
        "n_cases": log.results.n_cases,
        "completion": run.headline.completion,
        "headline": run.headline.text,
    }


def runs(store: str | os.PathLike[str] = "runs") -> pd.DataFrame:
    """The runs of a store, oldest first, complete or not, as a DataFrame.

    Columns: `name, id, path` (absolute), `started_at, status` (complete | incomplete),
    `n_cases, completion, headline`. Entries that are not runs are ignored; a run that
    cannot be read (another schema version, a damaged log) is skipped with a warning.

    Example:
        >>> import evalbook as eb, tempfile
        >>> list(eb.runs(tempfile.mkdtemp()).columns)
        ['name', 'id', 'path', 'started_at', 'status', 'n_cases', 'completion', 'headline']
    """
    root = Path(store).expanduser().resolve()
    rows: list[dict[str, Any]] = []
    if root.is_dir():
        for entry in sorted(root.iterdir()):
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            try:
                row = _row(entry)
            except (ValueError, KeyError, TypeError, OSError) as exc:
                warnings.warn(f"skipping {entry}: {exc}", RuntimeWarning, stacklevel=2)
                continue
            if row is not None:
                rows.append(row)
    table = pd.DataFrame(rows, columns=RUNS_COLUMNS)
    table["started_at"] = pd.to_datetime(table["started_at"], utc=True, format="ISO8601")
    table["n_cases"] = table["n_cases"].astype("int64")
    table["completion"] = table["completion"].astype("float64")
    table = table.sort_values(["started_at", "name"], kind="stable", na_position="first")
    return table.reset_index(drop=True)
