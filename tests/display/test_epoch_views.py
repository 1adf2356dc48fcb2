"""Epochs in the views: the reducer on the cards, each case's epoch strip, the flakiness plot.

The run below has 6 cases × 5 epochs with known outcomes, so every strip and count is exact
(the marks are documented in _render/_cases.py; docs/repeats.md describes epochs). What a
reader sees: `run._repr_html_()`, the tabs of `eb.show(run)` and its case explorer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _chromium import chromium
from _page import Page, visible_text
from _store_helpers import drop_final_files
from display_fixtures import case_view, case_views, cases_where, demo_run, tab_html

pytest.importorskip("anywidget")

CASE_TEXT_LIMIT = 30_000  # characters of all the values a case view shows
MAX_EPOCHS = 20  # epochs a case view lists in full
STRIP_LIMIT = 50  # marks of an epoch strip

H = "\x00\x1b[2J\u202e<script>alert(1)</script>"
RAW = ("\x00", "\x1b", "\u202e")
P = eb.define_score("p", label="Pass", reducer=eb.pass_at(3), primary=True)
M = eb.define_score("m", label="Mean part")
# per case: the value of p at epochs 1..5 (None: the task raises at that epoch)
P_VALUES: dict[str, list[float | None]] = {
    "always": [1, 1, 1, 1, 1],
    "flaky": [1, 1, 0, 1, 1],
    "never": [0, 0, 0, 0, 0],
    "err": [1, None, 1, 1, 1],
    "skip": [0, 0, 0, 0, 0],  # unscored at every epoch
    "half": [0, 1, 0, 1, 0],
}


def _task(case_id: str, epoch: int) -> str:
    if P_VALUES[case_id][epoch - 1] is None:
        raise RuntimeError(f"boom at epoch {epoch}")
    return f"{case_id} says {epoch}"


@eb.scorer(P, M)
def _scorer(output: str, case_id: str, epoch: int) -> dict[str, Any]:
    if case_id == "skip":
        return {"p": eb.Unscored("no_answer"), "m": eb.Unscored("no_answer")}
    p = P_VALUES[case_id][epoch - 1]
    return {"p": p, "m": 0.5 if case_id == "half" else p}


def epoch_run(epochs: int = 5, name: str = "epochs-demo") -> eb.Run:
    """6 cases × `epochs` epochs: always, flaky, never, errored at epoch 2, unscored, half."""
    df = pd.DataFrame({"id": list(P_VALUES), "q": [f"question {k}" for k in P_VALUES]})
    return eb.run(
        df, task=_task, scorers=[_scorer], epochs=epochs, name=name, store=None, progress=False
    )


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return epoch_run()


# -- 1. the headline card and the score cards ------------------------------------------------


def test_cards_show_cases_times_epochs_and_each_scores_reducer(run: eb.Run) -> None:
    text = visible_text(tab_html(run, "Headline"))
    assert "6 cases × 5 epochs" in text
    assert re.search(r"Pass pass@3 95% CI", text), text  # the headline card, after its label
    assert re.search(r"Mean part mean", text), text  # the other score's card
    header = visible_text(run._repr_html_()).split(" · run ")[0]
    assert header == "epochs-demo · 6 cases × 5 epochs"  # cases, not the 30 samples


def test_summary_grid_has_a_reducer_column_with_epochs(run: eb.Run) -> None:
    text = visible_text(tab_html(run, "Scores"))
    assert text.startswith("score reducer mean 95% CI counted")
    assert "Pass p pass@3" in text and "Mean part m mean" in text


def test_one_epoch_shows_a_reducer_only_when_it_is_not_the_mean() -> None:
    one = eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q: q,
        scorers=[eb.scorer(eb.define_score("k", reducer=eb.pass_at(1)))(lambda output: 1.0)],
        store=None,
        progress=False,
    )
    assert "pass@1" in visible_text(tab_html(one, "Headline"))
    assert visible_text(tab_html(one, "Scores")).startswith("score reducer mean")
    plain = eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q: q,
        scorers=[lambda output: 1.0],
        store=None,
        progress=False,
    )
    cards = visible_text(plain._repr_html_())
    assert "mean" not in cards and "epochs" not in cards and "2 cases · run" in cards
    assert visible_text(tab_html(plain, "Scores")).startswith("score mean 95% CI")


def test_unscored_shares_are_of_samples(run: eb.Run) -> None:
    text = visible_text(tab_html(run, "Unscored reasons"))
    # p: 5 unscored samples (case skip) and 1 errored sample (case err) of 30
    assert "Pass p · 30 samples" in text
    assert re.search(r"unscored no_answer 5 17% ", text), text
    assert re.search(r"error case_errored 1 3% ", text), text


# -- 2. the case explorer: each case's epochs as a strip --------------------------------------

STRIPS_P = ["■■■■■ 5/5", "■■□■■ 4/5", "□□□□□ 0/5", "■✕■■■ 4/4", "○○○○○ 0/0", "□■□■□ 2/5"]
STRIPS_M = ["■■■■■ 5/5", "■■□■■ 4/5", "□□□□□ 0/5", "■✕■■■ 4/4", "○○○○○ 0/0", "▣▣▣▣▣ 2.5/5"]


def _strips(run: eb.Run, score: str) -> list[str]:
    """Each case's epoch strip for `score`, as the case explorer lists the cases."""
    explorer = eb.show(run).explorer
    explorer.score.value = score
    return [label.split(" · ")[1] for label, _ in explorer.cases.options]


def test_each_case_has_its_exact_strip(run: eb.Run) -> None:
    assert _strips(run, "p") == STRIPS_P
    assert _strips(run, "m") == STRIPS_M
    k = STRIP_LIMIT + 3
    many = eb.run(pd.DataFrame({"q": ["a"]}), task=lambda q: q, epochs=k, store=None,
                  scorers=[lambda output: 0.0], progress=False)  # fmt: skip
    assert _strips(many, "lambda") == ["□" * STRIP_LIMIT + f"… (+3) 0/{k}"]


def test_an_epoch_not_run_yet_is_a_dot_in_the_strip(tmp_path: Path) -> None:
    run = eb.run(pd.DataFrame({"q": ["a"]}), task=lambda q: q, epochs=2, store=tmp_path,
                 scorers=[lambda output: 1.0], progress=False)  # fmt: skip
    assert run.path is not None
    drop_final_files(run.path)
    log = run.path / "events.jsonl"  # as a crash leaves it: epoch 1 never ended
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(x for x in lines if '"epoch":1,' not in x))
    with pytest.warns(RuntimeWarning, match="incomplete"):
        loaded = eb.load_run(run.path)
    assert _strips(loaded, "lambda") == ["·■ 1/1"]


def test_the_case_view_shows_strip_reduced_value_and_every_epoch(run: eb.Run) -> None:
    reduced = run.reduced()
    assert list(reduced["case_id"].astype(str)[::2]) == list(P_VALUES)  # case order, per score
    flaky, err, skip = case_views(run, (1, 3, 4))
    text = visible_text(flaky)  # flaky: pass@3 of 4/5 is 1, mean 0.8
    assert "Pass p pass@3 scored 1 sd 0.447 ■■□■■ 4/5" in text
    assert "Mean part m mean scored 0.8 sd 0.447 ■■□■■ 4/5" in text
    for e in range(1, 6):
        assert f"epoch {e} ran attempts 1 flaky says {e}" in text
    assert text.index("epoch 3 ran") < text.index("Pass p scored 0 counted 0")
    err = visible_text(err)
    assert "err ran 4 errored 1 5 epochs" in err
    assert "epoch 2 errored attempts 1 error: RuntimeError boom at epoch 2 (no output)" in err
    skip = visible_text(skip)
    assert "Pass p pass@3 unscored · no_answer ○○○○○ 0/0" in skip


def test_one_epoch_views_have_no_strip(run: eb.Run) -> None:
    one = demo_run()  # its case view is also a snapshot (tests/render/test_static_html.py)
    html = case_view(one, 1)
    assert 'data-evalbook="strip"' not in html and 'data-evalbook="epoch"' not in html
    assert "■" not in html and "□" not in html
    assert 'data-evalbook="strip"' in case_view(run, 1)


def test_filters_keep_a_case_when_one_epoch_matches(run: eb.Run) -> None:
    assert cases_where(run, score="p", range=(0.0, 0.5)) == [1, 2, 5]
    assert cases_where(run, score="p", range=(0.5, 1.0)) == [0, 1, 3, 5]
    assert cases_where(run, outcome="errored") == [3]
    assert cases_where(run, score="p", status="unscored") == [4]
    assert cases_where(run) == list(range(6))


def test_the_explorer_lists_cases_with_strip_and_reduced_value(run: eb.Run) -> None:
    view = eb.show(run)
    explorer = view.explorer
    assert [label for label, _ in explorer.cases.options] == [
        "always · ■■■■■ 5/5 · 1",
        "flaky · ■■□■■ 4/5 · 1",
        "never · □□□□□ 0/5 · 0",
        "err · ■✕■■■ 4/4 · 1",
        "skip · ○○○○○ 0/0 · —",
        "half · □■□■□ 2/5 · 0.9",  # pass@3 of 2 in 5: 1 − C(3, 3)/C(5, 3)
    ]
    assert "6 of 6 cases × 5 epochs match" in explorer.count.value
    explorer.score.value = "m"
    explorer.range.value = (0.0, 0.5)
    assert [pos for _, pos in explorer.cases.options] == [1, 2, 5]
    explorer.cases.value = 5
    assert "▣▣▣▣▣ 2.5/5" in visible_text(explorer.detail.value)


def test_a_comparison_shows_the_pair_of_the_chosen_case(run: eb.Run) -> None:
    view = eb.show(eb.compare(run, epoch_run(name="other")))
    view.change.value = "all"
    flaky = next(pos for label, pos in view.cases.options if label.startswith("flaky · p"))
    view.cases.value = flaky
    text = visible_text(view.detail.value)
    assert text.count("flaky ran 5 5 epochs") == 2, text[:400]  # not another case's epoch


def test_an_epoch_case_view_is_bounded_with_megabyte_texts(
    record_property: Callable[[str, object], None],
) -> None:
    mb = "y" * 1_000_000
    score = eb.define_score("s")

    @eb.scorer(score)
    def long_scorer(output: str, epoch: int) -> eb.Score:
        return eb.Score(float(epoch % 2), rationale=mb)

    def task(q: str, epoch: int) -> str:
        if epoch == 3:
            raise RuntimeError(mb)
        return mb

    big = eb.run(
        pd.DataFrame({"q": [mb]}), task=task, scorers=[long_scorer], epochs=30, store=None,
        progress=False,
    )  # fmt: skip
    html = case_view(big, 0)
    size = len(html.encode("utf-8"))
    shown = visible_text(html)
    figure = f"epoch case view of 30 epochs with 1 MB texts: {size / 1000:.0f} KB"
    print(figure)
    record_property("epoch_case_view", figure)
    assert size < 100_000
    assert shown.count("y") <= CASE_TEXT_LIMIT
    assert f"… {30 - MAX_EPOCHS} more epochs" in shown
    assert f"epoch {MAX_EPOCHS} " in shown and f"epoch {MAX_EPOCHS + 1} " not in shown
    assert "■□✕□■□" in shown  # epoch 3 errored: its record is an error


def test_hostile_text_in_ids_and_outputs_is_escaped_in_the_epoch_views() -> None:
    score = eb.define_score("s", label=H)

    @eb.scorer(score)
    def hostile(output: str, epoch: int) -> eb.Score:
        return eb.Score(float(epoch == 1), rationale=H)

    df = pd.DataFrame({"id": [H + "a", H + "b"], "q": [H, H]})
    hostile_run = eb.run(
        df, task=lambda q: q + H, scorers=[hostile], epochs=2, name=H, store=None, progress=False
    )
    views = [*case_views(hostile_run, range(2)), hostile_run._repr_html_()]
    pytest.importorskip("plotly")
    fig = hostile_run.plot.flakiness()
    bundle = fig._repr_mimebundle_()
    views.append(bundle["text/html"].split("<script")[0])  # the fallback, before the chart
    for html in views:
        assert not [ch for ch in RAW if ch in html]
        assert "<script>" not in html and "&lt;script&gt;" in html
        assert "color: inherit" in html and "<style" not in html and "<table" not in html
    assert "■□ 1/2" in visible_text(views[0])
    figure_text = [fig.layout.title.text, bundle["text/plain"], *(t.name for t in fig.data)]
    figure_text.append(fig.layout.legend.title.text)
    assert not [t for t in figure_text if any(ch in t for ch in RAW)]
    assert "\\u202e" in fig.layout.title.text and "sometimes right (2)" in figure_text
    labels = [label for label, _ in eb.show(hostile_run).explorer.cases.options]
    assert len(labels) == 2 and not [t for t in labels if any(ch in t for ch in RAW)]
    assert labels[0].endswith(" · ■□ 1/2 · 0.5")


# -- 3. the flakiness plot --------------------------------------------------------------------


def test_flakiness_counts_cases_always_sometimes_never_right(run: eb.Run) -> None:
    pytest.importorskip("plotly")
    fig = run.plot.flakiness()  # the headline score, p
    assert [t.name for t in fig.data] == [
        "always right (2)",  # always, and err (its counted epochs are all 1)
        "sometimes right (2)",
        "never right (1)",
    ]
    assert [sorted(t.x) for t in fig.data] == [[100.0, 100.0], [40.0, 80.0], [0.0]]
    assert fig.layout.barmode == "stack"
    assert fig.layout.annotations[0].text == "not counted: 1 case · 6 cases × 5 epochs"  # skip
    m = run.plot.flakiness("m")  # half: 0.5 at every epoch is sometimes right, at 50 %
    assert sorted(m.data[1].x) == [50.0, 80.0]
    with pytest.raises(ValueError, match="unknown score 'nope'"):
        run.plot.flakiness("nope")
    assert ".flakiness(score=None)" in repr(run.plot)


def test_the_flakiness_bundle_shows_the_counts_without_javascript(run: eb.Run) -> None:
    pytest.importorskip("plotly")
    bundle = run.plot.flakiness()._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle
    page = Page.of(bundle["text/html"])
    assert len(page.figures) == 1
    no_js = page.text  # the scripts (plotly.js, the chart's data) show nothing without JavaScript
    assert no_js == (
        "Flakiness · Pass p · 6 cases × 5 epochs always 2 (33%) sometimes 2 (33%) "
        "never 1 (17%) not counted 1 (17%)"
    )
    assert bundle["text/plain"] == (
        "Pass: always right 2 · sometimes 2 · never 1 · not counted 1 (of 6 cases × 5 epochs)"
    )


def test_flakiness_with_one_epoch_says_it_needs_epochs() -> None:
    pytest.importorskip("plotly")
    fig = demo_run().plot.flakiness()
    assert len(fig.data) == 0
    (note,) = fig.layout.annotations
    assert note.text.startswith("Flakiness needs epochs ≥ 2: this run has 1 epoch per case.")
    bundle = fig._repr_mimebundle_()
    assert bundle["text/plain"] == note.text
    assert "Flakiness needs epochs ≥ 2" in visible_text(bundle["text/html"].split("<script")[0])


def test_other_figures_count_samples_with_epochs(run: eb.Run) -> None:
    pytest.importorskip("plotly")
    fig = run.plot.unscored()
    assert fig.layout.yaxis.title.text == "records (of 30 samples)"
    assert [sum(t.y[i] for t in fig.data) for i in range(2)] == [30, 30]
    text = run.plot.distribution()._repr_mimebundle_()["text/plain"]  # the numbers it draws
    assert text.startswith("Score distribution · epochs-demo (records by value, 0.05 bins)")
    assert "Pass: value: records 0.00: 9 · 1.00: 15" in text  # 24 of the 30 samples recorded


# -- 4. what an exported notebook shows (nbconvert, no kernel, no JavaScript run) -------------


def _exported(run: eb.Run) -> str:
    """An nbconvert HTML export of a notebook showing `run`'s views (built without a kernel)."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    pytest.importorskip("anywidget")
    pytest.importorskip("plotly")

    def cell(source: str, data: dict[str, Any]) -> Any:
        code = nbformat.v4.new_code_cell(source)
        code.outputs = [nbformat.v4.new_output("display_data", data=data)]
        return code

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        cell("run", {"text/html": run._repr_html_(), "text/plain": repr(run)}),
        cell("eb.show(run)", eb.show(run)._repr_mimebundle_()),
        cell("run.plot.flakiness()", run.plot.flakiness()._repr_mimebundle_()),
        cell("run.plot.flakiness()", demo_run().plot.flakiness()._repr_mimebundle_()),
        # what the explorer's detail widget holds for the flaky case
        cell("explorer", {"text/html": case_view(run, 1), "text/plain": "case"}),
    ]
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    return str(body)


CARDS = "Pass pass@3 95% CI [36%, 96%] completed 97% · 6 cases × 5 epochs"
COUNTS = (
    "Flakiness · Pass p · 6 cases × 5 epochs always 2 (33%) sometimes 2 (33%) never 1 (17%) "
    "not counted 1 (17%)"
)


def test_an_exported_notebook_shows_reducers_consistency_strips_and_counts(run: eb.Run) -> None:
    visible_text = Page.of(_exported(run)).text  # nbconvert's page, no script or style shown
    assert visible_text.count(CARDS) == 2  # the run's repr and the widget's static HTML
    assert "mean over 5 of 6 cases" in visible_text  # the case not counted is said
    assert visible_text.count(COUNTS) == 3  # and the flakiness figure's fallback
    assert "Flakiness needs epochs ≥ 2" in visible_text
    assert "Pass p pass@3 scored 1 sd 0.447 ■■□■■ 4/5" in visible_text
    assert "epoch 5 ran attempts 1 flaky says 5" in visible_text


@pytest.mark.browser
@pytest.mark.parametrize("javascript", [False, True])
def test_chromium_shows_the_exported_epoch_views(
    run: eb.Run, javascript: bool, tmp_path: Path
) -> None:
    page_file = tmp_path / "exported.html"
    page_file.write_text(_exported(run), encoding="utf-8")
    with chromium() as browser:
        context = browser.new_context(java_script_enabled=javascript)
        # offline, as a viewer without network: plotly.js from its CDN never loads
        context.route("http*://**", lambda route: route.abort())
        page = context.new_page()
        page.goto(page_file.as_uri(), wait_until="load")
        counts = page.locator("[data-evalbook='flakiness']")
        assert counts.count() == 4  # repr, widget fallback, both figures' fallbacks
        if javascript:  # both charts drawn, and their numbers then hidden (not shown twice)
            page.wait_for_function(
                "document.querySelectorAll('.plotly-graph-div[data-drawn]').length == 2",
                timeout=30_000,
            )
            assert [c.is_visible() for c in counts.all()] == [True, True, False, False]
        else:
            assert all(c.is_visible() for c in counts.all())
        badges = counts.first.locator("span[style*='border-radius: 9px']").all_inner_texts()
        assert badges == [
            "always 2 (33%)",
            "sometimes 2 (33%)",
            "never 1 (17%)",
            "not counted 1 (17%)",
        ]
        strip = page.locator("[data-evalbook='strip']").first
        assert strip.is_visible() and strip.inner_text() == "■■□■■ 4/5"
