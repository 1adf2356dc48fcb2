"""Tidy pandas tables built from a run's columns (DESIGN §5)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._contract import STATUSES
from ._results import OUTCOMES, Results
from ._scores import ScoreDefinition

__all__ = ["CASE_COLUMNS", "SCORE_COLUMNS", "cases_table", "scores_table", "unscored_table"]

CASE_COLUMNS = [
    "case_id",
    "outcome",
    "attempts",
    "output",
    "error_type",
    "error_message",
    "started_at",
    "duration_s",
]
SCORE_COLUMNS = [
    "case_id",
    "score",
    "status",
    "value",
    "counted",
    "reason",
    "message",
    "rationale",
    "grader_kind",
    "grader_id",
    "grader_model",
    "derived",
    "metadata",
]


def _codes(codes: np.ndarray, categories: Sequence[str]) -> pd.Categorical[str]:
    return pd.Categorical.from_codes(codes.astype(np.int16), categories=pd.Index(categories))


def _object(values: list[Any]) -> np.ndarray:
    out = np.empty(len(values), dtype=object)
    out[:] = values
    return out


def cases_table(results: Results) -> pd.DataFrame:
    """One row per case, in input order."""
    started = pd.to_datetime(results.started_at, unit="s", utc=True)
    return pd.DataFrame(
        {
            "case_id": _object(results.case_ids),
            "outcome": _codes(results.outcome, OUTCOMES),  # -1 (not run) becomes NaN
            "attempts": results.attempts.copy(),
            "output": _object(results.output),
            "error_type": pd.Categorical(results.error_type),
            "error_message": _object(results.error_message),
            "started_at": started,
            "duration_s": results.duration_s.copy(),
        },
        columns=CASE_COLUMNS,
    )


def _metadata_json(items: list[dict[str, Any] | None]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    for i, m in enumerate(items):
        if m is not None:
            out[i] = json.dumps(m, ensure_ascii=False, default=repr)
    return out


def scores_table(
    results: Results, definitions: Sequence[ScoreDefinition], counted: np.ndarray
) -> pd.DataFrame:
    """Exactly n_cases × n_scores rows: input order, then definition order."""
    n, s = results.n_cases, len(definitions)
    names = [d.name for d in definitions]
    graders: dict[str, list[Any]] = {"kind": [], "id": [], "model": []}
    for d in definitions:
        for key in graders:
            graders[key].append(getattr(d.grader, key) if d.grader else None)
    columns: dict[str, list[Any]] = {k: v * n for k, v in graders.items()}
    for i, g in enumerate(results.grader):
        if g is not None:
            columns["kind"][i], columns["id"][i], columns["model"][i] = g.kind, g.id, g.model
    return pd.DataFrame(
        {
            "case_id": _object(results.case_ids).repeat(s),
            "score": _codes(np.tile(np.arange(s, dtype=np.int16), n), names),
            "status": _codes(results.status, STATUSES),
            "value": results.value.copy(),
            "counted": counted,
            "reason": pd.Categorical(results.reason),
            "message": _object(results.message),
            "rationale": _object(results.rationale),
            "grader_kind": pd.Categorical(columns["kind"]),
            "grader_id": pd.Categorical(columns["id"]),
            "grader_model": pd.Categorical(columns["model"]),
            "derived": np.tile(np.array([d.derived for d in definitions], dtype=bool), n),
            "metadata": _metadata_json(results.metadata),
        },
        columns=SCORE_COLUMNS,
    )


def unscored_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Unscored reasons and error codes per score: `score, status, reason, n`."""
    rest = scores.loc[scores["status"] != "scored", ["score", "status", "reason"]]
    table = (
        rest.groupby(["score", "status", "reason"], observed=True, sort=False)
        .size()
        .reset_index(name="n")
    )
    table = table.sort_values(["score", "n"], ascending=[True, False], kind="stable")
    table["status"] = table["status"].astype(str)
    table["reason"] = table["reason"].astype(str)
    return table.reset_index(drop=True)
