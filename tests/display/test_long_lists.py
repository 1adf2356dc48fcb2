"""Long lists reach every entry (issue 35 item 7): the comparison's pairs and the run's cases
are paged by the kernel, every page reachable, with a search box over case ids; the
regressions list past its first 20 names how many there are."""

from __future__ import annotations

import pandas as pd
import pytest

import evalbook as eb

pytest.importorskip("anywidget")

N = 1_200


def _runs() -> tuple[eb.Run, eb.Run]:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(N)]})
    ok = eb.define_score("ok", primary=True)
    a = eb.run(data, task=lambda q: q, scorers=[eb.scorer(ok)(lambda output: 1.0)],
               name="a", store=None, progress=False)  # fmt: skip
    b = eb.run(data, task=lambda q: q, scorers=[eb.scorer(ok)(lambda output: 0.0)],
               name="b", store=None, progress=False)  # fmt: skip
    return a, b


@pytest.fixture(scope="module")
def comp() -> eb.Comparison:
    return eb.compare(*_runs())


def test_every_changed_pair_is_reachable_and_the_count_says_how_many_match(
    comp: eb.Comparison,
) -> None:
    view = eb.show(comp)
    assert f"{N:,} of {N:,} pairs match" in str(view.count.value)
    assert len(view.cases.options) <= 100  # one page at the front end
    view.act("tab", 1)
    html = view.act("pairs.page", "last")  # the pager's "last" button, as the front end sends it
    last = comp.cases["case_id"].astype(str).iloc[-1]
    assert [label.split(" · ")[0] for label, _ in view.cases.options][-1] == last
    assert f"rows {N - len(view.cases.options) + 1:,}–{N:,} of {N:,}" in html
    assert f"{last} · ok" in html
    html = view.act("pairs.cases", str(len(view.cases.options) - 1))  # the page's last entry
    assert view.cases.value == N - 1 and f"q{last}" in str(view.detail.value)  # its output


def test_the_pair_search_keeps_the_case_ids_that_contain_it(comp: eb.Comparison) -> None:
    view = eb.show(comp)
    view.act("pairs.page", "3")
    view.act("pairs.search", " 119 ")  # any case id holding it: "119", "1119", "1190" …
    ids = [label.split(" · ")[0] for label, _ in view.cases.options]
    assert ids == [str(i) for i in range(N) if "119" in str(i)]
    assert view.pager.value == 0 and f"{len(ids)} of 1,200 pairs match" in str(view.count.value)
    view.act("pairs.search", "nothing like it")
    assert view.cases.options == () and "No pair" in str(view.detail.value)


def test_the_case_explorer_pages_every_case() -> None:
    a, _ = _runs()
    view = eb.show(a)
    explorer = view.explorer
    first = [pos for _, pos in explorer.cases.options]
    assert first == list(range(len(first))) and "1,200 of 1,200 cases match" in explorer.count.value
    view.act("explorer.page", "last")
    assert [pos for _, pos in explorer.cases.options][-1] == N - 1
    view.act("explorer.page", "2")  # a page number typed in
    assert explorer.cases.options[0][1] == len(first)
    assert "page 2 of" in view.act("tab", 3)


def test_the_regressions_say_how_many(comp: eb.Comparison) -> None:
    assert f"the worst 20 of {N:,} regressed pairs" in comp._repr_html_()
