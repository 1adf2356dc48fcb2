"""`eb.show([run_a, run_b, ...])`: the leaderboard card and the cost-vs-score scatter (issue 20)."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _page import Page
from display_fixtures import EVIL, costed_run

pytest.importorskip("plotly")


def _runs() -> list[eb.Run]:
    return [
        costed_run(EVIL, 2, 0.01),
        costed_run("dear", 3, 0.03),
        costed_run("unpriced", 4, None),
        costed_run("partly", 4, 0.02, unpriced=1),
    ]


def test_the_card_escapes_run_names_everywhere_in_the_bundle() -> None:
    view = eb.show(_runs())
    bundle = view._repr_mimebundle_()
    html = bundle["text/html"]
    # nowhere raw: not in the card, not in the figure's JSON inside its <script>
    assert EVIL not in html and "<script>alert" not in html and "</script>\\u" not in html
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in view.card_html()
    assert html.count("<script") == html.count("</script>")  # no tag closed early by a name
    assert EVIL in bundle["text/plain"]  # text stays the name itself
    # and the chart still names the run: its point's label, decoded from plotly's JSON
    (figure,) = Page.of(html).figures
    assert EVIL in figure.data[1]["text"]


def test_the_board_rows_carry_each_runs_cost_and_unknown_is_never_zero() -> None:
    view = eb.show(_runs())
    card = unescape(re.sub(r"<[^>]+>", "|", view.card_html()))
    cells = [c for c in card.split("|") if c]
    assert view.board["name"].tolist() == ["unpriced", "partly", "dear", EVIL]
    assert view.costs == ["unknown", "unknown (3 of 4 priced)", "$0.03", "$0.01"]
    for name, cost in zip(view.board["name"], view.costs, strict=True):
        assert cells[cells.index(name) + 6] == cost  # the row's last cell
    assert "$0.00" not in card and "$0 " not in card
    points = view.figure.data[1]
    assert sorted(points.x) == pytest.approx([0.01, 0.03])  # placed: only the fully priced
    text = view.text()
    assert "cost known for 0 of 4 samples" in text and "cost known for 3 of 4 samples" in text


def test_costs_follow_their_run_when_names_repeat() -> None:
    runs = [costed_run("same", 1, 0.05), costed_run("same", 4, 0.01)]
    view = eb.show(runs)
    assert view.board["mean"].tolist() == [1.0, 0.25]
    assert view.costs == ["$0.01", "$0.05"]


def test_the_leaderboard_note_is_shown_and_no_scatter_mixes_two_scores() -> None:
    other = eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q: q,
        scorers=[eb.scorer(eb.define_score("ok", primary=True))(lambda output: 1.0)],
        name="other",
        store=None,
        progress=False,
    )
    view = eb.show((costed_run("a", 2, 0.01), other))  # a tuple works as a list
    assert view.figure is None
    card = unescape(view.card_html())
    assert "No ranking: primary scores differ (hit, ok)" in card
    assert "No cost-vs-score scatter: the runs' headline scores differ" in card
    # what tiers and ranks mean, the board's note, why there is no scatter
    assert card.count('data-evalbook="leaderboard-note"') == 3
    assert "Tier: runs not separable from the tier's best run" in card
    assert "No ranking: primary scores differ" in view.text()


def test_without_any_known_cost_the_card_says_so_and_draws_nothing() -> None:
    view = eb.show([costed_run("x", 1, None), costed_run("y", 2, None)])
    assert view.figure is None
    bundle = view._repr_mimebundle_()
    assert "plotly" not in bundle["text/html"]  # no 3.5 MB of plotly.js for an empty chart
    assert "no run has a known cost for every sample" in unescape(bundle["text/html"])
    assert "'x' (cost known for 0 of 4 samples)" in unescape(bundle["text/html"])


def test_the_exported_html_has_the_data_and_no_cdn() -> None:
    html = eb.show(_runs())._repr_mimebundle_()["text/html"]
    page = Page.of(html)
    assert not page.script_sources  # nothing loaded from a CDN
    assert page.plotly_bundles == 1 and len(page.figures) == 1
    assert 'require(["plotly"]' not in html
    # the points' data (decoded from the JSON in the page) and the no-JavaScript text
    (figure,) = page.figures
    front, points = figure.data
    assert front["name"] == "Pareto front" and "dear" in points["text"]
    assert sorted(points["x"]) == pytest.approx([0.01, 0.03])  # the two fully priced runs
    assert page.marks.index("board") < page.marks.index("pareto")
    assert "Pareto front (cost per sample against hit):" in page.text


def test_in_a_notebook_the_card_and_the_figure_are_two_outputs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import IPython.display

    published: list[dict[str, Any]] = []
    monkeypatch.setattr(IPython.display, "display", lambda b, raw=False: published.append(b))
    view = eb.show(_runs())
    view._ipython_display_()
    card, figure = published
    assert set(card) == {"text/html", "text/plain"} and 'data-evalbook="board"' in card["text/html"]
    assert "application/vnd.plotly.v1+json" in figure  # JupyterLab draws it with plotly's renderer
    assert "* plotly.js v" in figure["text/html"]  # nbconvert: plotly.js in the page


def test_show_refuses_an_empty_list_and_items_that_are_not_runs() -> None:
    with pytest.raises(ValueError, match=r"eb.show\(\[\]\) got no runs"):
        eb.show([])
    with pytest.raises(TypeError, match="item 1 is a DataFrame"):
        eb.show([costed_run("a", 1, 0.01), pd.DataFrame()])


MAX_BOARD_ROWS = 100  # rows the card lists (a sweep's runs may be many, each row is markup)


def test_a_long_board_lists_its_first_rows_and_says_how_many_more() -> None:
    # 98 runs right on every case rank with unpriced and partly (100 %), above dear and EVIL
    top = [costed_run(f"top{i:02d}", 4, 0.01) for i in range(MAX_BOARD_ROWS - 2)]
    view = eb.show(top + _runs())
    card = unescape(view.card_html())
    assert "… 2 more runs: see eb.leaderboard(runs)" in card
    assert "partly" in card and "top97" in card  # the first 100 rows are listed
    assert "dear" not in card and EVIL not in card  # rows 101 and 102 are not
    assert "dear" in view.text() and EVIL in view.text()  # the text form lists every run
