"""Epochs in the views: the reducer on the cards, each case's epoch strip, the flakiness plot.

The run below has 6 cases × 5 epochs with known outcomes, so every strip and count is exact
(the marks are documented in display/_cases.py; docs/repeats.md describes epochs).
"""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from evalbook.display._html import run_cards_html, run_html, summary_html, unscored_html

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


def _text(html: str) -> str:
    """The visible text of an HTML fragment (tags removed, whitespace squeezed)."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).strip())


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
    text = _text(run_cards_html(run))
    assert "6 cases × 5 epochs" in text
    assert re.search(r"Pass pass@3 95% CI", text), text  # the headline card, after its label
    assert re.search(r"Mean part mean", text), text  # the other score's card
    header = _text(run_html(run)).split(" · run ")[0]
    assert header == "epochs-demo · 6 cases × 5 epochs"  # cases, not the 30 samples


def test_summary_grid_has_a_reducer_column_with_epochs(run: eb.Run) -> None:
    text = _text(summary_html(run.summary()))
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
    assert "pass@1" in _text(run_cards_html(one))
    assert _text(summary_html(one.summary())).startswith("score reducer mean")
    plain = eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q: q,
        scorers=[lambda output: 1.0],
        store=None,
        progress=False,
    )
    cards = _text(run_html(plain))
    assert "mean" not in cards and "epochs" not in cards and "2 cases · run" in cards
    assert _text(summary_html(plain.summary())).startswith("score mean 95% CI")


def test_unscored_shares_are_of_samples(run: eb.Run) -> None:
    text = _text(unscored_html(run.unscored(), run.summary()))
    # p: 5 unscored samples (case skip) and 1 errored sample (case err) of 30
    assert "Pass p · 30 samples" in text
    assert re.search(r"unscored no_answer 5 17% ", text), text
    assert re.search(r"error case_errored 1 3% ", text), text
