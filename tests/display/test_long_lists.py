"""Long lists say they are cut (issue 35 item 7): the comparison's pair list past its first
500 entries, and the regressions list past its first 20, name how many there are."""

from __future__ import annotations

import pandas as pd
import pytest

import evalbook as eb

pytest.importorskip("ipywidgets")

N = 1_200


def _runs() -> tuple[eb.Run, eb.Run]:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(N)]})
    ok = eb.define_score("ok", primary=True)
    a = eb.run(data, task=lambda q: q, scorers=[eb.scorer(ok)(lambda output: 1.0)],
               name="a", store=None, progress=False)  # fmt: skip
    b = eb.run(data, task=lambda q: q, scorers=[eb.scorer(ok)(lambda output: 0.0)],
               name="b", store=None, progress=False)  # fmt: skip
    return a, b


def test_a_long_pair_list_says_it_is_cut_and_the_regressions_say_how_many() -> None:
    comp = eb.compare(*_runs())
    view = eb.show(comp)
    assert len(view.cases.options) == 500
    count = str(view.count.value)
    assert f"{N:,} of {N:,} pairs match" in count and "the first 500 listed" in count
    html = comp._repr_html_()
    assert f"the worst 20 of {N:,} regressed pairs" in html
