"""How views spell large-N numbers (issue 35 item 8): a point and its CI with enough decimals
that a point inside its interval never reads as on its edge, counts with thousands
separators, and a long run name that wraps inside its card."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

import evalbook as eb
from _page import visible_text
from evalbook._util._fmt import MINUS, counts_line, format_count, format_pct_ci


def _value(text: str) -> float:
    return float(text.removesuffix("%").replace(MINUS, "-"))


def _ci(text: str) -> tuple[float, float]:
    low, high = text.strip("[]").split(", ")
    return _value(low), _value(high)


shares = st.floats(0.0, 1.0, allow_nan=False)


@given(shares, shares, shares)
def test_a_point_inside_its_ci_is_shown_strictly_inside(a: float, b: float, c: float) -> None:
    low, value, high = sorted((a, b, c))
    point, ci = format_pct_ci(value, low, high)
    lo, hi = _ci(ci)
    if low < value < high and min(value - low, high - value) >= 1e-6:
        assert lo < _value(point) < hi, (value, low, high, point, ci)
    else:
        assert lo <= _value(point) <= hi, (value, low, high, point, ci)


@given(shares, shares)
def test_a_point_on_its_edge_is_shown_on_it(a: float, b: float) -> None:
    low, high = sorted((a, b))
    point, ci = format_pct_ci(low, low, high)
    assert _value(point) == _ci(ci)[0]


def test_the_issues_case_gets_a_digit() -> None:
    assert format_pct_ci(0.4996, 0.4927, 0.5005) == ("49.96%", "[49.27%, 50.05%]")
    assert format_pct_ci(0.5, 0.496, 0.504) == ("50.0%", "[49.6%, 50.4%]")
    assert format_pct_ci(0.52, 0.40, 0.63) == ("52%", "[40%, 63%]")  # wide: as before


@given(st.integers(0, 10**12))
def test_counts_have_thousands_separators(n: int) -> None:
    text = format_count(n)
    assert re.fullmatch(r"\d{1,3}(,\d{3})*", text) and int(text.replace(",", "")) == n


def test_counts_line_separates_thousands() -> None:
    row = {"counted": 19905, "unscored": 0, "errors": 1200, "excluded": 0, "zeroed": 0}
    assert counts_line(row) == "counted 19,905 · unscored 0 · errors 1,200 · excluded 0"


def test_a_large_run_card_spells_counts_and_a_narrow_ci() -> None:
    n = 20_000
    data = pd.DataFrame({"x": range(n)})
    run = eb.run(
        data,
        task=lambda x: x,
        scorers=[lambda output: float(output % 200 < 101)],  # 50.5%: whole % puts it on 50%
        store=None,
        progress=False,
    )
    text = visible_text(run._repr_html_())
    assert "20,000 cases" in text and "counted 20,000" in text, text[:400]
    found = re.search(r"([\d.]+%) \w+ 95% CI (\[[^\]]+\])", text)
    assert found, text[:400]
    lo, hi = _ci(found.group(2))
    assert lo < _value(found.group(1)) < hi, found.group(0)
    assert found.group(1) == "50.5%", found.group(0)


class _Wrapped(HTMLParser):
    """Whether the text holding `needle` is inside an element styled `overflow-wrap: anywhere`."""

    def __init__(self, needle: str) -> None:
        super().__init__()
        self.needle, self.stack, self.found = needle, [False], [False]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in {"br", "hr", "img", "input", "meta", "link", "wbr"}:
            return
        style = dict(attrs).get("style") or ""
        # the page's <title> is the tab's, not shown in the page
        self.stack.append(self.stack[-1] or tag == "title" or "overflow-wrap: anywhere" in style)

    def handle_endtag(self, tag: str) -> None:
        if len(self.stack) > 1 and tag not in {"br", "hr", "img", "input", "meta", "link", "wbr"}:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        if self.needle in data:
            self.found.append(self.stack[-1])


def _wraps(html: str, needle: str) -> list[bool]:
    parser = _Wrapped(needle)
    parser.feed(html)
    return parser.found[1:]


def test_a_300_character_name_wraps_in_every_card() -> None:
    name = "run-" + "x" * 296

    def make(run_name: str) -> eb.Run:
        return eb.run(
            pd.DataFrame({"x": [1, 2]}),
            task=lambda x: x,
            scorers=[lambda output: 1.0],
            store=None,
            progress=False,
            name=run_name,
        )

    run, other = make(name), make("other")
    for html in (
        run._repr_html_(),
        eb.report(run),
        str(eb.show(eb.compare(other, run))._repr_mimebundle_()["text/html"]),
    ):
        found = _wraps(html, name[:120])
        assert found and all(found), found
