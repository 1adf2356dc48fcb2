"""Issue 20: a headline without a primary score says what it is; the leaderboard shows its note."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

import evalbook as eb
from _page import visible_text

SNAPSHOTS = Path(__file__).parent / "snapshots"


def _two_scores_run(primary: bool = False) -> eb.Run:
    """Two cases, both passed; score `a` is 100 %, score `b` is 50 %."""
    a = eb.define_score("a", primary=primary)
    b = eb.define_score("b")

    @eb.scorer(a, b)
    def both(output: str) -> dict[str, float]:
        return {"a": 1.0, "b": 1.0 if output == "x" else 0.0}

    df = pd.DataFrame({"q": ["x", "y"]})
    return eb.run(df, task=lambda q: q, scorers=[both], name="np", store=None, progress=False)


def test_no_primary_headline_text_says_it_is_not_a_score() -> None:
    h = _two_scores_run().headline
    assert h.score is None and h.label == "Passed" and h.no_primary
    assert h.text == "No primary score · tasks passed 100% · completed 100%"


def test_one_score_or_a_primary_keeps_the_score_text() -> None:
    assert _two_scores_run(primary=True).headline.text == "a 100% · completed 100%"
    only = eb.define_score("only")
    run = eb.run(
        pd.DataFrame({"q": ["x"]}),
        task=lambda q: q,
        scorers=[eb.scorer(only)(lambda output: 0.5)],
        store=None,
        progress=False,
    )
    assert run.headline.text == "only 50% · completed 100%" and not run.headline.no_primary


def test_no_primary_card_says_what_it_is_and_nudges_to_declare_one() -> None:
    run = _two_scores_run()
    text = visible_text(run._repr_html_())
    assert "100% tasks passed" in text
    assert "No primary score: this is the share of tasks that passed" in text
    assert "eb.define_score(..., primary=True)" in text
    assert 'data-evalbook="no-primary"' in run.headline._repr_html_()


def test_a_primary_card_has_no_nudge() -> None:
    html = _two_scores_run(primary=True)._repr_html_()
    assert 'data-evalbook="no-primary"' not in html and "primary=True" not in visible_text(html)


def test_no_primary_headline_snapshot() -> None:
    html = _two_scores_run().headline._repr_html_()
    path = SNAPSHOTS / "headline-no-primary.html"
    assert html + "\n" == path.read_text(encoding="utf-8")


# -- the leaderboard's note -------------------------------------------------------------------


def _one_score_run(name: str, score: str, primary: bool, value: float) -> eb.Run:
    d = eb.define_score(score, primary=primary)
    return eb.run(
        pd.DataFrame({"q": ["x", "y"]}),
        task=lambda q: q,
        scorers=[eb.scorer(d)(lambda output: value)],
        name=name,
        store=None,
        progress=False,
    )


def test_the_note_calls_primary_only_what_a_run_declared() -> None:
    board = eb.leaderboard(
        [_one_score_run("a", "acc", True, 1.0), _one_score_run("b", "f1", False, 0.5)]
    )
    assert board.attrs["note"] == (
        "No ranking: headline scores differ (acc, f1 (its only score, not declared primary)), "
        "and one score's mean is no measure of another's. Give the runs one shared primary "
        "score to rank them."
    )
    board = eb.leaderboard([_one_score_run("a", "acc", True, 1.0), _two_scores_run()])
    assert board.attrs["note"] == (
        "No ranking: headline scores differ (acc, passed rate (no primary score)), "
        "and one score's mean is no measure of another's. Give the runs one shared primary "
        "score to rank them."
    )


def test_declared_primaries_that_differ_keep_the_documented_note() -> None:
    board = eb.leaderboard(
        [_one_score_run("a", "acc", True, 1.0), _one_score_run("b", "f1", True, 0.5)]
    )
    assert board.attrs["note"].startswith("No ranking: primary scores differ (acc, f1), ")


def test_the_board_display_shows_its_note_under_the_table() -> None:
    board = eb.leaderboard(
        [_one_score_run("a", "acc", True, 1.0), _one_score_run("b", "f1", True, 0.5)]
    )
    html = board._repr_html_()
    assert html.index("</table>") < html.index('data-evalbook="leaderboard-note"')
    assert "No ranking: primary scores differ (acc, f1), " in html
    same = eb.leaderboard([_one_score_run("a", "acc", True, 1.0)])
    assert "leaderboard-note" not in same._repr_html_()
