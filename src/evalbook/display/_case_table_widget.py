"""The Case table tab of `eb.show(run)`: a page of samples, kept and rendered by the kernel.

A page of `PAGE_ROWS` samples from `_case_table.py`'s tables, sorted and filtered there (the
front end holds one page, never the table). A column's header is a button: a click sorts by it
ascending, a second descending, a third back to input order (the "sort by" dropdown and
"descending" toggle follow, and sort the same way). A search box keeps the rows whose case id,
inputs or output contain its text. The pager reaches every page (first, previous, a page
number, next, last). The table sits in a box of its own that scrolls sideways, so every column
can be reached however narrow the output area is; its lines are as wide as their columns.
"""

from __future__ import annotations

from typing import Any

from .._model._run_data import RunData
from .._render._case_table import (
    STATIC_ROWS,
    CaseTableFilter,
    CellBudget,
    case_table_html,
    column_labels,
    column_width,
    input_labels,
    origins_of,
    reasons,
    row_html,
    slice_values,
    table_frame,
    table_root,
    table_rows,
    with_tools,
)
from .._render._cases import ALL, case_html
from .._render._run_slices import slice_columns
from .._render._style import FONT, MUTED, OPAQUE_BG, esc, shorten
from .._util._text import visible
from ._controls import CONTROL_STYLE, Button, Choice, HTMLBox, Pager, Range, Text, Toggle
from ._widget_base import LABEL_LIMIT, NONE, OUTCOMES, STATUSES, Pane, whole_toggle

__all__ = ["PAGE_ROWS", "CaseTable"]

PAGE_ROWS = STATIC_ROWS  # rows of a case table page (the static table shows as many)
_OPEN_PX = 56  # the "open" button of a row, and the header's blank over it
_SORT_MARKS = {False: " ▲", True: " ▼"}
_LIST_TOOLS = "list tools…"  # the tool filter's option that reads the names
# A line of the table: as wide as its columns, never shrunk or clipped by the box, so that the
# table's box is the one that scrolls sideways
_LINE = "display: flex; width: max-content; flex: 0 0 auto; overflow: visible; margin: 0"


class CaseTable(Pane):
    """The case table: a page of samples, sorted and filtered on the tables; "open" shows a
    row's case in full (the case explorer's view). `_static_html` is the static table."""

    def __init__(self, run: RunData, prefix: str = "table") -> None:
        super().__init__(prefix)
        self.run = run
        self.frame = table_frame(run)
        self.labels = column_labels(run)
        self.names = [d.name for d in run.definitions]
        p = prefix
        self.outcome = self.add(Choice(f"{p}.outcome", OUTCOMES, ALL, description="outcome"))
        origins = [ALL, *origins_of(self.frame)]  # those the run has (a failure's origin)
        self.origin = self.add(Choice(f"{p}.origin", origins, ALL, description="origin"))
        first = self.names[0] if self.names else None
        self.score = self.add(Choice(f"{p}.score", self.names, first, description="score"))
        self.status = self.add(Choice(f"{p}.status", STATUSES, ALL, description="status"))
        self.reason = self.add(Choice(f"{p}.reason", [ALL], ALL, description="reason"))
        self.range = self.add(Range(f"{p}.range"))
        inputs = slice_columns(self.frame[input_labels(run)])  # the input fields, few values
        options = [(NONE, None), *((shorten(visible(c), LABEL_LIMIT), c) for c in inputs)]
        self.slice_by = self.add(Choice(f"{p}.slice", options, None, description="slice"))
        self.slice_value = self.add(Choice(f"{p}.slice_value", [ALL], ALL, description="="))
        # with transcripts: failed tool results, and the tools a sample called (the tool names
        # are read from the transcripts when this filter is first opened: "list tools")
        self.has_steps = "n_tool_errors" in self.frame.columns
        self.tool_errors = self.add(
            Choice(f"{p}.tool_errors", [(ALL, ALL), ("none", "none"), ("some", "some")], ALL,
                   description="tool errors")
        )  # fmt: skip
        self.tool = self.add(Choice(f"{p}.tool", [ALL, _LIST_TOOLS], ALL, description="tool"))
        self.tools_listed = False
        order = [("input order", None), *((shorten(visible(c), 60), c) for c in self.labels)]
        self.sort = self.add(Choice(f"{p}.sort", order, None, description="sort by"))
        self.descending = self.add(Toggle(f"{p}.descending", description="descending"))
        self.search = self.add(
            Text(f"{p}.search", description="search", placeholder="case id, inputs, output")
        )
        self.whole = self.add(whole_toggle(f"{p}.whole"))
        self.count = HTMLBox()
        self.header_buttons = [self._header_button(i, c) for i, c in enumerate(self.labels)]
        self.pager = self.add(Pager(f"{p}.page", PAGE_ROWS))
        self.detail = HTMLBox()
        self.shown: list[int] = []  # the frame rows of the page, in the order drawn
        self.selected: int | None = None
        self._quiet = False  # a header click sets two controls and refreshes once
        self.act_on(f"{p}.open", self._open)
        self.score.observe(self._new_score)
        self.slice_by.observe(self._new_slice)
        self.tool.observe(self._new_tool)
        controls = (self.outcome, self.origin, self.status, self.reason, self.range,
                    self.slice_value, self.tool_errors, self.sort, self.descending,
                    self.search)  # fmt: skip
        for control in controls:
            control.observe(self._refresh)
        self.pager.observe(lambda _: self._draw())
        self.whole.observe(lambda _: self.open_row(self.selected))
        self._new_score()

    @property
    def _static_html(self) -> str:
        """The static table (the run view's own follows its card; this one is made on
        request: the tab opening at a million samples does not build it again)."""
        return case_table_html(self.run)

    @property
    def _static_text(self) -> str:
        """The run's repr, made on request (its usage summary reads every sample: 0.1 s at a
        million, paid by nobody who opens the tab)."""
        return repr(self.run)

    @property
    def page(self) -> int:
        """The shown page's number (0-based)."""
        return int(self.pager.value)

    @property
    def filters(self) -> list[Any]:
        """The controls above the table, in order (the tool filters only with transcripts)."""
        steps = [self.tool_errors, self.tool] if self.has_steps else []
        return [self.outcome, self.origin, self.score, self.status, self.reason, self.range,
                self.slice_by, self.slice_value, *steps, self.sort, self.descending,
                self.search, self.whole]  # fmt: skip

    def _header_button(self, i: int, label: str) -> Button:
        width = column_width(label, self.names)
        # the first header (the case id) stays in view when the box scrolls, as its cells do
        sticky = f"; position: sticky; left: 0; z-index: 2; background: {OPAQUE_BG}"
        button = self.add(
            Button(
                f"{self.prefix}.head.{i}",
                shorten(visible(label), 80),
                tooltip=f"{shorten(visible(label), 200)}: click to sort (again: descending)",
                style=f"width: {width}px; flex: 0 0 {width}px; border: 0; border-radius: 0; "
                "padding: 2px 6px; font-size: 13px; font-weight: 600; text-align: left; "
                "white-space: nowrap; overflow: hidden; text-overflow: ellipsis"
                + (sticky if i == 0 else ""),
            )
        )
        button.on_click(lambda: self.sort_by_header(label))
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
            search=self.search.value.strip(),
            sort=self.sort.value,
            descending=bool(self.descending.value),
        )

    def _new_score(self, _change: Any = None) -> None:
        found = reasons(self.frame, self.score.value) if self.score.value else []
        self._quiet = True  # a new list of reasons (back to "all"), then one refresh
        try:
            self.reason.options = [ALL, *found]
        finally:
            self._quiet = False
        self._refresh()

    def _new_slice(self, _change: Any = None) -> None:
        by = self.slice_by.value
        values = [] if by is None else sorted(set(slice_values(self.frame, by)))
        self._quiet = True
        try:
            self.slice_value.options = [ALL, *values]
        finally:
            self._quiet = False
        self._refresh()

    def _new_tool(self, _change: Any = None) -> None:
        if self.tool.value == _LIST_TOOLS and not self.tools_listed:
            self.tools_listed = True
            names = with_tools(self.frame, self.run)  # reads the transcripts, once
            self.tool.options = [ALL, *names]  # back to "all", which refreshes
            return
        self._refresh()

    def _refresh(self, _change: Any = None) -> None:
        if self._quiet:
            return
        self.positions = table_rows(self.frame, self.filter)
        self.pager.reset(len(self.positions))
        self._draw()

    def _draw(self) -> None:
        page = self.pager.page
        self.shown = [int(i) for i in self.positions[page.start : page.stop]]
        f = self.filter
        for label, button in zip(self.labels, self.header_buttons, strict=True):
            mark = _SORT_MARKS[f.descending] if label == f.sort else ""
            button.description = shorten(visible(label), 80) + mark
        total = len(self.frame)
        self.count.value = f'<span style="{MUTED}">{len(self.positions):,} of {total:,} rows</span>'
        if not self.shown:
            self.detail.value = f'<div style="{MUTED}">No row matches these filters.</div>'

    def row_lines(self) -> list[str]:
        """The page's rows as drawn: each an "open" button and the row's cells."""
        budget = CellBudget()  # the page's cells share one (long texts show their start)
        lines = []
        action = f'data-eb-action="{esc(self.prefix)}.open"'
        for i in self.shown:
            cells = table_root(
                row_html(self.frame, i, self.labels, self.names, budget), "case-line"
            )
            # a click on the row opens it too: its case id stays in view when the box scrolls
            # sideways, its "open" button does not
            lines.append(
                f'<div data-evalbook="table-line" style="{_LINE}">'
                f'<button {action} data-eb-value="{i}" '
                f'style="{CONTROL_STYLE}; width: {_OPEN_PX}px; flex: 0 0 {_OPEN_PX}px; '
                f'cursor: pointer; align-self: flex-start">open</button>'
                f'<div {action} data-eb-value="{i}" title="open this sample" '
                f'style="cursor: pointer">{cells}</div></div>'
            )
        return lines

    @property
    def page_label(self) -> HTMLBox:
        """The pager's words ("page 3 of 797 · rows 51–75 of 19,905")."""
        return HTMLBox(f'<span style="{MUTED}">{esc(self.pager.page.label)}</span>')

    def html(self) -> str:
        """The tab as the front end shows it: filters, count, the page's table, pager, detail."""
        controls = "".join(c.html() for c in self.filters)
        head = "".join(b.html() for b in self.header_buttons)
        blank = f'<div style="width: {_OPEN_PX}px; flex: 0 0 {_OPEN_PX}px"></div>'
        box = (
            f'<div data-evalbook="case-table-box" data-eb-scroll="{esc(self.prefix)}" '
            f'class="evalbook-case-table" style="width: 100%; overflow: auto; {FONT}">'
            f'<div data-evalbook="table-head" style="{_LINE}">{blank}{head}</div>'
            f"{''.join(self.row_lines())}</div>"
        )
        return (
            f'<div data-evalbook="case-table-view"><div style="display: flex; flex-wrap: wrap; '
            f'align-items: center">{controls}</div>{self.count.value}{box}'
            f"{self.pager.html()}{self.detail.value}</div>"
        )

    def _open(self, value: str) -> None:
        try:
            row = int(value)
        except ValueError:
            return
        if 0 <= row < len(self.frame):
            self.open_row(row)

    def open_row(self, row: int | None) -> None:
        """Show row `row` of the table (a sample) in the detail: its case in full."""
        self.selected = row
        if row is not None:
            case = int(self.frame["_case"].iloc[int(row)])
            self.detail.value = case_html(self.run, case, whole=self.whole.value)
