"""A run's data: definitions, input, results, and the tables, summary and headline built from them.

No I/O here: the public `Run` (in `evalbook._api`) adds saving, exporting, rescoring and display.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import format_ci, format_pct
from .._util._text import visible
from ._epochs import reduce_scores, variance_parts
from ._results import Results
from ._scores import ScoreDefinition
from ._scoring import Headline, counted_of, headline_of, summarize
from ._tables import cases_table, scores_table, unscored_table

__all__ = ["RunData"]


class RunData:
    """One evaluation's results: tables, summary and headline (the public `Run` adds I/O)."""

    def __init__(
        self,
        *,
        name: str,
        id: str,
        definitions: Sequence[ScoreDefinition],
        data: pd.DataFrame,
        results: Results,
        options: dict[str, Any] | None = None,
        path: Path | None = None,
    ) -> None:
        self.name = name
        self.id = id
        self.definitions: list[ScoreDefinition] = list(definitions)
        self.data = data
        self.path = path
        self.options = dict(options or {})
        self._results = results

    @cached_property
    def _counted(self) -> np.ndarray:
        return counted_of(self._results, self.definitions)

    @cached_property
    def cases(self) -> pd.DataFrame:
        """One row per sample (case, epoch): input order, then epoch (docs/concepts.md)."""
        return cases_table(self._results)

    @cached_property
    def scores(self) -> pd.DataFrame:
        """The long table: exactly one row per (sample, score)."""
        return scores_table(self._results, self.definitions, self._counted)

    @cached_property
    def _reduced(self) -> pd.DataFrame:
        return reduce_scores(self.scores, self.definitions)

    def reduced(self) -> pd.DataFrame:
        """One row per (case, score): the case's epochs reduced by the score's reducer.

        Columns: `case_id, score, epochs, counted, value, sd, status, reason`
        (docs/repeats.md). With `epochs=1` each case's one value, as counted.
        """
        return self._reduced.copy()

    @cached_property
    def _summary(self) -> pd.DataFrame:
        variance = variance_parts(self.scores, self.definitions)
        return summarize(self._results, self.definitions, self._counted, self._reduced, variance)

    def summary(self) -> pd.DataFrame:
        """One row per score: mean and 95 % CI over cases, and every count of samples."""
        return self._summary.copy()

    @cached_property
    def headline(self) -> Headline:
        """The primary score (or only score, or passed rate) with the completion rate."""
        return headline_of(self._results, self.definitions, self._summary)

    def unscored(self) -> pd.DataFrame:
        """Why records were not scored: `score, status, reason, n`."""
        return unscored_table(self.scores)

    def wide(self) -> pd.DataFrame:
        """One row per sample: `case_id`, `epoch`, `outcome`, then each score's counted value."""
        n, s = self._results.n_samples, len(self.definitions)
        values = self._counted.reshape(n, s)
        table = pd.DataFrame(values, columns=[d.name for d in self.definitions])
        table.insert(0, "outcome", self.cases["outcome"].to_numpy())
        table.insert(0, "epoch", self.cases["epoch"].to_numpy())
        table.insert(0, "case_id", self.cases["case_id"])  # as in `cases` (same RangeIndex)
        return table

    def __repr__(self) -> str:
        r = self._results
        size = f"{r.n_cases} cases" + (f" × {r.epochs} epochs" if r.epochs > 1 else "")
        lines = [f"<Run {self.name!r} · {size} · {self.headline.text}>"]
        for row in self._summary.to_dict("records"):
            ci = format_ci(row["ci_low"], row["ci_high"])
            lines.append(
                f"  {row['score']}: {format_pct(row['mean'])}{' ' + ci if ci else ''}"
                f"  counted {row['counted']} · unscored {row['unscored']} · errors {row['errors']}"
                f" · excluded {row['excluded']}"
            )
        return "\n".join(visible(line) for line in lines)  # a label may hold any text
