"""The case table's columns (issue 35 item 8): the outcome and the score values first, beside
the case id, which stays in view when the table scrolls sideways (checked in Chromium); an input
that repeats the case id is not shown twice.
"""

from __future__ import annotations

from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _chromium import chromium as chromium_browser
from evalbook._render._case_table import case_table_html, column_labels, table_frame

EVIL = "<script>alert(1)</script>"


class _Lines(HTMLParser):
    """The text of each cell of each line (`<div>` of a grid) of a case table's HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[list[str]] = []
        self.depth = 0
        self.line_depth: int | None = None
        self.cell_depth: int | None = None
        self.sticky: list[bool] = []  # per cell of the lines read: position sticky

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "div":
            return
        self.depth += 1
        style = dict(attrs).get("style") or ""
        if "grid-template-columns" in style:
            self.lines.append([])
            self.line_depth = self.depth
        elif self.line_depth is not None and self.depth == self.line_depth + 1:
            self.lines[-1].append("")
            self.cell_depth = self.depth
            self.sticky.append("position: sticky" in style)

    def handle_endtag(self, tag: str) -> None:
        if tag != "div":
            return
        if self.depth == self.cell_depth:
            self.cell_depth = None
        if self.depth == self.line_depth:
            self.line_depth = None
        self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.cell_depth is not None:
            self.lines[-1][-1] += data


def _lines(html: str) -> _Lines:
    parser = _Lines()
    parser.feed(html)
    return parser


def _run(n: int = 6, **data: Any) -> eb.Run:
    """A run whose data has an `id` column (the case ids), a question, and two scores, one of
    them unscored and one an error on some cases; one case errored (origin task)."""

    def task(question: str) -> str:
        if question.endswith("3"):
            raise KeyError(question)
        return question.upper()

    def exact(output: str, question: str) -> float:
        return float(output == question)

    def judged(output: str) -> Any:
        if output.endswith("1"):
            return eb.Unscored("no_reference")
        if output.endswith("2"):
            raise ValueError("grader bug")
        return 0.5

    columns = {"id": [f"q{i}" for i in range(n)], "question": [f"what is {i}" for i in range(n)]}
    df = pd.DataFrame({**columns, **data})
    return eb.run(df, task=task, scorers=[exact, judged], store=None, progress=False)


def test_the_columns_are_case_id_outcome_scores_origin_inputs_output_and_id_is_not_repeated() -> (
    None
):
    run = _run()
    want = ["case_id", "outcome", "exact", "judged", "origin", "question", "output"]
    assert column_labels(run) == want
    parsed = _lines(case_table_html(run))
    header, *rows = parsed.lines
    assert header == want
    assert len(rows) == 6 and all(len(r) == len(want) for r in rows)
    at = {label: k for k, label in enumerate(want)}
    by_id = {r[0]: r for r in rows}
    assert by_id["q3"][at["outcome"]] == "errored" and by_id["q3"][at["origin"]] == "task"
    assert by_id["q2"][at["judged"]] == "error" and by_id["q2"][at["origin"]] == "grader"
    assert by_id["q1"][at["judged"]] == "unscored" and by_id["q1"][at["origin"]] == ""
    assert by_id["q0"][at["judged"]] == "0.5" and by_id["q0"][at["question"]] == "what is 0"
    # only the first cell of each line (the case id) is sticky
    assert parsed.sticky == [k == 0 for _ in parsed.lines for k in range(len(want))]


def test_an_input_is_dropped_only_when_every_value_is_the_case_id() -> None:
    almost = [f"q{i}" for i in range(5)] + ["other"]
    run = _run(copy=[f"q{i}" for i in range(6)], almost=almost)
    labels = column_labels(run)
    assert "id" not in labels and "copy" not in labels and "almost" in labels
    # an `id` of numbers: the case ids are its text, still not shown twice
    numbers = eb.run(pd.DataFrame({"id": [10, 20], "x": ["a", "b"]}), task=lambda x: x,
                     scorers=[lambda output: 1.0], store=None, progress=False)  # fmt: skip
    assert column_labels(numbers) == ["case_id", "outcome", "lambda", "origin", "x", "output"]
    assert table_frame(numbers)["case_id"].tolist() == ["10", "20"]


def test_an_input_named_like_a_column_is_labelled_input_and_every_cell_is_escaped() -> None:
    run = _run(origin=["here"] * 6, **{EVIL: [EVIL] * 6})
    labels = column_labels(run)
    assert labels[labels.index("origin") + 1 :][:3] == ["question", "input.origin", EVIL]
    html = case_table_html(run)
    assert "<script" not in html
    assert _lines(html).lines[0][labels.index(EVIL)] == EVIL  # the parser decodes the entities


# A static page: the table in a box narrower than its columns, in a light or dark theme.
_PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>{theme}</style></head>
<body><div style="width: 420px">{table}</div></body></html>"""
_THEMES = {
    "plain": "",  # no host variables: the browser's canvas colour
    "jupyterlab-dark": ":root { --jp-layout-color0: rgb(17, 17, 17); color: #ddd; }"
    " body { background: rgb(17, 17, 17); }",
}
# The table's box scrolled sideways by `dx`: the left edges of the box, the first two cells of
# the header and of the first row, and the first cell's background.
_SCROLL_JS = """dx => {
    const box = [...document.querySelectorAll('div')].find(d => d.style.overflowX === 'auto');
    box.scrollLeft = dx;
    const row = document.querySelector("[data-evalbook='case-row']");
    const header = row.previousElementSibling;
    const left = e => e.getBoundingClientRect().left;
    return {box: left(box), scrolled: box.scrollLeft, wide: box.scrollWidth > box.clientWidth,
            head: [left(header.children[0]), left(header.children[1])],
            cell: [left(row.children[0]), left(row.children[1])],
            text: row.children[0].innerText.trim(),
            background: getComputedStyle(row.children[0]).backgroundColor,
            page: getComputedStyle(document.body).backgroundColor};
}"""


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    with chromium_browser() as browser:  # Debian's, never downloaded (tests/_chromium.py)
        yield browser


@pytest.mark.parametrize("theme", sorted(_THEMES))
def test_the_case_id_stays_at_the_left_edge_when_the_table_scrolls_sideways(
    chromium: Any, tmp_path: Path, theme: str
) -> None:
    run = _run(notes=["a long note " * 8] * 6)
    page_file = tmp_path / "table.html"
    html = _PAGE.format(theme=_THEMES[theme], table=case_table_html(run))
    page_file.write_text(html, encoding="utf-8")
    context = chromium.new_context(java_script_enabled=True)
    context.route("http*://**", lambda route: route.abort())  # offline
    page = context.new_page()
    try:
        page.goto(page_file.as_uri(), wait_until="load")
        before = page.evaluate(_SCROLL_JS, 0)
        after = page.evaluate(_SCROLL_JS, 300)
    finally:
        context.close()
    assert before["wide"] and after["scrolled"] == 300, after
    assert before["cell"][0] == pytest.approx(before["box"], abs=1), before
    # scrolled: the case id cell and its header stay at the box's left edge, the next moved
    assert after["cell"][0] == pytest.approx(after["box"], abs=1), after
    assert after["head"][0] == pytest.approx(after["box"], abs=1), after
    assert after["cell"][1] == pytest.approx(before["cell"][1] - 300, abs=1), (before, after)
    assert after["text"] == "q0"
    # opaque, in the page's own colour: the cells scrolled under it do not show through
    assert after["background"] == after["page"] or (
        theme == "plain" and after["background"] == "rgb(255, 255, 255)"
    ), after
    assert after["background"] not in ("rgba(0, 0, 0, 0)", "transparent"), after


def test_a_column_added_to_the_data_is_a_column_of_the_table() -> None:
    run = _run()
    assert "topic" not in column_labels(run)
    run.data["topic"] = ["a", "b"] * 3
    assert column_labels(run)[-2:] == ["topic", "output"]
    assert table_frame(run)["topic"].tolist() == ["a", "b"] * 3
