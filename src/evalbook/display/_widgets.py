"""Interactive views (ipywidgets; imported lazily, only by `eb.show`).

Each view's display bundle carries the live widget *and* the static HTML and a text summary,
so a notebook opened without a kernel (nbconvert, GitHub, a viewer without widget support)
still shows the results (`_widget_base._Static`). The run view's Case table tab is
`_case_table_widget.CaseTable`; a list of runs is `_board.BoardView` (no widget).
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w
import numpy as np
import pandas as pd

from .._model._run_data import RunData
from .._render._cases import (
    ALL,
    CaseFilter,
    case_count,
    case_html,
    case_strips,
    epochs_of,
    filter_cases,
)
from .._render._compare_html import (
    comparison_html,
    comparison_names,
    comparison_text,
    warnings_html,
)
from .._render._cost import case_usage_labels
from .._render._diff import case_output, output_diff_html, score_changes_html
from .._render._run_html import (
    consistency_html,
    run_cards_html,
    run_header_html,
    run_html,
    unscored_html,
)
from .._render._run_slices import scores_tab_html, slice_columns
from .._render._style import MUTED, esc, root, shorten
from .._render._transcript_html import sample_transcript, transcript_pair_html
from .._util._fmt import format_num, format_pp
from .._util._text import visible
from ._board import board_view
from ._case_table_widget import CaseTable
from ._widget_base import LABEL_LIMIT as _LABEL_LIMIT
from ._widget_base import NONE as _NONE
from ._widget_base import OUTCOMES as _OUTCOMES
from ._widget_base import STATUSES as _STATUSES
from ._widget_base import Static, html_output, list_output, whole_toggle

__all__ = ["show"]

_MAX_OPTIONS = 500
# "changed" (every change but "same") is the comparison's default filter: what a reader looks for
_CHANGED = "changed"
_CHANGES = [_CHANGED, ALL, "improved", "regressed", "same", "only_a", "only_b"]


class CaseExplorer(w.VBox):  # type: ignore[misc]
    """Filter a run's cases by outcome, score status and value range; show one in full."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        names = [d.name for d in run.definitions]
        labels = {d.name: d.display_label() for d in run.definitions}
        small = w.Layout(width="190px")
        self.outcome = w.Dropdown(options=_OUTCOMES, value=ALL, description="outcome", layout=small)
        self.score = w.Dropdown(
            options=[(visible(f"{labels[n]} ({n})" if labels[n] != n else n), n) for n in names],
            value=names[0] if names else None,
            description="score",
            layout=w.Layout(width="280px"),
        )
        self.status = w.Dropdown(options=_STATUSES, value=ALL, description="status", layout=small)
        self.range = w.FloatRangeSlider(
            value=(0.0, 1.0), min=0.0, max=1.0, step=0.05, description="value", readout_format=".2f"
        )
        self.count = html_output("")
        self.cases = w.Select(options=[], rows=10, layout=w.Layout(width="100%"))
        self.detail = html_output("")
        self.whole = whole_toggle()
        for control in (self.outcome, self.score, self.status, self.range):
            control.observe(self._refresh, names="value")
        self.cases.observe(self._show_case, names="value")
        self.whole.observe(lambda _: self._show_case(self.cases.value), names="value")
        filters = w.HBox(
            [self.outcome, self.score, self.status, self.range, self.whole],
            layout=w.Layout(flex_flow="row wrap"),
        )
        super().__init__([filters, self.count, self.cases, self.detail])
        self._refresh()

    @property
    def filter(self) -> CaseFilter:
        """The current filter values."""
        low, high = self.range.value
        return CaseFilter(
            outcome=self.outcome.value,
            score=self.score.value,
            status=self.status.value,
            low=float(low),
            high=float(high),
        )

    def _refresh(self, _change: Any = None) -> None:
        positions = filter_cases(self.run, self.filter)
        self.positions = positions
        cases = self.run.cases
        k = epochs_of(self.run)
        names = [d.name for d in self.run.definitions]
        listed = positions[:_MAX_OPTIONS]
        values: np.ndarray | None = None
        strips = [""] * len(listed)
        if self.score.value in names and k > 1:
            # a case's entry: its epoch strip and its reduced value (one row per case, score)
            j = names.index(self.score.value)
            values = self.run.reduced()["value"].to_numpy()[j :: len(names)]
            strips = [f" · {strip}" for strip in case_strips(self.run, self.score.value, listed)]
        elif self.score.value in names:
            j = names.index(self.score.value)
            values = self.run.scores["value"].to_numpy()[j :: len(names)]
        options = []
        spent = case_usage_labels(self.run, listed)  # "" each when the run has no usage
        for pos, strip, cost in zip(listed, strips, spent, strict=True):
            c = cases.iloc[int(pos) * k]  # the case's first epoch (rows: case, then epoch)
            outcome = "pending" if pd.isna(c["outcome"]) else str(c["outcome"])
            value = "" if values is None else f" · {format_num(values[int(pos)])}"
            what = strip if k > 1 else f" · {outcome}"
            label = shorten(visible(f"{c['case_id']}{what}{value}{cost}"), _LABEL_LIMIT)
            options.append((label, int(pos)))
        shown = f" (first {_MAX_OPTIONS} listed)" if len(positions) > _MAX_OPTIONS else ""
        size = f" × {k} epochs" if k > 1 else ""
        count = f"{len(positions)} of {case_count(self.run)} cases{size} match{shown}"
        list_output(self, options, count, "No case matches these filters.")

    def _show_case(self, change: Any) -> None:
        pos = change["new"] if isinstance(change, dict) else change
        if pos is not None:
            self.detail.value = case_html(self.run, int(pos), whole=self.whole.value)


class ScoresTab(w.VBox):  # type: ignore[misc]
    """The Scores tab: the summary, sliced by ("Slice by") and clustered by ("Cluster by")
    a column of the run's input data; no dropdowns when the run has no such column."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        columns = slice_columns(run.data)
        options = [(_NONE, None), *((shorten(visible(str(c)), _LABEL_LIMIT), c) for c in columns)]
        layout = w.Layout(width="260px")
        self.by = w.Dropdown(options=options, value=None, description="Slice by", layout=layout)
        default = run.options.get("cluster")
        # None is the run's own default (`eb.run(cluster=)`); False turns it off
        first = [(f"{shorten(visible(str(default)), 40)} (run)", None), (_NONE, False)]
        self.cluster = w.Dropdown(
            options=[*(first if default is not None else [(_NONE, None)]), *options[1:]],
            value=None,
            description="Cluster by",
            layout=layout,
        )
        self.table = html_output("")
        for control in (self.by, self.cluster):
            control.observe(self._refresh, names="value")
        controls = [w.HBox([self.by, self.cluster], layout=w.Layout(flex_flow="row wrap"))]
        super().__init__([*(controls if columns else []), self.table])
        self._refresh()

    @property
    def value(self) -> str:
        """The tab's HTML as now shown (as `.value` of the other tabs, which are `HTML`)."""
        return str(self.table.value)

    def _refresh(self, _change: Any = None) -> None:
        html = scores_tab_html(self.run, by=self.by.value, cluster=self.cluster.value)
        self.table.value = root(html, "run-summary")


class RunView(Static):
    """`eb.show(run)`: tabs Headline, Scores, Unscored reasons, Cases, Case table."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        summary = run.summary()
        self.explorer = CaseExplorer(run)
        self.scores = ScoresTab(run)
        self.table = CaseTable(run)
        self.tabs = w.Tab(
            children=[
                html_output(root(run_cards_html(run) + consistency_html(run), "run-cards")),
                self.scores,
                html_output(root(unscored_html(run.unscored(), summary), "run-unscored")),
                self.explorer,
                self.table,
            ],
            titles=("Headline", "Scores", "Unscored reasons", "Cases", "Case table"),
        )
        super().__init__([html_output(root(run_header_html(run), "run-header")), self.tabs])
        # where widgets don't run, the Case table tab's static table follows the run's card
        self._static_html = run_html(run) + self.table._static_html
        self._static_text = repr(run)


class ComparisonView(Static):
    """`eb.show(comparison)`: tabs Summary, Cases (filter by change and score), Warnings."""

    def __init__(self, comp: Any) -> None:
        self.comparison = comp
        self.name_a, self.name_b = comparison_names(comp)
        table: pd.DataFrame = comp.cases
        scores = list(dict.fromkeys(table["score"].astype(str))) if len(table) else []
        self.change = w.Dropdown(options=_CHANGES, value=_CHANGED, description="change")
        self.score = w.Dropdown(options=[ALL, *scores], value=ALL, description="score")
        self.count = html_output("")
        self.cases = w.Select(options=[], rows=10, layout=w.Layout(width="100%"))
        self.detail = html_output("")
        self.whole = whole_toggle()
        for control in (self.change, self.score):
            control.observe(self._refresh, names="value")
        self.cases.observe(self._show_case, names="value")
        self.whole.observe(lambda _: self._show_case(self.cases.value), names="value")
        controls = w.HBox([self.change, self.score, self.whole])
        explorer = w.VBox([controls, self.count, self.cases, self.detail])
        warnings = warnings_html(list(comp.warnings)) or f'<div style="{MUTED}">No warnings.</div>'
        self.tabs = w.Tab(
            children=[
                html_output(comparison_html(comp)),
                explorer,
                html_output(root(warnings, "warnings")),
            ],
            titles=("Summary", "Cases", f"Warnings ({len(comp.warnings)})"),
        )
        super().__init__([self.tabs])
        self._static_html = comparison_html(comp)
        self._static_text = comparison_text(comp)
        self._refresh()

    def _refresh(self, _change: Any = None) -> None:
        table: pd.DataFrame = self.comparison.cases
        keep = np.ones(len(table), dtype=bool)
        change = table["change"].astype(str).to_numpy()
        if self.change.value == _CHANGED:
            keep &= change != "same"
        elif self.change.value != ALL:
            keep &= change == self.change.value
        if self.score.value != ALL:
            keep &= (table["score"].astype(str) == self.score.value).to_numpy()
        rows = np.flatnonzero(keep)
        options = []
        for i in rows[:_MAX_OPTIONS]:
            r = table.iloc[int(i)]
            label = (
                f"{r['case_id']} · {r['score']} · {format_num(r['a'])} → {format_num(r['b'])} "
                f"({format_pp(r['delta'])})"
            )
            options.append((shorten(visible(label), _LABEL_LIMIT), int(i)))
        count = f"{len(rows):,} of {len(table):,} pairs match"
        if len(rows) > _MAX_OPTIONS:  # never a silent cut: say how to reach the rest
            count += (
                f" (the first {_MAX_OPTIONS:,} listed: pick a change or a score to narrow them; "
                "comparison.cases holds all)"
            )
        list_output(self, options, count, _no_pair(self.change.value, self.score.value))

    def _show_case(self, change: Any) -> None:
        i = change["new"] if isinstance(change, dict) else change
        if i is None:
            return
        case_id = str(self.comparison.cases.iloc[int(i)]["case_id"])
        outputs = [case_output(getattr(self.comparison, s, None), case_id) for s in "ab"]
        runs = [r for r in (getattr(self.comparison, s, None) for s in "ab") if r is not None]
        epochs = max((epochs_of(r) for r in runs if isinstance(r, RunData)), default=1)
        diff = output_diff_html(
            self.name_a,
            outputs[0],
            self.name_b,
            outputs[1],
            score_changes_html(self.comparison, case_id),
            title="output" if epochs == 1 else "output of epoch 1 (each epoch's is below)",
        )
        sides = []
        for side, name in (("a", self.name_a), ("b", self.name_b)):
            run = getattr(self.comparison, side, None)
            # one id per case, in input order (run.cases has a row per epoch)
            ids = [] if run is None else list(dict.fromkeys(str(x) for x in run.cases["case_id"]))
            inner = (
                case_html(run, ids.index(case_id), whole=self.whole.value)
                if run is not None and case_id in ids
                else f'<div style="{MUTED}">not in this run</div>'
            )
            sides.append(
                f'<div style="flex: 1 1 420px; min-width: 0"><div style="font-weight: 600">'
                f"{esc(name)}</div>{inner}</div>"
            )
        both = f'<div style="display: flex; gap: 10px">{"".join(sides)}</div>'
        # the two transcripts (epoch 1) side by side from where they differ: each case view
        # below also has its own, whole
        pair = transcript_pair_html(
            self.name_a,
            sample_transcript(getattr(self.comparison, "a", None), case_id),
            self.name_b,
            sample_transcript(getattr(self.comparison, "b", None), case_id),
            whole=self.whole.value,
        )
        self.detail.value = root(diff + pair, "pair-view") + both


def _no_pair(change: str, score: str) -> str:
    """What the empty pair list says: "nothing regressed" rather than a blank list."""
    where = "" if score == ALL else f" on {shorten(visible(score), _LABEL_LIMIT)}"
    if change == _CHANGED:
        return f"Nothing changed{where}: every pair is the same in both runs (pick “all”)."
    if change in ("improved", "regressed"):
        return f"Nothing {change}{where}."
    return "No pair matches these filters."


def show(obj: Any) -> Any:
    """The interactive view of a `Run` or a `Comparison`; a list of runs: the leaderboard view."""
    if isinstance(obj, (list, tuple)):
        return board_view(obj)
    if isinstance(obj, RunData):
        return RunView(obj)
    if all(hasattr(obj, a) for a in ("summary", "cases", "warnings")) and isinstance(
        getattr(obj, "summary", None), pd.DataFrame
    ):
        return ComparisonView(obj)
    raise TypeError(
        f"eb.show() takes a Run or a Comparison (or a list of runs), not {type(obj).__name__}; "
        "load a stored run first with eb.load_run(path)"
    )
