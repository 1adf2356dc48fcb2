"""The `Run`: one evaluation's results, with tidy tables, summary and headline."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ._results import Results
from ._scores import ScoreDefinition
from ._scoring import Headline, counted_of, format_pct, headline_of, summarize
from ._tables import cases_table, scores_table, unscored_table

if TYPE_CHECKING:
    import os
    from collections.abc import Callable

    from ._scorers import Scorer
    from .display._plots import RunPlots

__all__ = ["Run"]


class Run:
    """The result of `eb.run()`: tables, summary and headline of one evaluation.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> df = pd.DataFrame({"question": ["1+1", "2+2"], "expected": ["2", "4"]})
        >>> run = eb.run(df, task=lambda question: str(eval(question)),
        ...              scorers=[lambda output, expected: float(output == expected)],
        ...              store=None, progress=False)
        >>> run.headline.text
        'lambda 100% · completed 100%'
    """

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

    # -- tables ---------------------------------------------------------------------------

    @cached_property
    def _counted(self) -> np.ndarray:
        return counted_of(self._results, self.definitions)

    @cached_property
    def cases(self) -> pd.DataFrame:
        """One row per case, in input order (DESIGN §5)."""
        return cases_table(self._results)

    @cached_property
    def scores(self) -> pd.DataFrame:
        """The long table: exactly one row per (case, score)."""
        return scores_table(self._results, self.definitions, self._counted)

    @cached_property
    def _summary(self) -> pd.DataFrame:
        return summarize(self._results, self.definitions, self._counted)

    def summary(self) -> pd.DataFrame:
        """One row per score: mean, 95 % CI and every count."""
        return self._summary.copy()

    @cached_property
    def headline(self) -> Headline:
        """The primary score (or only score, or passed rate) with the completion rate."""
        return headline_of(self._results, self.definitions, self._summary)

    def unscored(self) -> pd.DataFrame:
        """Why records were not scored: `score, status, reason, n`."""
        return unscored_table(self.scores)

    def wide(self) -> pd.DataFrame:
        """One row per case: `case_id`, `outcome`, then the counted value of each score."""
        n, s = self._results.n_cases, len(self.definitions)
        values = self._counted.reshape(n, s)
        table = pd.DataFrame(values, columns=[d.name for d in self.definitions])
        table.insert(0, "outcome", self.cases["outcome"].to_numpy())
        # object, as in `cases`: an id may hold text pandas' `str` dtype rejects (surrogates)
        ids = pd.Series(self.cases["case_id"].to_numpy(), dtype=object, copy=False)
        table.insert(0, "case_id", ids)
        return table

    # -- store (evalbook._store; docs/file-formats.md) -----------------------------------

    def save(self, store: str | os.PathLike[str] = "runs") -> Path:
        """Write the run's folder (log, tables, summary) and return its path.

        A stored run is completed in place (e.g. after a full disk); an in-memory run gets
        a new folder `<store>/<name>-<timestamp>/` and `.path` is set.

        Example:
            >>> import pandas as pd, evalbook as eb, tempfile
            >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
            ...              scorers=[lambda output: 1.0], progress=False)
            >>> run.save(tempfile.mkdtemp()) == run.path
            True
        """
        from ._save import save_run

        return save_run(self, store)

    def to_csv(self, folder: str | os.PathLike[str]) -> dict[str, Path]:
        """Write `cases.csv`, `scores.csv` and `summary.csv` into `folder`; return the paths.

        Example:
            >>> import pandas as pd, evalbook as eb, tempfile
            >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
            ...              scorers=[lambda output: 1.0], progress=False)
            >>> sorted(run.to_csv(tempfile.mkdtemp()))
            ['cases', 'scores', 'summary']
        """
        from ._tablefiles import export

        return export(self, folder, "csv")

    def to_parquet(self, folder: str | os.PathLike[str]) -> dict[str, Path]:
        """Write `cases.parquet`, `scores.parquet` and `summary.parquet`; return the paths."""
        from ._tablefiles import export

        return export(self, folder, "parquet")

    def rescore(
        self,
        scorers: Sequence[Scorer | Callable[..., Any]] = (),
        scores: Sequence[ScoreDefinition | str] = (),
        *,
        name: str | None = None,
        concurrency: int = 8,
        progress: bool = True,
    ) -> Run:
        """Score the stored outputs again with new or changed scorers; the task is not called.

        Scores bound to `scorers` are scored anew, derived scores are derived again, the
        other records are kept. The new run is stored in this run's store (in memory if
        this run is).

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> run = eb.run(pd.DataFrame({"x": ["a"]}), task=lambda x: x.upper(),
            ...              scorers=[lambda output: 0.0], store=None, progress=False)
            >>> run.rescore(scorers=[lambda output: 1.0], progress=False).headline.text
            'lambda 100% · completed 100%'
        """
        from ._rescore import rescore

        return rescore(self, scorers, scores, name=name, concurrency=concurrency, progress=progress)

    # -- display (imported lazily: evalbook.display) -------------------------------------

    def _repr_html_(self) -> str:
        from .display import run_html

        return run_html(self)

    @property
    def plot(self) -> RunPlots:
        """Plotly figures of this run: `run.plot.unscored()`, `run.plot.distribution()`."""
        from .display._plots import RunPlots

        return RunPlots(self)

    # -- text -----------------------------------------------------------------------------

    def __repr__(self) -> str:
        from .display._style import visible  # lone surrogates (e.g. in a label) as escapes

        lines = [f"<Run {self.name!r} · {self._results.n_cases} cases · {self.headline.text}>"]
        for row in self._summary.to_dict("records"):
            mean = float(row["mean"])
            ci = (
                ""
                if np.isnan(mean)
                else f" [{format_pct(float(row['ci_low']))}, {format_pct(float(row['ci_high']))}]"
            )
            lines.append(
                f"  {row['score']}: {format_pct(None if np.isnan(mean) else mean)}{ci}"
                f"  counted {row['counted']} · unscored {row['unscored']} · errors {row['errors']}"
                f" · excluded {row['excluded']}"
            )
        return visible("\n".join(lines))
