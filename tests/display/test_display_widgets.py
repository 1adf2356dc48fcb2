"""Widgets built without a frontend: tabs, case explorer filters, display bundles."""

from __future__ import annotations

import pytest

import evalbook as eb
import evalbook.display
from display_fixtures import EVIL, FakeComparison, demo_run, evil_run

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return demo_run()


def test_show_run_has_the_four_tabs(run: eb.Run) -> None:
    view = eb.show(run)
    titles = [view.tabs.get_title(i) for i in range(len(view.tabs.children))]
    assert titles == ["Headline", "Scores", "Unscored reasons", "Cases", "Case table"]
    assert "Pass" in view.tabs.children[0].value
    assert "empty_output" in view.tabs.children[2].value


def test_run_view_bundle_carries_static_html_and_text(run: eb.Run) -> None:
    view = eb.show(run)
    bundle = view._repr_mimebundle_()
    assert WIDGET_MIME in bundle
    table = view.table._static_html  # the Case table tab's static table
    assert 'data-evalbook="case-table"' in table
    assert bundle["text/html"] == run._repr_html_() + table  # the run's card, then the table
    assert bundle["text/plain"] == repr(run)


def test_case_explorer_filters_by_outcome(run: eb.Run) -> None:
    explorer = eb.show(run).explorer
    assert len(explorer.cases.options) == 12
    explorer.outcome.value = "errored"
    assert [label.split(" · ")[0] for label, _ in explorer.cases.options] == ["q09"]
    assert "ZeroDivisionError" in explorer.detail.value
    assert "1 of 12 cases match" in explorer.count.value


def test_case_explorer_filters_by_score_status_and_range(run: eb.Run) -> None:
    explorer = eb.show(run).explorer
    explorer.score.value = "answer.concise"
    explorer.status.value = "unscored"
    assert [pos for _, pos in explorer.cases.options] == [11]
    assert "empty_output" in explorer.detail.value
    explorer.status.value = "all"
    explorer.score.value = "answer.correct"
    explorer.range.value = (0.0, 0.5)
    wrong = {pos for _, pos in explorer.cases.options}
    values = run.wide()["answer.correct"]
    assert wrong == {i for i, v in enumerate(values) if v == 0.0}
    assert wrong  # the powers are wrong: the filter must find something


def test_case_explorer_with_nothing_matching(run: eb.Run) -> None:
    explorer = eb.show(run).explorer
    explorer.outcome.value = "timed_out"
    assert explorer.cases.options == ()
    assert "No case matches" in explorer.detail.value


def test_selecting_a_case_shows_it(run: eb.Run) -> None:
    explorer = eb.show(run).explorer
    explorer.cases.value = 4
    assert "2 ** 5" in explorer.detail.value


def test_filter_rejects_an_unknown_score(run: eb.Run) -> None:
    # the explorer offers known scores only: the filter is reached by its 0.1.0 public name
    with pytest.warns(DeprecationWarning, match="filter_cases is deprecated"):
        filter_cases = evalbook.display.filter_cases
    with pytest.warns(DeprecationWarning, match="CaseFilter is deprecated"):
        case_filter = evalbook.display.CaseFilter
    with pytest.raises(ValueError, match="unknown score 'nope'"):
        filter_cases(run, case_filter(score="nope"))


def test_show_comparison(run: eb.Run) -> None:
    comp = FakeComparison(run, demo_run("candidate"))
    view = eb.show(comp)
    titles = [view.tabs.get_title(i) for i in range(len(view.tabs.children))]
    assert titles == ["Summary", "Cases", "Warnings (1)"]
    assert len(view.cases.options) == 3  # what changed first: one improved, two regressed
    view.change.value = "regressed"
    assert len(view.cases.options) == 2
    view.cases.value = view.cases.options[0][1]
    assert "arithmetic-demo" in view.detail.value and "candidate" in view.detail.value
    view.change.value = "all"
    view.score.value = "answer.correct"
    assert len(view.cases.options) == 1
    bundle = view._repr_mimebundle_()
    html = bundle["text/html"]
    assert html == view.tabs.children[0].value  # the Summary tab: the comparison's card
    assert 'data-evalbook="comparison"' in html and "grader differs" in html
    assert "Comparison" in bundle["text/plain"]


def test_comparison_case_missing_from_a_run(run: eb.Run) -> None:
    comp = FakeComparison(run, run, text="only-here")
    view = eb.show(comp)
    view.cases.value = view.cases.options[-1][1]
    assert "not in this run" in view.detail.value


def test_widgets_escape_user_text() -> None:
    view = eb.show(evil_run())
    texts = [child.value for child in view.tabs.children[:3]]
    explorer = view.explorer
    for pos in range(len(explorer.cases.options)):
        explorer.cases.value = pos
        texts.append(explorer.detail.value)
    for text in texts:
        assert "<script" not in text.lower()
    assert EVIL in [label.split(" · ")[0] for label, _ in explorer.cases.options]  # plain text


def test_show_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="takes a Run or a Comparison"):
        eb.show(42)


def test_show_a_real_comparison(run: eb.Run) -> None:
    other = demo_run("other")
    comp = eb.compare(run, other, score="answer.correct")
    view = eb.show(comp)
    assert view.tabs.get_title(0) == "Summary"
    html = comp._repr_html_()
    assert html == view._repr_mimebundle_()["text/html"]
    assert "arithmetic-demo → other" in html and "answer.correct" in html
    assert comp.plot.deltas().data[0].x == (0.0,)
