"""The public `Run`: a run's data with saving, exporting, rescoring and display."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .._model._attempts import attempts_table
from .._model._definitions import ScoreDefinition
from .._model._run_data import RunData
from .._model._scorers import Scorer
from .._render._run_html import run_html
from .._render._run_plots import RunPlots
from .._runner._rescore import rescore
from .._store._labels import given_labels, label_frame
from .._store._save import save_run
from .._store._table_files import export

__all__ = ["Run", "as_run"]


class Run(RunData):
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

    def save(self, store: str | os.PathLike[str] | None = None) -> Path:
        """Write the run's folder (log, tables, summary) and return its path.

        An in-memory run gets a new folder `<store>/<name>-<timestamp>/` (`store` defaults
        to `runs`) and `.path` is set. A stored run is completed in place (e.g. once a full
        disk has space again), or, given another `store`, written whole into a new folder
        there, and `.path` moves to it.

        Example:
            >>> import pandas as pd, evalbook as eb, tempfile
            >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
            ...              scorers=[lambda output: 1.0], progress=False)
            >>> run.save(tempfile.mkdtemp()) == run.path
            True
        """
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
        return export(self, folder, "csv")

    def to_parquet(self, folder: str | os.PathLike[str]) -> dict[str, Path]:
        """Write `cases.parquet`, `scores.parquet` and `summary.parquet`; return the paths."""
        return export(self, folder, "parquet")

    def rescore(
        self,
        scorers: Sequence[Scorer | Callable[..., Any]] = (),
        scores: Sequence[ScoreDefinition | str] = (),
        *,
        name: str | None = None,
        concurrency: int = 8,
        scorer_timeout: float | None = None,
        progress: bool = True,
    ) -> Run:
        """Score the stored outputs again with new or changed scorers; the task is not called.

        Scores bound to `scorers` are scored anew, derived scores are derived again, the
        other records are kept. The new run is stored in this run's store (in memory if
        this run is). `scorer_timeout=` bounds each scorer and judge call as in `eb.run`:
        one past it gets the error record `scorer_timed_out`.

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> run = eb.run(pd.DataFrame({"x": ["a"]}), task=lambda x: x.upper(),
            ...              scorers=[lambda output: 0.0], store=None, progress=False)
            >>> run.rescore(scorers=[lambda output: 1.0], progress=False).headline.text
            'lambda 100% · completed 100%'
        """
        return as_run(
            rescore(
                self,
                scorers,
                scores,
                name=name,
                concurrency=concurrency,
                scorer_timeout=scorer_timeout,
                progress=progress,
            )
        )

    def attempts(self) -> pd.DataFrame:
        """One row per attempt of every sample: `case_id, epoch, attempt, outcome,
        error_type, error_message, started_at, duration_s` (docs/concepts.md, "Attempts").

        Samples are in the run's order (as `run.cases`), each one's attempts in order; the
        last is the sample's final attempt. A stored run reads them from its log.

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> calls = []
            >>> def task(x):
            ...     calls.append(x)
            ...     if len(calls) == 1:
            ...         raise ConnectionError("reset")
            ...     return x
            >>> run = eb.run(pd.DataFrame({"x": ["a"]}), task=task, attempts=2,
            ...              scorers=[lambda output: 1.0], store=None, progress=False)
            >>> run.attempts()[["attempt", "outcome", "error_type"]]
               attempt  outcome       error_type
            0        1  errored  ConnectionError
            1        2   passed              NaN
        """
        return attempts_table(self._results)

    def labels(self) -> pd.DataFrame:
        """The human labels given to this run's samples (`eb.review`; docs/judges.md).

        One row per (case_id, epoch, score, labeler), its latest label: `case_id, epoch,
        score, label, labeler, labeled_at, note`, then the draw that picked the sample:
        `select, seed, n` (the review's arguments), `candidates` (the samples drawn from),
        `stratum, stratum_size` (a stratified draw's stratum and its size among them); null
        where not known (labels written before draws were recorded, read as a uniform draw).
        `eb.agreement` takes the table as it is and uses the draw for its corrected mean's
        interval. A stored run reads `labels.jsonl` (a damaged line is left out with a
        warning naming file and line); a run without a store has the labels given in this
        session only.

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> run = eb.run(pd.DataFrame({"x": [1]}), task=lambda x: x, store=None,
            ...              scorers=[lambda output: 1.0], progress=False)
            >>> list(run.labels().columns)[:7]
            ['case_id', 'epoch', 'score', 'label', 'labeler', 'labeled_at', 'note']
            >>> list(run.labels().columns)[7:]
            ['select', 'seed', 'n', 'candidates', 'stratum', 'stratum_size']
        """
        return label_frame(given_labels(self))

    def _repr_html_(self) -> str:
        return run_html(self)

    @property
    def plot(self) -> RunPlots:
        """Plotly figures of this run: `run.plot.unscored()`, `run.plot.distribution()`."""
        return RunPlots(self)


# Tables a RunData builds from its records, definitions and options alone (not its data):
# those the store already built (load_run checks the summary.json against them) are kept;
# `_summary` only is when the run is not clustered (the load's check needs no data then)
_BUILT = ("_counted", "cases", "scores", "_reduced", "_summary")


def as_run(data: RunData) -> Run:
    """The public Run over data the runner or the store produced (the same parts, not copies;
    its tables are built on first use, or taken as `data` built them)."""
    if isinstance(data, Run):
        return data
    run = Run(
        name=data.name,
        id=data.id,
        definitions=data.definitions,
        data=data.data,
        results=data.results,
        options=data.options,
        path=data.path,
    )
    built = vars(data)
    vars(run).update({name: built[name] for name in _BUILT if name in built})
    return run
