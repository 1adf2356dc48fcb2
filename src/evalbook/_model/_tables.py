"""Tidy pandas tables built from a run's columns (docs/concepts.md)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ._contract import STATUSES
from ._definitions import ScoreDefinition
from ._origin import ORIGINS, origin_codes
from ._results import OUTCOMES, PENDING, Results
from ._usage_tables import sample_amounts

__all__ = [
    "CASE_COLUMNS",
    "SCORE_COLUMNS",
    "STEP_COUNT_COLUMNS",
    "cases_table",
    "scores_table",
    "sparse_categorical",
    "text_column",
    "timestamp_ns",
    "timestamps",
    "unscored_table",
]

# `run.cases` has these after CASE_COLUMNS when any sample has a transcript (`Results.steps`)
STEP_COUNT_COLUMNS = ["n_steps", "n_tool_calls", "n_tool_errors"]
CASE_COLUMNS = [
    "case_id",
    "epoch",
    "outcome",
    "attempts",
    "output",
    "error_type",
    "error_message",
    "origin",
    "started_at",
    "duration_s",
    "input_tokens",
    "output_tokens",
    "cost",
]
SCORE_COLUMNS = [
    "case_id",
    "epoch",
    "score",
    "status",
    "value",
    "counted",
    "reason",
    "message",
    "origin",
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
    # fromiter stores each item as it is (lists stay lists) and is ~5× faster than np.array
    return np.fromiter(values, dtype=object, count=len(values))


def text_column(values: list[Any]) -> pd.Series[Any]:
    """Free text (or arbitrary objects) as an object column, None where missing, no inference."""
    return pd.Series(_object(values), dtype=object, copy=False)


def _present(values: np.ndarray) -> np.ndarray:
    """Indices of the entries that are not None (most record columns are mostly None)."""
    mask: np.ndarray = values != None  # noqa: E711 - elementwise comparison with None
    return np.flatnonzero(mask)


def _sparse(values: list[Any], touched: np.ndarray | None) -> np.ndarray:
    """A record column as an object array, reading only the touched entries when known."""
    if touched is None:
        return _object(values)
    out = np.full(len(values), None, dtype=object)
    if touched.size:
        out[touched] = np.fromiter((values[i] for i in touched), dtype=object, count=touched.size)
    return out


def _text_categorical(codes: np.ndarray, categories: list[str]) -> pd.Categorical[str]:
    """A categorical of text (code -1: missing)."""
    return pd.Categorical.from_codes(codes, categories=pd.Index(categories, dtype=object))


def sparse_categorical(values: list[Any], touched: np.ndarray | None = None) -> pd.Categorical[str]:
    """A categorical of a mostly-None column, factorising only the present entries."""
    if values.count(None) == len(values):  # e.g. error_type when nothing failed
        return _text_categorical(np.full(len(values), -1, dtype=np.int32), [])
    arr = _sparse(values, touched)
    idx = _present(arr if touched is None else arr[touched])
    if touched is not None:
        idx = touched[idx]
    codes = np.full(len(values), -1, dtype=np.int32)
    uniques: list[str] = []
    if idx.size:
        sub_codes, cats = pd.factorize(arr[idx])
        codes[idx] = sub_codes
        uniques = [str(c) for c in cats]
    return _text_categorical(codes, uniques)


def timestamps(seconds: np.ndarray[Any, np.dtype[np.float64]]) -> pd.DatetimeIndex:
    """Unix seconds (taken in whole µs; NaN: not started) as UTC timestamps, exactly.

    Converting through integer microseconds (not `unit="s"` floats) keeps the conversion
    exact, so tables read back from the store's Parquet files equal the original ones.
    """
    return pd.DatetimeIndex(timestamp_ns(seconds).view("M8[ns]")).tz_localize("UTC")


def timestamp_ns(seconds: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray:
    """Unix seconds (whole µs) as int64 nanoseconds, exactly; NaN becomes NaT's value."""
    ns = np.full(seconds.shape, np.iinfo(np.int64).min, dtype=np.int64)  # NaT
    taken = ~np.isnan(seconds)
    ns[taken] = np.round(seconds[taken] * 1e6).astype(np.int64) * 1000
    return ns


def cases_table(results: Results) -> pd.DataFrame:
    """One row per sample (case, epoch): input order, then epoch.

    With transcripts, `n_steps, n_tool_calls, n_tool_errors` follow (`STEP_COUNT_COLUMNS`).
    The token and cost columns add up each sample's recorded usage; NaN where no call
    reported the amount (never 0 by default).
    """
    tokens_in, tokens_out, cost = sample_amounts(results)
    frame = pd.DataFrame(
        {
            "case_id": text_column(results.sample_case_ids()),
            "epoch": results.sample_epochs(),
            "outcome": _codes(results.outcome, OUTCOMES),  # -1 (not run) becomes NaN
            "attempts": results.attempts.copy(),
            "output": text_column(results.output),
            "error_type": sparse_categorical(results.error_type),
            "error_message": text_column(results.error_message),
            "origin": _codes(origin_codes(results.origin), ORIGINS),
            "started_at": timestamps(results.started_at),
            "duration_s": results.duration_s.copy(),
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "cost": cost,
        },
        columns=CASE_COLUMNS,
    )
    if results.has_transcripts:
        # counts of the samples' transcripts; <NA> for a sample without one (never 0)
        for k, name in enumerate(STEP_COUNT_COLUMNS):
            counts = results.steps[:, k]
            frame[name] = pd.array(np.where(counts < 0, 0, counts), dtype="Int64")
            frame.loc[counts < 0, name] = pd.NA
    return frame


def _metadata_json(
    items: list[dict[str, Any] | None], touched: np.ndarray | None
) -> pd.Series[Any]:
    arr = _sparse(items, touched)
    out = np.full(len(items), None, dtype=object)
    for i in _present(arr) if touched is None else touched:
        if arr[i] is not None:
            out[i] = json.dumps(arr[i], ensure_ascii=False, default=repr)
    return pd.Series(out, dtype=object, copy=False)


def _grader_columns(
    results: Results, definitions: Sequence[ScoreDefinition], touched: np.ndarray | None
) -> dict[str, pd.Categorical[str]]:
    """grader_kind/id/model: the definition's grader, unless a record names its own."""
    n, s = results.n_samples, len(definitions)
    graders = _sparse(results.grader, touched)
    overrides = _present(graders if touched is None else graders[touched])
    if touched is not None:
        overrides = touched[overrides]
    columns: dict[str, pd.Categorical[str]] = {}
    for key in ("kind", "id", "model"):
        per_def = [getattr(d.grader, key) if d.grader else None for d in definitions]
        extra = [getattr(graders[i], key) for i in overrides]
        cats = list(dict.fromkeys(v for v in [*per_def, *extra] if v is not None))
        lookup = {v: c for c, v in enumerate(cats)}
        def_codes = np.array([lookup.get(v, -1) if v is not None else -1 for v in per_def])
        codes = np.tile(def_codes.astype(np.int32), n) if s else np.zeros(0, dtype=np.int32)
        for i, v in zip(overrides, extra, strict=True):
            codes[i] = -1 if v is None else lookup[v]
        columns[key] = _text_categorical(codes, cats)
    return columns


def _status_codes(results: Results, n_scores: int) -> np.ndarray:
    """Each record's status code; -1 (missing) for the records of samples that never ran."""
    codes = results.status.astype(np.int16)
    codes[np.repeat(results.outcome == PENDING, n_scores)] = -1
    return codes


def scores_table(
    results: Results, definitions: Sequence[ScoreDefinition], counted: np.ndarray
) -> pd.DataFrame:
    """Exactly n_cases × epochs × n_scores rows: input order, then epoch, then definition order.

    `case_id` is a categorical here (the ids, in input order, are its categories): the long
    table repeats each id once per epoch and score.
    """
    n, s = results.n_samples, len(definitions)
    touched = None if results.touched is None else np.sort(np.array(results.touched, np.intp))
    graders = _grader_columns(results, definitions, touched)
    case_codes = np.repeat(np.arange(results.n_cases, dtype=np.int32), results.epochs * s)
    return pd.DataFrame(
        {
            "case_id": _text_categorical(case_codes, results.case_ids),
            "epoch": np.repeat(results.sample_epochs(), s),
            "score": _codes(
                np.tile(np.arange(s, dtype=np.int16), n), [d.name for d in definitions]
            ),
            "status": _codes(_status_codes(results, s), STATUSES),
            "value": results.value.copy(),
            "counted": counted,
            "reason": sparse_categorical(results.reason, touched),
            "message": pd.Series(_sparse(results.message, touched), dtype=object, copy=False),
            "origin": _codes(origin_codes(results.rec_origin), ORIGINS),
            "rationale": pd.Series(_sparse(results.rationale, touched), dtype=object, copy=False),
            "grader_kind": graders["kind"],
            "grader_id": graders["id"],
            "grader_model": graders["model"],
            "derived": np.tile(np.array([d.derived for d in definitions], dtype=bool), n),
            "metadata": _metadata_json(results.metadata, touched),
        },
        columns=SCORE_COLUMNS,
    )


def unscored_table(scores: pd.DataFrame) -> pd.DataFrame:
    """Unscored reasons and error codes per score: `score, status, reason, n`.

    Reasons are grouped by their categorical codes and put back as an object column (the
    reasons' text, as in the other tables).
    """
    rest = scores.loc[scores["status"] != "scored", ["score", "status", "reason"]]
    reason = rest["reason"].astype("category")  # a categorical already, unless read otherwise
    codes = reason.cat.codes.to_numpy()
    keyed = pd.DataFrame({"score": rest["score"].array, "status": rest["status"].array})
    keyed["reason"] = codes
    table = (
        keyed[codes >= 0]
        .groupby(["score", "status", "reason"], observed=True, sort=False)
        .size()
        .reset_index(name="n")
    )
    table = table.sort_values(["score", "n"], ascending=[True, False], kind="stable")
    table["status"] = table["status"].astype(str)  # the fixed codes scored/unscored/error
    reasons = np.asarray(reason.cat.categories, dtype=object)[table["reason"].to_numpy(np.intp)]
    table["reason"] = pd.Series(reasons, index=table.index, dtype=object)
    return table.reset_index(drop=True)
