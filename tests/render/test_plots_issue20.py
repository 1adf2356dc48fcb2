"""Issue 20's plots: distribution bins that show 1.0, forest, consistency, cost-vs-score Pareto."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _page import Page
from display_fixtures import costed_run


def _binary_run(ones: int, zeros: int, *, name: str = "binary") -> eb.Run:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(ones + zeros)]})
    hit = eb.scorer("hit")(lambda output: 1.0 if int(output[1:]) < ones else 0.0)
    return eb.run(data, task=lambda q: q, scorers=[hit], name=name, store=None, progress=False)


def _bars(trace: Any, values: list[float]) -> dict[tuple[float, float], int]:
    """What each drawn bar holds: plotly's bins are [start + k·size, start + (k+1)·size)."""
    start, size = float(trace.xbins.start), float(trace.xbins.size)
    bars: dict[tuple[float, float], int] = {}
    for v in values:
        k = math.floor((v - start) / size + 1e-9)
        lo = round(start + k * size, 9)
        bars[(lo, round(lo + size, 9))] = bars.get((lo, round(lo + size, 9)), 0) + 1
    return bars


def _exported(fig: Any) -> Page:
    """The figure's HTML (what an exported notebook holds), read as its reader reads it."""
    bundle = fig._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle
    html: str = bundle["text/html"]
    page = Page.of(html)
    # plotly.js inlined once (the export shows the chart offline), never a script from elsewhere
    assert page.plotly_bundles == 1 and not page.script_sources and len(html) > 1_000_000
    assert len(page.figures) == 1
    assert 'require(["plotly"]' not in html  # no require.js path to a remote plotly
    return page


def test_distribution_shows_every_value_of_one() -> None:
    run = _binary_run(ones=5, zeros=3)
    (trace,) = run.plot.distribution().data
    values = list(trace.x)
    assert sorted(values) == [0.0] * 3 + [1.0] * 5
    lo_axis, hi_axis = run.plot.distribution().layout.xaxis.range
    bars = _bars(trace, values)
    assert sorted(bars.values()) == [3, 5]
    for (lo, hi), n in bars.items():
        # each bar lies whole inside the axis and inside the bins plotly draws
        assert lo_axis <= lo and hi <= hi_axis, (lo, hi, n)
        assert hi <= float(trace.xbins.end) + 1e-9
    one = next(n for (lo, hi), n in bars.items() if lo <= 1.0 < hi)
    assert one == 5


def _sliced_pair() -> tuple[eb.Run, eb.Run]:
    n = 24
    df = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(n)],
            "topic": ["math", "code", "chat"] * (n // 3),
            "y": [(i * 7 % 10) / 10 for i in range(n)],
        }
    )

    def make(shift: float, name: str) -> eb.Run:
        return eb.run(
            df,
            task=lambda y: y,
            scorers=[
                eb.scorer("hit")(
                    lambda output, y, topic: float(output + shift * (topic != "chat") > 0.5)
                ),
                eb.scorer("near")(lambda output, y: float(min(1.0, abs(output + shift - y)))),
            ],
            name=name,
            store=None,
            progress=False,
        )

    return make(0.0, "old"), make(0.3, "new")


def test_forest_has_one_row_per_slice_and_score_and_a_zero_line() -> None:
    old, new = _sliced_pair()
    cmp = eb.compare(old, new, by="topic")
    s = cmp.summary
    fig = cmp.plot.forest()
    (trace,) = fig.data
    assert len(trace.x) == len(s) == 6
    assert list(trace.x) == pytest.approx((s["delta"] * 100).tolist())
    assert list(trace.error_x.array) == pytest.approx(((s["ci_high"] - s["delta"]) * 100).tolist())
    assert list(trace.error_x.arrayminus) == pytest.approx(
        ((s["delta"] - s["ci_low"]) * 100).tolist()
    )
    ticks = list(fig.layout.yaxis.ticktext)
    expected = [f"topic={t} · {lab}" for t, lab in zip(s["topic"], s["label"], strict=True)]
    assert ticks == expected
    assert [(sh.x0, sh.x1) for sh in fig.layout.shapes] == [(0, 0)]  # the zero line
    # what plotly.js draws from the page: the ticks and bars decoded from its JSON arguments
    (drawn,) = _exported(fig).figures
    assert drawn.layout["yaxis"]["ticktext"] == expected
    assert drawn.data[0]["x"] == pytest.approx(list(trace.x))
    hit = cmp.plot.forest(score="hit")
    assert len(hit.data[0].x) == 3
    with pytest.raises(ValueError, match="not a compared score"):
        cmp.plot.forest(score="nope")


def test_forest_without_slices_is_one_row_per_score() -> None:
    old, new = _sliced_pair()
    fig = eb.compare(old, new).plot.forest()
    assert list(fig.layout.yaxis.ticktext) == ["hit", "near"]


PASSES: dict[str, list[float | None]] = {
    "all": [1, 1, 1, 1],
    "half": [1, 0, 1, 0],
    "none": [0, 0, 0, 0],
    "most": [1, 1, 1, 0],
    "skip": [None, None, None, None],  # unscored at every epoch: not counted
}


def _epoch_run(epochs: int) -> eb.Run:
    @eb.scorer("pass")
    def passes(output: str, case_id: str, epoch: int) -> Any:
        value = PASSES[case_id][epoch - 1]
        return eb.Unscored("no_answer") if value is None else value

    df = pd.DataFrame({"id": list(PASSES), "q": list(PASSES)})
    return eb.run(
        df, task=lambda q: q, scorers=[passes], epochs=epochs, name="ep", store=None, progress=False
    )


def test_consistency_histogram_holds_each_case_once() -> None:
    fig = _epoch_run(4).plot.consistency()
    (trace,) = fig.data
    values = list(trace.x)
    assert sorted(values) == [0.0, 50.0, 75.0, 100.0]  # one per counted case, in %
    lo_axis, hi_axis = fig.layout.xaxis.range
    bars = _bars(trace, values)
    assert sorted(bars.values()) == [1, 1, 1, 1]  # 0 %, 50 %, 75 % and 100 % apart
    for lo, hi in bars:
        assert lo_axis <= lo and hi <= hi_axis and hi <= float(trace.xbins.end)
    (note,) = fig.layout.annotations
    assert "4 cases × 4 epochs" in note.text and "not counted: 1 case" in note.text
    page = _exported(fig)
    assert page.figures[0].title == "Consistency over epochs · pass · ep"
    # what a viewer without JavaScript shows: the bars as text, before the chart
    assert "cases by mean — 0 %: 1 · 50 %: 1 · 75 %: 1 · 100 %: 1 · not counted: 1" in page.text


def test_consistency_needs_epochs() -> None:
    with pytest.raises(ValueError, match=r"needs epochs ≥ 2: run 'ep' has 1 epoch per case"):
        _epoch_run(1).plot.consistency()
    with pytest.raises(ValueError, match="unknown score"):
        _epoch_run(2).plot.consistency("nope")


def test_pareto_places_priced_runs_and_names_the_rest() -> None:
    runs = [
        costed_run("cheap", 2, 0.01),
        costed_run("dear", 3, 0.03),
        costed_run("worse", 2, 0.05),  # costs more than cheap, scores no better: off the front
        costed_run("unpriced", 4, None),
        costed_run("partly", 4, 0.02, unpriced=1),
    ]
    fig = eb.show(runs).figure  # the leaderboard view's cost-vs-score scatter
    front, points = fig.data
    assert list(points.text) == ["cheap", "dear", "worse"]
    assert list(points.x) == pytest.approx([0.01, 0.03, 0.05])  # never an unknown cost at $0
    assert list(points.y) == pytest.approx([50.0, 75.0, 50.0])
    assert list(front.x) == pytest.approx([0.01, 0.03]) and list(front.y) == pytest.approx([50, 75])
    board = eb.leaderboard(runs).set_index("name")
    for name, hi in zip(points.text, points.error_y.array, strict=True):
        assert hi == pytest.approx((board.loc[name, "ci_high"] - board.loc[name, "mean"]) * 100)
    (note,) = fig.layout.annotations
    assert note.text == (
        "not placed: 'unpriced' (cost known for 0 of 4 samples), "
        "'partly' (cost known for 3 of 4 samples)"
    )
    page = _exported(fig)
    # the no-JavaScript text before the chart, and the chart's own points and note
    assert "Pareto front (cost per sample against hit): 'cheap', 'dear' run" in page.text
    # each placed run's numbers, then what is not placed
    assert "cheap $0.01" in page.text and page.text.endswith(note.text)
    (drawn,) = page.figures
    assert drawn.data[1]["text"] == ["cheap", "dear", "worse"]
    assert [a["text"] for a in drawn.layout["annotations"]] == [note.text]


def test_pareto_refuses_runs_whose_headline_scores_differ() -> None:
    # the figure builder's own checks: eb.show([...]) checks its runs and the scores first,
    # so no public call reaches these
    from evalbook._render._pareto_plot import pareto_figure as plot_pareto

    other = _binary_run(1, 1, name="other")  # its headline is the "hit" score too, not primary
    plain = eb.run(
        pd.DataFrame({"q": ["a"]}),
        task=lambda q: q,
        scorers=[eb.scorer("ok")(lambda output: 1.0)],
        name="plain",
        store=None,
        progress=False,
    )
    with pytest.raises(ValueError, match=r"one headline score.*cheap: hit; plain: ok"):
        plot_pareto([costed_run("cheap", 2, 0.01), plain])
    assert len(plot_pareto({"x": other}).data[1].x) == 0  # no cost recorded: nothing placed
    with pytest.raises(ValueError, match="takes runs"):
        plot_pareto([pd.DataFrame()])
