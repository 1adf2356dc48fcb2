"""Pages of a long list (the case table, a comparison's pairs): which rows a page holds.

Every pager of every view takes its page from `page_of` and its words from `Page.label`, so
that "page 3 of 800 · rows 51–75 of 19,905" reads the same everywhere and a page number out
of range (a stale click after a filter shrank the list) lands on the nearest page.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MAX_PAGE_ROWS", "Page", "page_of"]

# The most rows one page sends to the front end (docs/notebooks.md): a page is the unit the
# kernel renders and the widget holds, so a million-row table never leaves the kernel.
MAX_PAGE_ROWS = 100


@dataclass(frozen=True)
class Page:
    """Page `number` (0-based) of `n_pages`: rows `start` to `stop` (exclusive) of `total`."""

    number: int
    n_pages: int
    start: int
    stop: int
    total: int

    @property
    def label(self) -> str:
        """The pager's words.

        Example:
            >>> page_of(19_905, 2, 25).label
            'page 3 of 797 · rows 51–75 of 19,905'
            >>> page_of(0, 0, 25).label
            'page 1 of 1 · no rows'
        """
        if not self.total:
            return f"page {self.number + 1:,} of {self.n_pages:,} · no rows"
        return (
            f"page {self.number + 1:,} of {self.n_pages:,} · "
            f"rows {self.start + 1:,}–{self.stop:,} of {self.total:,}"
        )


def page_of(total: int, number: int, size: int) -> Page:
    """Page `number` of a list of `total` rows, `size` (1 to `MAX_PAGE_ROWS`) a page; a number
    past either end is the first or last page.

    Example:
        >>> p = page_of(51, 99, 25)
        >>> (p.number, p.start, p.stop, p.n_pages)
        (2, 50, 51, 3)
    """
    if not 1 <= size <= MAX_PAGE_ROWS:
        raise ValueError(f"a page holds 1 to {MAX_PAGE_ROWS} rows, not {size}")
    n_pages = max(1, -(-total // size))
    number = min(max(number, 0), n_pages - 1)
    start = number * size
    return Page(number, n_pages, start, min(start + size, total), total)
