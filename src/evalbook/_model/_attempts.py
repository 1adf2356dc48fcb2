"""`run.attempts()`: one row per attempt of every sample (docs/concepts.md, "Attempts").

A sample's attempts come from `Results.tries` (`Finished.tries`: kept by the engine when a
sample had more than one, and logged on its `case.ended` line). Where a sample had several
attempts but no source kept them (a log written before evalbook logged them, an imported
run), its earlier attempts are rows whose outcome, error and times are not known; its last
row is the sample's final outcome and error. A sample's first attempt starts when the
sample does, and a sample with one attempt is that attempt, its duration the sample's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ._results import OUTCOMES, PENDING, Results
from ._tables import sparse_categorical, text_column, timestamps

__all__ = ["ATTEMPT_COLUMNS", "attempts_table"]

ATTEMPT_COLUMNS = [
    "case_id",
    "epoch",
    "attempt",
    "outcome",
    "error_type",
    "error_message",
    "started_at",
    "duration_s",
]


def attempts_table(results: Results) -> pd.DataFrame:
    """One row per (case, epoch, attempt): samples in the run's order, then attempt order.

    A sample not run (no final outcome) has no attempt, nor one whose outputs came from
    `output_column=` (`attempts` 0), so the table has `cases.attempts.sum()` rows.
    """
    counts = results.attempts.astype(np.int64)
    counts[results.outcome == PENDING] = 0
    total = int(counts.sum())
    sample = np.repeat(np.arange(results.n_samples), counts)
    first = np.cumsum(counts) - counts  # the row of each sample's first attempt
    attempt = np.arange(total, dtype=np.int64) - np.repeat(first, counts) + 1
    ran = counts > 0
    last_rows = (first + counts - 1)[ran]
    firsts = first[ran]

    outcome = np.full(total, PENDING, dtype=np.int16)
    outcome[last_rows] = results.outcome[ran]
    error_type = np.full(total, None, dtype=object)
    error_message = np.full(total, None, dtype=object)
    error_type[last_rows] = _pick(results.error_type, ran)
    error_message[last_rows] = _pick(results.error_message, ran)
    started = np.full(total, np.nan)
    started[firsts] = results.started_at[ran]  # the sample starts with its first attempt
    duration = np.full(total, np.nan)
    single = ran & (counts == 1)
    duration[first[single]] = results.duration_s[single]

    for pos, tries in enumerate(results.tries):  # the samples whose attempts were kept
        if tries is None or len(tries) != counts[pos]:
            continue  # counts[pos] is 0 for a sample not run: nothing of it is shown
        row = int(first[pos])
        for i, t in enumerate(tries):
            outcome[row + i] = t.outcome
            error_type[row + i] = t.error_type
            error_message[row + i] = t.error_message
            started[row + i] = t.started_at
            duration[row + i] = t.duration_s

    ids = np.asarray(results.sample_case_ids(), dtype=object)
    return pd.DataFrame(
        {
            "case_id": text_column(ids[sample].tolist()),
            "epoch": results.sample_epochs()[sample],
            "attempt": attempt.astype(np.int32),
            "outcome": pd.Categorical.from_codes(outcome, categories=pd.Index(OUTCOMES)),
            "error_type": sparse_categorical(error_type.tolist()),  # as in run.cases
            "error_message": text_column(error_message.tolist()),
            "started_at": timestamps(started),
            "duration_s": duration,
        },
        columns=ATTEMPT_COLUMNS,
    )


def _pick(values: list[str | None], where: np.ndarray) -> np.ndarray:
    """`values` at the positions where `where` is true, as an object array."""
    out = np.empty(len(values), dtype=object)
    out[:] = values
    picked: np.ndarray = out[where]
    return picked
