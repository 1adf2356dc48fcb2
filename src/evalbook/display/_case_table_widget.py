"""The Case table tab of `eb.show(run)` (ipywidgets; imported lazily, only by `eb.show`).

A page of samples from `_case_table.py`'s tables, sorted and filtered there. A column's header
is a button: a click sorts by it ascending, a second descending, a third back to input order
(the "sort by" dropdown and "descending" toggle follow, and sort the same way). The table sits
in a box of its own that scrolls sideways, so every column can be reached however narrow the
output area is; its lines are as wide as their columns.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from .._model._run_data import RunData
from .._render._case_table import (
    STATIC_ROWS,
    CaseTableFilter,
    CellBudget,
    case_table_html,
    column_labels,
    column_width,
    origins_of,
    reasons,
    row_html,
    slice_values,
    table_frame,
    table_root,
    table_rows,
    with_tools,
)
from .._render._cases import ALL, case_html, epochs_of
from .._render._run_slices import slice_columns
from .._render._style import MUTED, shorten
from .._util._text import visible
from ._widget_base import LABEL_LIMIT, NONE, OUTCOMES, STATUSES, Static, html_output, whole_toggle

__all__ = ["CaseTable"]

_PAGE = STATIC_ROWS  # rows of a case table page (each row is two widgets)
# The "open" button of a row and the header's blank over it. Every part of a line has no
# margin (ipywidgets gives each widget 2 px a side), so a header sits over its column.
_OPEN = {"width": "56px", "flex": "0 0 56px", "margin": "0"}
# A line of the table: as wide as its columns, never shrunk or clipped by its own box (a
# widget box scrolls by itself), so that the table's box is the one that scrolls sideways
_LINE = {"width": "max-content", "flex": "0 0 auto", "overflow": "visible", "margin": "0"}
_SORT_MARKS = {False: " ▲", True: " ▼"}
_LIST_TOOLS = "list tools…"  # the tool filter's option that reads the names


class CaseTable(Static):
    """The case table: a page of samples, sorted and filtered on the tables; "open" shows a
    row's case in full (the case explorer's view). Its bundle's HTML is the static table."""

    def __init__(self, run: RunData) -> None:
        self.run = run
        self.frame = table_frame(run)
        self.labels = column_labels(run)
        self.names = [d.name for d in run.definitions]
        small = w.Layout(width="200px")
        self.outcome = w.Dropdown(options=OUTCOMES, value=ALL, description="outcome", layout=small)
        origins = [ALL, *origins_of(self.frame)]  # those the run has (a failure's origin)
        self.origin = w.Dropdown(options=origins, value=ALL, description="origin", layout=small)
        first = self.names[0] if self.names else None
        self.score = w.Dropdown(options=self.names, value=first, description="score", layout=small)
        self.status = w.Dropdown(options=STATUSES, value=ALL, description="status", layout=small)
        self.reason = w.Dropdown(options=[ALL], value=ALL, description="reason", layout=small)
        self.range = w.FloatRangeSlider(
            value=(0.0, 1.0), min=0.0, max=1.0, step=0.05, description="value", readout_format=".2f"
        )
        fields = self.labels[1 + (epochs_of(run) > 1) : self.labels.index("output")]
        inputs = slice_columns(self.frame[fields])  # the input fields with few values
        options = [(NONE, None), *((shorten(visible(c), LABEL_LIMIT), c) for c in inputs)]
        self.slice_by = w.Dropdown(options=options, value=None, description="slice", layout=small)
        self.slice_value = w.Dropdown(options=[ALL], value=ALL, description="=", layout=small)
        # with transcripts: failed tool results, and the tools a sample called (the tool names
        # are read from the transcripts when this filter is first opened: "list tools")
        self.has_steps = "n_tool_errors" in self.frame.columns
        self.tool_errors = w.Dropdown(
            options=[(ALL, ALL), ("none", "none"), ("some", "some")],
            value=ALL,
            description="tool errors",
            layout=small,
        )
        self.tool = w.Dropdown(
            options=[ALL, _LIST_TOOLS], value=ALL, description="tool", layout=small
        )
        self.tools_listed = False
        order = [("input order", None), *((shorten(visible(c), 60), c) for c in self.labels)]
        self.sort = w.Dropdown(options=order, value=None, description="sort by", layout=small)
        self.descending = w.ToggleButton(value=False, description="descending")
        self.whole = whole_toggle()
        self.count = html_output("")
        self.header_buttons = [self._header_button(c) for c in self.labels]
        self.header = w.HBox(self.header_buttons, layout=w.Layout(**_LINE))
        self.rows = w.VBox([], layout=w.Layout(**_LINE))
        self.previous = w.Button(description="◀ previous", layout=w.Layout(width="110px"))
        self.next = w.Button(description="next ▶", layout=w.Layout(width="110px"))
        self.page_label = html_output("")
        self.detail = html_output("")
        self.page = 0
        self.selected: int | None = None
        self._quiet = False  # a header click sets two controls and refreshes once
        self.previous.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(1))
        self.score.observe(self._new_score, names="value")
        self.slice_by.observe(self._new_slice, names="value")
        self.tool.observe(self._new_tool, names="value")
        controls = (self.outcome, self.origin, self.status, self.reason, self.range,
                    self.slice_value, self.tool_errors, self.sort, self.descending)  # fmt: skip
        for control in controls:
            control.observe(self._refresh, names="value")
        self.whole.observe(lambda _: self.open_row(self.selected), names="value")
        steps = [self.tool_errors, self.tool] if self.has_steps else []
        filters = w.HBox(
            [self.outcome, self.origin, self.score, self.status, self.reason, self.range,
             self.slice_by, self.slice_value, *steps, self.sort, self.descending, self.whole],
            layout=w.Layout(flex_flow="row wrap"),
        )  # fmt: skip
        pager = w.HBox([self.previous, self.page_label, self.next])
        head = w.HBox([w.Box(layout=w.Layout(**_OPEN)), self.header], layout=w.Layout(**_LINE))
        # the table's own box: as wide as the output area, scrolling sideways to the last column
        self.box = w.VBox([head, self.rows], layout=w.Layout(width="100%", overflow="auto"))
        self.box.add_class("evalbook-case-table")
        super().__init__([filters, self.count, self.box, pager, self.detail])
        self._static_html = case_table_html(run, frame=self.frame)
        self._static_text = repr(run)
        self._new_score()

    def _header_button(self, label: str) -> Any:
        width = f"{column_width(label, self.names)}px"
        button = w.Button(
            description=shorten(visible(label), 80),
            tooltip=f"{shorten(visible(label), 200)}: click to sort (again: descending)",
            layout=w.Layout(width=width, flex=f"0 0 {width}", margin="0", padding="0 6px"),
            style=w.ButtonStyle(button_color="transparent", font_weight="600"),
        )
        button.on_click(lambda _: self.sort_by_header(label))
        return button

    def sort_by_header(self, label: str) -> None:
        """A click on column `label`'s header: ascending, then descending, then input order."""
        if self.sort.value != label:
            sort, descending = label, False
        elif not self.descending.value:
            sort, descending = label, True
        else:
            sort, descending = None, False
        self._quiet = True
        try:
            self.sort.value = sort
            self.descending.value = descending
        finally:
            self._quiet = False
        self._refresh()

    @property
    def filter(self) -> CaseTableFilter:
        """The current filter and sort."""
        low, high = self.range.value
        return CaseTableFilter(
            outcome=self.outcome.value,
            origin=self.origin.value,
            score=self.score.value,
            status=self.status.value,
            reason=self.reason.value,
            low=float(low),
            high=float(high),
            slice_by=self.slice_by.value,
            slice_value=self.slice_value.value,
            tool_errors=self.tool_errors.value,
            tool=self.tool.value if self.tool.value != _LIST_TOOLS else ALL,
            sort=self.sort.value,
            descending=bool(self.descending.value),
        )

    def _new_score(self, _change: Any = None) -> None:
        found = reasons(self.frame, self.score.value) if self.score.value else []
        self.reason.options = [ALL, *found]  # resets the value to "all", which refreshes
        self._refresh()

    def _new_slice(self, _change: Any = None) -> None:
        by = self.slice_by.value
        values = [] if by is None else sorted(set(slice_values(self.frame, by)))
        self.slice_value.options = [ALL, *values]
        self._refresh()

    def _new_tool(self, change: Any = None) -> None:
        if self.tool.value == _LIST_TOOLS and not self.tools_listed:
            self.tools_listed = True
            names = with_tools(self.frame, self.run)  # reads the transcripts, once
            self.tool.options = [ALL, *names]  # resets the value to "all", which refreshes
            return
        self._refresh()

    def _turn(self, step: int) -> None:
        self.page = min(max(self.page + step, 0), max(len(self.positions) - 1, 0) // _PAGE)
        self._draw()

    def _refresh(self, _change: Any = None) -> None:
        if self._quiet:
            return
        self.positions = table_rows(self.frame, self.filter)
        self.page = 0
        self._draw()

    def _draw(self) -> None:
        rows = self.positions[self.page * _PAGE : (self.page + 1) * _PAGE]
        f = self.filter
        for label, button in zip(self.labels, self.header_buttons, strict=True):
            mark = _SORT_MARKS[f.descending] if label == f.sort else ""
            button.description = shorten(visible(label), 80) + mark
        budget = CellBudget()  # the page's cells share one (long texts show their start)
        self.rows.children = [self._row(int(i), budget) for i in rows]
        pages = max(len(self.positions) - 1, 0) // _PAGE + 1
        self.page_label.value = f'<span style="{MUTED}">page {self.page + 1} of {pages}</span>'
        total = len(self.frame)
        self.count.value = f'<span style="{MUTED}">{len(self.positions)} of {total} rows</span>'
        if not len(rows):
            self.detail.value = f'<div style="{MUTED}">No row matches these filters.</div>'

    def _row(self, i: int, budget: CellBudget) -> Any:
        button = w.Button(description="open", layout=w.Layout(**_OPEN))
        button.on_click(lambda _: self.open_row(i))
        html = table_root(row_html(self.frame, i, self.labels, self.names, budget), "case-line")
        cells = w.HTML(value=html, layout=w.Layout(margin="0", flex="0 0 auto"))
        return w.HBox([button, cells], layout=w.Layout(**_LINE))

    def open_row(self, row: int | None) -> None:
        """Show row `row` of the table (a sample) in the detail: its case in full."""
        self.selected = row
        if row is not None:
            case = int(self.frame["_case"].iloc[int(row)])
            self.detail.value = case_html(self.run, case, whole=self.whole.value)
