"""Plotly figures: go.Figure, the numbers they plot, and an export-safe display bundle."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd
import plotly.graph_objects as go
import pytest

import evalbook as eb
from display_fixtures import QUESTIONS, demo_run, exact, model, passed, short


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return demo_run()


def test_unscored_figure_stacks_every_record(run: eb.Run) -> None:
    fig = run.plot.unscored()
    assert isinstance(fig, go.Figure) and not isinstance(fig, go.FigureWidget)
    assert fig.layout.barmode == "stack"
    names = [t.name for t in fig.data]
    assert names[0] == "scored"
    assert "unscored: empty_output" in names and "error: case_errored" in names
    totals = [sum(t.y[i] for t in fig.data) for i in range(len(run.definitions))]
    assert totals == [12, 12, 12]  # exactly one record per (case, score)
    empty = next(t for t in fig.data if t.name == "unscored: empty_output")
    assert list(empty.y) == [0, 1, 0]


def test_distribution_figure_counts_recorded_values(run: eb.Run) -> None:
    fig = run.plot.distribution()
    assert [t.name for t in fig.data] == [d.display_label() for d in run.definitions]
    scored = run.scores[run.scores["value"].notna()]
    assert sum(len(t.x) for t in fig.data) == len(scored)
    one = run.plot.distribution("answer.correct")
    assert len(one.data) == 1
    with pytest.raises(ValueError, match="unknown score"):
        run.plot.distribution("nope")


def test_deltas_figure(run: eb.Run) -> None:
    def better(question: str) -> str:  # right on the powers too (the demo's model is not)
        if question and "**" in question:
            a, _, b = question.split()
            return str(int(a) ** int(b))
        return model(question)

    other = eb.run(QUESTIONS, better, scorers=[exact, short], scores=[passed], name="better",
                   store=None, progress=False)  # fmt: skip
    comp = eb.compare(run, other, score=["answer.correct", "answer.pass"])
    s = comp.summary
    assert s["delta"].gt(0).all() and len(s) == 2  # the powers are right now: both improve
    (trace,) = comp.plot.deltas().data
    # the delta in pp, its CI as error bars (each side its own length)
    assert list(trace.x) == pytest.approx((s["delta"] * 100).tolist())
    assert list(trace.error_x.array) == pytest.approx(((s["ci_high"] - s["delta"]) * 100).tolist())
    assert list(trace.error_x.arrayminus) == pytest.approx(
        ((s["delta"] - s["ci_low"]) * 100).tolist()
    )
    assert list(trace.y) == s["label"].tolist()


def test_a_sliced_comparisons_deltas_are_one_labelled_row_each() -> None:
    # issue 35 item 3: every slice's delta of one score once stacked on one unlabelled row
    data = pd.DataFrame({"q": [f"q{i}" for i in range(40)], "topic": ["x", "y"] * 20})

    def ok(keep: str) -> Any:
        return eb.scorer("ok")(lambda output: float(output[-1] in keep))

    a = eb.run(data, task=lambda q: q, scorers=[ok("02")], name="a", store=None, progress=False)
    b = eb.run(data, task=lambda q: q, scorers=[ok("0")], name="b", store=None, progress=False)
    comp = eb.compare(a, b, by="topic")
    (trace,) = comp.plot.deltas().data
    rows = comp.summary[comp.summary["delta"].notna()]
    assert len(trace.y) == len(rows) >= 2
    assert len(set(trace.y)) == len(trace.y)  # a row each, none on top of another
    assert all("topic=" in label for label in trace.y if label != "ok")


def test_bundle_survives_export(run: eb.Run) -> None:
    bundle = run.plot.unscored()._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle
    html = bundle["text/html"]
    # plotly.js is embedded (an export shows the chart offline), never loaded from a CDN
    assert not re.search(r"<script[^>]*\ssrc=", html)  # no script from anywhere else
    assert "Plotly.newPlot" in html and len(html) > 1_000_000
    # text/plain: the numbers it draws (a viewer without JavaScript reads them)
    assert bundle["text/plain"].startswith("Unscored reasons and errors")
    assert "error: case_errored" in bundle["text/plain"]


def test_plot_accessor_repr(run: eb.Run) -> None:
    assert ".unscored()" in repr(run.plot)


def test_ipython_display_publishes_the_whole_bundle(run: eb.Run) -> None:
    # plotly's own hook would publish only the default renderer's output (no HTML fallback).
    from IPython.testing.globalipapp import start_ipython
    from IPython.utils.capture import capture_output

    start_ipython()
    with capture_output() as captured:
        run.plot.unscored()._ipython_display_()
    (output,) = captured.outputs
    assert {"application/vnd.plotly.v1+json", "text/html", "text/plain"} <= set(output.data)
