"""Static HTML views: snapshots, content, dark-theme rules, and escaping of every field.

What a notebook shows: `run._repr_html_()`, `run.headline._repr_html_()`, the tabs and the
case explorer of `eb.show(run)`, and a comparison's card (the static HTML of `eb.show(comp)`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _page import visible_text
from display_fixtures import (
    EVIL,
    EVIL_ESCAPED,
    FakeComparison,
    case_view,
    case_views,
    cases_where,
    demo_run,
    evil_run,
    tab_html,
)

pytest.importorskip("anywidget")

SNAPSHOTS = Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("EVALBOOK_UPDATE_SNAPSHOTS") == "1"


def _check_snapshot(name: str, html: str) -> None:
    path = SNAPSHOTS / f"{name}.html"
    if UPDATE or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html + "\n", encoding="utf-8")
        if not UPDATE:
            pytest.fail(f"snapshot {path.name} was missing and has been written; re-run")
    assert html + "\n" == path.read_text(encoding="utf-8"), (
        f"{name} changed; if intended, re-run with EVALBOOK_UPDATE_SNAPSHOTS=1 and review the diff"
    )


@pytest.fixture(scope="module")
def run():  # type: ignore[no-untyped-def]
    return demo_run()


def comparison_html(comp: Any) -> str:
    """A comparison's card: the static HTML `eb.show(comp)` carries (its Summary tab)."""
    return str(eb.show(comp)._repr_mimebundle_()["text/html"])


def comparison_text(comp: Any) -> str:
    """A comparison's text form: the text `eb.show(comp)` carries (a Comparison's repr)."""
    return str(eb.show(comp)._repr_mimebundle_()["text/plain"])


# -- snapshots --------------------------------------------------------------------------------


def test_run_card_snapshot(run) -> None:  # type: ignore[no-untyped-def]
    _check_snapshot("run", run._repr_html_())


def test_headline_snapshot(run) -> None:  # type: ignore[no-untyped-def]
    _check_snapshot("headline", run.headline._repr_html_())


def test_case_snapshot(run) -> None:  # type: ignore[no-untyped-def]
    (errored,) = cases_where(run, outcome="errored")
    _check_snapshot("case-errored", case_view(run, errored))


def test_comparison_snapshot(run) -> None:  # type: ignore[no-untyped-def]
    _check_snapshot("comparison", comparison_html(FakeComparison(run, demo_run("other"))))


# -- what the cards say -----------------------------------------------------------------------


def test_headline_card_shows_value_ci_completion_and_counts(run) -> None:  # type: ignore[no-untyped-def]
    text = visible_text(run._repr_html_())
    h = run.headline
    assert (h.value, round(h.ci[0], 2), round(h.ci[1], 2)) == (0.8, 0.49, 0.94)
    assert "80% Pass 95% CI [49%, 94%]" in text
    assert "completed 92% · 12 cases" in text
    for part in ("ran 11", "failed 0", "errored 1", "timed out 0"):
        assert part in text
    assert "counted 10 · unscored 1 · errors 1 · excluded 1" in text


def test_every_other_score_gets_a_card(run) -> None:  # type: ignore[no-untyped-def]
    html = run._repr_html_()
    assert html.count('data-evalbook="score"') == len(run.definitions) - 1
    assert html.count('data-evalbook="headline"') == 1
    assert "Correct answer" in html and "Concise" in html


def test_unscored_breakdown_counts_and_share(run) -> None:  # type: ignore[no-untyped-def]
    text = visible_text(tab_html(run, "Unscored reasons"))
    assert text.count("error case_errored 1 8%") == 3  # one per score, 1 of 12 cases
    assert "unscored empty_output 1 8%" in text
    assert "unscored component_unscored:answer.concise 1 8%" in text


def test_unscored_breakdown_when_everything_scored(run) -> None:  # type: ignore[no-untyped-def]
    assert "Every record was scored" not in tab_html(run, "Unscored reasons")
    scored = eb.run(pd.DataFrame({"q": ["a", "b"]}), task=lambda q: q, store=None,
                    scorers=[lambda output: 1.0], progress=False)  # fmt: skip
    assert scored.unscored().empty
    assert "Every record was scored" in tab_html(scored, "Unscored reasons")
    assert "Every record was scored" in scored._repr_html_()


def test_summary_grid_has_a_row_per_score(run) -> None:  # type: ignore[no-untyped-def]
    text = visible_text(tab_html(run, "Scores"))
    for d in run.definitions:
        assert d.name in text


def test_no_tables_no_style_blocks_and_theme_safe(run) -> None:  # type: ignore[no-untyped-def]
    for html in (run._repr_html_(), comparison_html(FakeComparison(run, run))):
        assert "<style" not in html and "<table" not in html and "<script" not in html
        assert "color: inherit" in html
        assert "rgba(127, 127, 127, 0.35)" in html  # translucent borders
        assert "#fff" not in html.lower() and "#000" not in html  # no hard-coded page colours


def test_case_detail_shows_input_output_and_every_score(run) -> None:  # type: ignore[no-untyped-def]
    pos = 1
    text = visible_text(case_view(run, pos))
    row = run.data.iloc[pos]
    assert row["question"] in text and str(run.cases["output"][pos]) in text
    assert text.count("scored") >= len(run.definitions)
    assert "grader rule / exact" in text


def test_errored_case_shows_its_error(run) -> None:  # type: ignore[no-untyped-def]
    (pos,) = cases_where(run, outcome="errored")
    text = visible_text(case_view(run, pos))
    assert "ZeroDivisionError" in text and "case_errored" in text


def test_comparison_shows_warnings_deltas_p_and_counts(run) -> None:  # type: ignore[no-untyped-def]
    comp = FakeComparison(run, demo_run("candidate"))
    html = comparison_html(comp)
    text = visible_text(html)
    assert html.index('data-evalbook="warnings"') < html.index('data-evalbook="comparison-score"')
    assert "1 warning" in text and "grader differs" in text
    assert "+10.0 pp" in text and "95% CI [+2.0 pp, +18.0 pp]" in text
    assert "−15.0 pp" in text and "p < 0.001" in text and "p = 0.03" in text
    assert "▲ improved 2" in text and "▼ regressed 3" in text
    assert "arithmetic-demo → candidate" in text
    assert "Regressions" in text and "q02" in text
    plain = comparison_text(comp)
    assert (
        "  ! Score answer.correct: grader differs" in plain and "2 improved, 0 regressed" in plain
    )


def test_comparison_without_warnings_has_no_warning_box(run) -> None:  # type: ignore[no-untyped-def]
    comp = FakeComparison(run, run)
    comp.warnings = []
    assert 'data-evalbook="warnings"' not in comparison_html(comp)


# -- escaping ---------------------------------------------------------------------------------


def test_every_view_escapes_every_field() -> None:
    run = evil_run()
    views = {"run": run._repr_html_(), "headline": run.headline._repr_html_()}
    shown = case_views(run, range(len(run.cases)))
    views.update({f"case{i}": html for i, html in enumerate(shown)})
    views["comparison"] = comparison_html(FakeComparison(run, run, text=EVIL))
    views["comparison-text"] = comparison_text(FakeComparison(run, run, text=EVIL))
    for name, html in views.items():
        if name != "comparison-text":
            assert "<script" not in html.lower(), name
    # Each field is actually shown (escaped), not dropped.
    cases = "".join(v for k, v in views.items() if k.startswith("case"))
    assert f"rationale: </span>{EVIL_ESCAPED}" in cases  # rationale
    assert f"metadata {{&quot;{EVIL_ESCAPED}" in cases  # metadata
    assert cases.count(EVIL_ESCAPED) >= 8  # ids, inputs, column names, output, reasons, errors
    assert f"grader model / {EVIL_ESCAPED}" in cases  # grader id and model
    assert f"RuntimeError</b> {EVIL_ESCAPED}" in cases  # task error message
    assert f"ValueError: {EVIL_ESCAPED}" in cases  # scorer error message
    assert EVIL_ESCAPED in views["run"]  # run name, labels, unscored reason
    assert views["run"].count(EVIL_ESCAPED) >= 4
    assert EVIL_ESCAPED in views["headline"]  # label
    comp = views["comparison"]
    assert comp.count(EVIL_ESCAPED) >= 3  # warning, label, case id, run names


def test_evil_text_constant_is_really_escaped_by_the_views() -> None:
    assert EVIL not in evil_run()._repr_html_()
