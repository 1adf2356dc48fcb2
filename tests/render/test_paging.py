"""Pages of a long list: every row is on exactly one page, and out-of-range numbers clamp."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalbook._render._paging import MAX_PAGE_ROWS, page_of


@given(st.integers(0, 5_000), st.integers(1, MAX_PAGE_ROWS))
def test_the_pages_cover_every_row_once(total: int, size: int) -> None:
    first = page_of(total, 0, size)
    rows = [
        i for n in range(first.n_pages) for i in range(page_of(total, n, size).start,
                                                      page_of(total, n, size).stop)
    ]  # fmt: skip
    assert rows == list(range(total))


@given(st.integers(0, 5_000), st.integers(-10, 10_000), st.integers(1, MAX_PAGE_ROWS))
def test_a_page_number_out_of_range_is_the_nearest_page(total: int, n: int, size: int) -> None:
    page = page_of(total, n, size)
    assert 0 <= page.number < page.n_pages
    assert page.number == min(max(n, 0), page.n_pages - 1)
    assert page.stop - page.start <= size


def test_a_page_says_where_it_is_with_thousands_separators() -> None:
    assert page_of(19_905, 796, 25).label == "page 797 of 797 · rows 19,901–19,905 of 19,905"


@pytest.mark.parametrize("size", [0, MAX_PAGE_ROWS + 1])
def test_a_page_holds_at_most_max_page_rows(size: int) -> None:
    with pytest.raises(ValueError, match="1 to 100 rows"):
        page_of(10, 0, size)
