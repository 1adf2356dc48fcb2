"""The views of `eb.show` (one anywidget each; imported lazily, only by `eb.show`).

Each view's display bundle carries the live widget *and* the static HTML and a text summary,
so a notebook opened without a kernel (nbconvert, GitHub) still shows the results
(`_widget_base.View`). The run view's Case table tab is `_case_table_widget.CaseTable`; a list
of runs is `_board.BoardView` (no widget).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from .._model._run_data import RunData
from .._render._case_table import case_table_html
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
from .._render._style import MUTED, esc, outcome_label, root, shorten
from .._render._transcript_html import sample_transcript, transcript_pair_html
from .._util._fmt import format_num, format_pp
from .._util._text import visible
from ._board import board_view
from ._case_table_widget import CaseTable
from ._controls import Choice, HTMLBox, Pager, Range, Tabs, Text
from ._widget_base import (
    LABEL_LIMIT,
    NONE,
    OUTCOMES,
    STATUSES,
    Lazy,
    Pane,
    View,
    list_output,
    whole_toggle,
)

__all__ = ["show"]

# Entries of a case or pair list page (the pager reaches the others; issue 35 item 7)
LIST_PAGE = 50
# "changed" (every change but "same") is the comparison's default filter: what a reader looks for
_CHANGED = "changed"
_CHANGES = [_CHANGED, ALL, "improved", "regressed", "same", "only_a", "only_b"]


class CaseExplorer(Pane):
    """Filter a run's cases by outcome, score status and value range; show one in full.

    The list holds one page of `LIST_PAGE` cases; the pager reaches every other.
    """

    def __init__(self, run: RunData, prefix: str = "explorer") -> None:
        super().__init__(prefix)
        self.run = run
        names = [d.name for d in run.definitions]
        labels = {d.name: d.display_label() for d in run.definitions}
        self.outcome = self.add(Choice(f"{prefix}.outcome", OUTCOMES, ALL, description="outcome"))
        self.score = self.add(
            Choice(
                f"{prefix}.score",
                [(visible(f"{labels[n]} ({n})" if labels[n] != n else n), n) for n in names],
                names[0] if names else None,
                description="score",
            )
        )
        self.status = self.add(Choice(f"{prefix}.status", STATUSES, ALL, description="status"))
        self.range = self.add(Range(f"{prefix}.range"))
        self.count = HTMLBox()
        self.cases = self.add(
            Choice(f"{prefix}.cases", [], rows=10, width="100%", description="cases")
        )
        self.pager = self.add(Pager(f"{prefix}.page", LIST_PAGE))
        self.detail = HTMLBox()
        self.whole = self.add(whole_toggle(f"{prefix}.whole"))
        for control in (self.outcome, self.score, self.status, self.range):
            control.observe(self._refresh)
        self.pager.observe(self._list)
        self.cases.observe(self._show_case)
        self.whole.observe(lambda _: self._show_case(self.cases.value))
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
        self.positions = filter_cases(self.run, self.filter)
        self.pager.reset(len(self.positions))
        self._list()

    def _list(self, _change: Any = None) -> None:
        positions = self.positions
        cases = self.run.cases
        k = epochs_of(self.run)
        names = [d.name for d in self.run.definitions]
        page = self.pager.page
        listed = positions[page.start : page.stop]
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
            # the task's outcome in a view's words ("ran": it says nothing of the output)
            outcome = "pending" if pd.isna(c["outcome"]) else outcome_label(str(c["outcome"]))
            value = "" if values is None else f" · {format_num(values[int(pos)])}"
            what = strip if k > 1 else f" · {outcome}"
            label = shorten(visible(f"{c['case_id']}{what}{value}{cost}"), LABEL_LIMIT)
            options.append((label, int(pos)))
        size = f" × {k} epochs" if k > 1 else ""
        count = f"{len(positions):,} of {case_count(self.run):,} cases{size} match"
        list_output(self.cases, self.count, self.detail, options, count,
                    "No case matches these filters.")  # fmt: skip

    def _show_case(self, change: Any) -> None:
        pos = change["new"] if isinstance(change, dict) else change
        if pos is not None:
            self.detail.value = case_html(self.run, int(pos), whole=self.whole.value)

    def html(self) -> str:
        filters = "".join(
            c.html() for c in (self.outcome, self.score, self.status, self.range, self.whole)
        )
        pager = self.pager.html() if self.pager.page.n_pages > 1 else ""
        return (
            f'<div data-evalbook="case-explorer">{_row(filters)}{self.count.value}'
            f"{self.cases.html()}{pager}{self.detail.value}</div>"
        )


def _row(inner: str) -> str:
    """A line of controls that wraps on a narrow output."""
    return f'<div style="display: flex; flex-wrap: wrap; align-items: center">{inner}</div>'


class ScoresTab(Pane):
    """The Scores tab: the summary, sliced by ("Slice by") and clustered by ("Cluster by")
    a column of the run's input data; no dropdowns when the run has no such column."""

    def __init__(self, run: RunData, prefix: str = "scores") -> None:
        super().__init__(prefix)
        self.run = run
        self.columns = slice_columns(run.data)
        options = [
            (NONE, None),
            *((shorten(visible(str(c)), LABEL_LIMIT), c) for c in self.columns),
        ]
        self.by = self.add(Choice(f"{prefix}.by", options, None, description="Slice by"))
        default = run.options.get("cluster")
        # None is the run's own default (`eb.run(cluster=)`); False turns it off
        first = [(f"{shorten(visible(str(default)), 40)} (run)", None), (NONE, False)]
        self.cluster = self.add(
            Choice(
                f"{prefix}.cluster",
                [*(first if default is not None else [(NONE, None)]), *options[1:]],
                None,
                description="Cluster by",
            )
        )
        self.table = HTMLBox()
        for control in (self.by, self.cluster):
            control.observe(self._refresh)
        self._refresh()

    @property
    def controls(self) -> tuple[Choice, ...]:
        """The dropdowns shown above the table (none when the run has no such column)."""
        return (self.by, self.cluster) if self.columns else ()

    @property
    def value(self) -> str:
        """The summary as now shown (sliced, clustered), without the controls above it."""
        return str(self.table.value)

    def html(self) -> str:
        controls = _row("".join(c.html() for c in self.controls)) if self.controls else ""
        return controls + self.value

    def _refresh(self, _change: Any = None) -> None:
        html = scores_tab_html(self.run, by=self.by.value, cluster=self.cluster.value)
        self.table.value = root(html, "run-summary")


class RunView(View):
    """`eb.show(run)`: tabs Headline, Scores, Unscored reasons, Cases, Case table."""

    def __init__(self, run: RunData) -> None:
        super().__init__()
        self.run = run
        self.scores = ScoresTab(run)
        self.header = root(run_header_html(run), "run-header")
        # the tabs past the scores are made when first opened: on a million samples they
        # cost seconds that a reader who looks at the headline need not wait for
        self._unscored = Lazy(
            "unscored",
            lambda: HTMLBox(root(unscored_html(run.unscored(), run.summary()), "run-unscored")),
        )
        self._explorer = Lazy("explorer", lambda: CaseExplorer(run))
        self._table = Lazy("table", lambda: CaseTable(run))
        children = [
            HTMLBox(root(run_cards_html(run) + consistency_html(run), "run-cards")),
            self.scores,
            self._unscored,
            self._explorer,
            self._table,
        ]
        titles = ("Headline", "Scores", "Unscored reasons", "Cases", "Case table")
        self.connect(Tabs("tab", titles, children), [self.scores, self._explorer, self._table])
        # where no kernel runs, the Case table tab's static table follows the run's card
        self._static_html = run_html(run) + case_table_html(run)
        self._static_text = repr(run)

    @property
    def explorer(self) -> CaseExplorer:
        """The Cases tab (made on first use)."""
        return self.made(self._explorer)

    @property
    def table(self) -> CaseTable:
        """The Case table tab (made on first use)."""
        return self.made(self._table)

    def header_html(self) -> str:
        return self.header


class ComparisonView(View):
    """`eb.show(comparison)`: tabs Summary, Cases (filter by change, score and case id; every
    pair reachable by the pager), Warnings."""

    def __init__(self, comp: Any) -> None:
        super().__init__()
        self.comparison = comp
        self.name_a, self.name_b = comparison_names(comp)
        table: pd.DataFrame = comp.cases
        scores = list(dict.fromkeys(table["score"].astype(str))) if len(table) else []
        self.ids = table["case_id"].astype(str).str.casefold().to_numpy() if len(table) else None
        # the Cases tab: its controls are the view's (`view.change`, `view.cases`, ...)
        self.explorer = pane = _PairsPane(self)
        self.change = pane.add(Choice("pairs.change", _CHANGES, _CHANGED, description="change"))
        self.score = pane.add(Choice("pairs.score", [ALL, *scores], ALL, description="score"))
        self.search = pane.add(
            Text("pairs.search", description="case id", placeholder="search case ids")
        )
        self.count = HTMLBox()
        self.cases = pane.add(Choice("pairs.cases", [], rows=10, width="100%", description="pairs"))
        self.pager = pane.add(Pager("pairs.page", LIST_PAGE))
        self.detail = HTMLBox()
        self.whole = pane.add(whole_toggle("pairs.whole"))
        for control in (self.change, self.score, self.search):
            control.observe(self._refresh)
        self.pager.observe(self._list)
        self.cases.observe(self._show_case)
        self.whole.observe(lambda _: self._show_case(self.cases.value))
        warnings = warnings_html(list(comp.warnings)) or f'<div style="{MUTED}">No warnings.</div>'
        summary = comparison_html(comp)
        children = [
            HTMLBox(summary),
            self.explorer,
            HTMLBox(root(warnings, "warnings")),
        ]
        titles = ("Summary", "Cases", f"Warnings ({len(comp.warnings)})")
        self.connect(Tabs("tab", titles, children), [self.explorer])
        self._static_html = summary
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
        needle = self.search.value.strip().casefold()
        if needle and self.ids is not None:
            keep &= np.fromiter((needle in x for x in self.ids), dtype=bool, count=len(self.ids))
        self.rows = np.flatnonzero(keep)
        self.pager.reset(len(self.rows))
        self._list()

    def _list(self, _change: Any = None) -> None:
        table: pd.DataFrame = self.comparison.cases
        page = self.pager.page
        options = []
        for i in self.rows[page.start : page.stop]:
            r = table.iloc[int(i)]
            label = (
                f"{r['case_id']} · {r['score']} · {format_num(r['a'])} → {format_num(r['b'])} "
                f"({format_pp(r['delta'])})"
            )
            options.append((shorten(visible(label), LABEL_LIMIT), int(i)))
        count = f"{len(self.rows):,} of {len(table):,} pairs match"
        empty = _no_pair(self.change.value, self.score.value, self.search.value)
        list_output(self.cases, self.count, self.detail, options, count, empty)

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


class _PairsPane(Pane):
    """The comparison's Cases tab: its controls, the page of pairs, the pager, the pair."""

    def __init__(self, view: ComparisonView) -> None:
        super().__init__("pairs")
        self.view = view

    def html(self) -> str:
        v = self.view
        controls = _row("".join(c.html() for c in (v.change, v.score, v.search, v.whole)))
        pager = v.pager.html() if v.pager.page.n_pages > 1 else ""
        return (
            f'<div data-evalbook="pair-explorer">{controls}{v.count.value}{v.cases.html()}'
            f"{pager}{v.detail.value}</div>"
        )


def _no_pair(change: str, score: str, search: str = "") -> str:
    """What the empty pair list says: "nothing regressed" rather than a blank list."""
    if search.strip():
        return f"No pair's case id contains “{esc(search.strip(), 200)}” with these filters."
    where = "" if score == ALL else f" on {esc(shorten(visible(score), LABEL_LIMIT))}"
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
