"""A run's data: definitions, input, results, and the tables, summary and headline built from them.

No I/O here: the public `Run` (in `evalbook._api`) adds saving, exporting, rescoring and display.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import counts_line, format_ci, format_pct, refused_note, usage_line
from .._util._text import visible
from .._util._warn import warn
from ._definitions import ScoreDefinition
from ._epochs import reduce_scores, variance_parts
from ._judge_stats import judge_stats
from ._labels import Label
from ._results import PENDING, Results
from ._scoring_rule import SUMMARY_COLUMNS, Headline, counted_of, headline_of, summarize
from ._slices import cluster_codes, slices_of
from ._step_tables import steps_table, tool_calls_table
from ._stop_rules import STOPPED_EARLY, stop_text
from ._tables import cases_table, scores_table, unscored_table
from ._usage_tables import usage_summary, usage_table

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
        # labels given to a run without a store (`eb.review`): kept here, in memory only
        self.memory_labels: list[Label] = []

    @property
    def results(self) -> Results:
        """The run's records, column-wise (`Results`): what the store writes, other layers read."""
        return self._results

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
        table = scores_table(self._results, self.definitions, self._counted)
        if self._stopped_early():  # a sample an early stop kept from running says so
            pending = np.repeat(self._results.outcome == PENDING, len(self.definitions))
            reason = table["reason"]
            if isinstance(reason.dtype, pd.CategoricalDtype):
                if STOPPED_EARLY not in reason.cat.categories:
                    reason = reason.cat.add_categories([STOPPED_EARLY])
                reason = reason.copy()
                reason[pending] = STOPPED_EARLY
            else:
                reason = reason.where(~pending, STOPPED_EARLY)
            table["reason"] = reason
        return table

    def _stopped_early(self) -> bool:
        """Whether an early stop (`stop_when=`) decided, leaving samples `stopped_early`."""
        stopped = self.options.get("stopped") if isinstance(self.options, dict) else None
        return isinstance(stopped, dict) and stopped.get("decision") not in (None, "undecided")

    @cached_property
    def _steps(self) -> pd.DataFrame:
        read = self._results.steps_file
        frame = None if read is None else read()
        return steps_table(self._results) if frame is None else frame

    def steps(self) -> pd.DataFrame:
        """One row per (case_id, epoch, step) of the samples' transcripts (docs/transcripts.md).

        Columns: `case_id, epoch, step, role, content, tool_name, tool_call_id, tool_args,
        error, model, input_tokens, output_tokens, cost, latency_s`; a sample without a
        transcript has no rows. A stored run reads its transcripts here, on first use.
        """
        return self._steps.copy()

    @cached_property
    def _tool_calls(self) -> pd.DataFrame:
        return tool_calls_table(self._results)

    def tool_calls(self) -> pd.DataFrame:
        """One row per tool call of the samples' transcripts (docs/transcripts.md).

        Columns: `case_id, epoch, step, call_id, tool_name, tool_args, result_step, ok,
        error, latency_s`; `result_step` is NaN and `ok` False where no result came.
        """
        return self._tool_calls.copy()

    def transcript(self, case_id: str, epoch: int = 1) -> Any:
        """The transcript of one sample (an `eb.Transcript`), None when it has none."""
        r = self._results
        try:
            case = r.case_ids.index(case_id)
        except ValueError:
            raise KeyError(f"no case {case_id!r} in run {self.name!r}") from None
        if not 1 <= epoch <= r.epochs:
            raise KeyError(f"run {self.name!r} has epochs 1..{r.epochs}, not {epoch}")
        return r.transcript_of(case * r.epochs + epoch - 1)

    @cached_property
    def _reduced(self) -> pd.DataFrame:
        reduced = reduce_scores(self.scores, self.definitions)
        if self._stopped_early() and self._results.epochs == 1:  # one row per (case, score)
            pending = np.repeat(self._results.outcome == PENDING, len(self.definitions))
            reason = reduced["reason"].cat.add_categories([STOPPED_EARLY])
            reduced["reason"] = reason.where(~pending, STOPPED_EARLY)
        return reduced

    def reduced(self) -> pd.DataFrame:
        """One row per (case, score): the case's epochs reduced by the score's reducer.

        Columns: `case_id, score, epochs, counted, value, sd, status, reason`
        (docs/repeats.md). With `epochs=1` each case's one value, as counted.
        """
        return self._reduced.copy()

    @cached_property
    def _summary(self) -> pd.DataFrame:
        return self._summary_of(None, self._cluster_column(None))

    def _cluster_column(self, cluster: str | bool | None) -> str | None:
        """The column `summary(cluster=...)` clusters by: None is the run's own default."""
        if cluster is False:
            return None
        if cluster is not None:
            return cluster  # type: ignore[return-value]  # cluster_codes checks it
        default = self.options.get("cluster")
        if default is None:
            return None
        if default not in self.data.columns:
            # the run's intervals cannot be clustered without the column: say so, once
            # (the cached summary), rather than fail every view of a stored run
            warn(
                f"run {self.name!r} is clustered by {default!r} (eb.run(cluster=)), but its "
                "data has no such column (a run loaded without its data.parquet?): its "
                "intervals are not clustered",
                RuntimeWarning,
            )
            return None
        return str(default)

    def _summary_of(self, by: Any, cluster: str | None) -> pd.DataFrame:
        r = self._results
        slices = None if by is None else slices_of(self.data, by, r.n_cases, SUMMARY_COLUMNS)
        clusters = None if cluster is None else cluster_codes(self.data, cluster, r.n_cases)
        n_slices = 1 if slices is None else slices.count
        if r.epochs > 1:
            codes = None if slices is None else slices.codes
            variance = variance_parts(self.scores, self.definitions, codes, n_slices)
        else:  # shown only with epochs >= 2: not computed otherwise
            variance = pd.DataFrame(columns=["var_between", "var_within"])
        return summarize(
            r,
            self.definitions,
            self._counted,
            self._reduced,
            variance,
            slices=slices,
            clusters=clusters,
        )

    def summary(
        self, by: str | Sequence[str] | None = None, cluster: str | bool | None = None
    ) -> pd.DataFrame:
        """One row per score: mean and 95 % CI over cases, and every count of samples.

        Args:
            by: A column of the input data (`run.data`), or a list of them: one row per
                (slice, score) instead, the slice columns first, slices in order of first
                appearance. Each slice's mean and CI are over its cases' reduced values,
                its counts of its samples: the rule of the whole run, per slice (never
                pooled). A missing value (NaN, None) is a slice of its own.
            cluster: A column of the input data whose cases are not independent (e.g.
                questions on one passage): the CI is the cluster-robust t on C − 1
                degrees of freedom (docs/statistics.md), `n_clusters` counts the clusters.
                None uses the run's own (`eb.run(cluster=)`, `run.options["cluster"]`);
                False turns it off (each case its own cluster).

        Raises:
            ConfigurationError: a column that is not in the run's data (or a run loaded
                without its data.parquet).

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> df = pd.DataFrame({"q": ["a", "b", "c"], "topic": ["x", "y", "x"]})
            >>> run = eb.run(df, task=lambda q: q, scorers=[lambda output: float(output < "c")],
            ...              store=None, progress=False)
            >>> run.summary(by="topic")[["topic", "score", "mean", "n_cases"]]
              topic   score  mean  n_cases
            0     x  lambda   0.5        2
            1     y  lambda   1.0        1
        """
        if by is None and (
            cluster is None or (cluster is False and not self.options.get("cluster"))
        ):
            return self._summary.copy()  # the run's own (unclustered when it has no cluster)
        return self._summary_of(by, self._cluster_column(cluster))

    @cached_property
    def headline(self) -> Headline:
        """The primary score (or only score, or passed rate) with the completion rate."""
        headline = headline_of(self._results, self.definitions, self._summary)
        stopped = self.options.get("stopped") if isinstance(self.options, dict) else None
        text = stop_text(stopped)
        if text is None or not isinstance(stopped, dict) or stopped["decision"] == "undecided":
            return headline
        ran = sum(headline.counts.values())
        done = headline.counts.get("passed", 0) + headline.counts.get("failed", 0)
        return dataclasses.replace(
            headline,
            stopped=text,
            stopped_early=headline.n_samples - ran,
            completion=done / ran if ran else None,
        )

    def unscored(self) -> pd.DataFrame:
        """Why records were not scored: `score, status, reason, n`."""
        return unscored_table(self.scores)

    def usage(self) -> pd.DataFrame:
        """What the samples' model calls used: one row per (case, epoch, source).

        Columns: `case_id, epoch, source` ("task" or the judge's score name), `calls,
        cached_calls, input_tokens, output_tokens, cost` (NaN where unknown), `retries,
        invalid` (why a call's usage was refused, else None). Samples that recorded nothing
        have no row (docs/cost.md).

        Example:
            >>> import pandas as pd, evalbook as eb
            >>> def task(q, ctx):
            ...     ctx.record_usage(input_tokens=120, output_tokens=30, cost=0.002)
            ...     return q
            >>> run = eb.run(pd.DataFrame({"q": ["a"]}), task=task, store=None, progress=False)
            >>> run.usage()[["case_id", "source", "calls", "input_tokens", "cost"]]
              case_id source  calls  input_tokens   cost
            0       0   task      1         120.0  0.002
        """
        return usage_table(self._results)

    @cached_property
    def _usage_summary(self) -> pd.DataFrame:
        return usage_summary(self._results)

    def usage_summary(self) -> pd.DataFrame:
        """One row: `calls, cached_calls, input_tokens, output_tokens, cost` (totals of known
        amounts), `cost_per_case` with `cost_ci_low, cost_ci_high`, `latency_p50_s,
        latency_p95_s`, `n_cost_known`, `retries` (docs/cost.md)."""
        return self._usage_summary.copy()

    def judge_stats(self) -> pd.DataFrame:
        """One row per judge score: `score, calls, invalid, retried, position_flip_rate`
        (NaN unless pairwise in both orders), `retries`, from the records' metadata;
        a judge score is one whose records carry a judge's `votes` (docs/judges.md)."""
        return judge_stats(self._results, self.definitions)

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
        h = self.headline  # the cost line as the headline card spells it (_render/_cost.py)
        totals = {str(k): v for k, v in self._usage_summary.iloc[0].items()}
        cost = usage_line(
            totals, ran=sum(h.counts.values()), unit="sample" if r.epochs > 1 else "case"
        )
        if cost:
            lines.append(f"  {cost}")
            note = refused_note(self.usage()["invalid"].tolist())
            lines.extend([f"  ! {note}"] if note else [])
        for row in self._summary.to_dict("records"):
            ci = format_ci(row["ci_low"], row["ci_high"])
            lines.append(
                f"  {row['score']}: {format_pct(row['mean'])}{' ' + ci if ci else ''}"
                f"  {counts_line({str(k): v for k, v in row.items()})}"
            )
        return "\n".join(visible(line) for line in lines)  # a label may hold any text
