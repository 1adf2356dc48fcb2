"""A run as the terminal shows it (`run`, `show`, `import`, `demo`), and the footer under a
sliced table (`show`, `compare`)."""

from __future__ import annotations

import pandas as pd

from .._api._run import Run
from .._model._origin import infra_warning
from .._render._style import outcome_label
from .._util._fmt import format_count
from ._terminal import (
    Out,
    for_terminal,
    is_small,
    small_note,
    summary_table,
    unscored_table_text,
    usage_lines,
    usage_source_table,
)

__all__ = ["print_run", "slice_footer"]


def print_run(
    out: Out, run: Run, *, breakdown: bool, by: list[str] | None = None, cluster: str | None = None
) -> None:
    """A run's title, headline, summary table (and breakdown), and where it is stored.

    With `by` the table has one row per (slice, score) (`run.summary(by=...)`); with
    `cluster` its intervals are cluster-robust and it shows the clusters.
    """
    sliced = by or cluster is not None
    # computed first: a --by or --cluster column that is not in the data is an error before
    # anything is printed
    summary = run.summary(by=by or None, cluster=cluster) if sliced else run.summary()
    h = run.headline
    n = h.n_samples
    size = f"{h.n_cases} case{'s' if h.n_cases != 1 else ''}"
    if h.epochs > 1:
        size += f" × {h.epochs} epochs"
    out.line(f"{for_terminal(run.name)} · {size} · id {for_terminal(run.id)}", "dim")
    out.line(for_terminal(run.headline.text), "bold")
    where = None if run.path is None else str(run.path)
    alarm = infra_warning(h.outside_model, h.infra_share, where)
    if alarm is not None:
        out.line(f"warning: {for_terminal(alarm)}", "yellow")
    out.lines(usage_lines(run))  # the cost line (none without usage)
    out.line()
    out.lines(summary_table(summary, by or (), clusters=cluster is not None))
    if sliced:
        what = "counted cases" + (" (or clusters)" if cluster is not None else "")
        slice_footer(out, summary, by or [], cluster, what)
    if breakdown:
        counts = run.headline.counts
        outcomes = " · ".join(f"{outcome_label(k)} {format_count(v)}" for k, v in counts.items())
        pending = n - sum(counts.values())
        out.line()
        out.line(f"outcomes: {outcomes}" + (f" · not run {pending}" if pending > 0 else ""))
        lines = unscored_table_text(run.unscored())
        if lines:
            out.line()
            out.line("unscored and error records:")
            out.lines(lines)
        sources = usage_source_table(run)
        if sources:
            out.line()
            out.line("usage by source:")
            out.lines(sources)
    out.line()
    if run.path is not None:
        out.line(f"stored: {run.path}")
    else:
        out.line("not stored (in memory only)")


def slice_footer(
    out: Out, summary: pd.DataFrame, by: list[str], cluster: str | None, what: str
) -> None:
    """Under a sliced table: how many slices, what `small` means, what the clusters are."""
    if by:
        n = len(summary[by].drop_duplicates())
        names = ", ".join(for_terminal(c) for c in by)
        out.line(f"sliced by {names}: {n} slice{'s' if n != 1 else ''}")
        if "small" in summary.columns:
            flagged = bool(summary["small"].astype(bool).any())
        else:
            flagged = "n_clusters" in summary.columns and any(map(is_small, summary["n_clusters"]))
        if flagged:
            out.line(small_note(f"{what} in the slice"))
    if cluster is not None:
        out.line(
            f"intervals clustered by {for_terminal(cluster)} (cluster-robust SE, t on clusters − 1)"
        )
