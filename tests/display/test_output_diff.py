"""The comparison's case view: outputs side by side with the differing words marked."""

from __future__ import annotations

import re

import pandas as pd
import pytest

import evalbook as eb
from display_fixtures import EVIL, EVIL_ESCAPED
from evalbook._render import _diff

pytest.importorskip("anywidget")

DIFF_LIMIT = 10_000  # characters of each output the diff compares


def _marked(html: str, kind: str) -> list[str]:
    return re.findall(rf'data-diff="{kind}"[^>]*>(.*?)</span>', html)


def _run(outputs: dict[str, str], name: str) -> eb.Run:
    df = pd.DataFrame({"id": list(outputs), "q": list(outputs)})
    return eb.run(
        df,
        task=lambda q: outputs[q],
        scorers=[lambda output: 1.0 if "cat" in output else 0.0],
        name=name,
        store=None,
        progress=False,
    )


def _pair(a: str, b: str) -> str:
    """The output diff of one case whose output is `a` in run A and `b` in run B: the top of
    the Cases tab's detail in `eb.show(eb.compare(A, B))`, before each run's case view."""
    view = eb.show(eb.compare(_run({"q": a}, "A"), _run({"q": b}, "B")))
    view.change.value = "all"
    detail = view.detail.value
    start = detail.index('data-evalbook="pair-view"')
    return str(detail[start : detail.index('<div style="flex: 1 1 420px', start)])


def word_diff(a: str, b: str) -> tuple[str, str]:
    """The two sides of the output diff: the HTML of output A and of output B."""
    left, right = re.findall(r'overflow-y: auto">(.*?)</div>', _pair(a, b), re.S)
    return left, right


def test_word_diff_marks_only_the_words_that_differ() -> None:
    left, right = word_diff("the cat sat on the mat", "the dog sat on the mat")
    assert _marked(left, "del") == ["cat"] and _marked(right, "ins") == ["dog"]
    assert "sat on the mat" in left and "sat on the mat" in right


def test_word_diff_escapes_every_piece() -> None:
    left, right = word_diff(f"a {EVIL}\x1b", f"b {EVIL}\u202e")
    for side in (left, right):
        assert "<script" not in side and "\x1b" not in side and "\u202e" not in side
    assert EVIL_ESCAPED in left and "\\x1b" in left and "\\u202e" in right


def test_a_100kb_output_is_diffed_on_its_start_and_says_so() -> None:
    a = "".join(f"w{i % 9973} " for i in range(18_000))  # 100 kB of words
    at = a.index(" ", 5_000) + 1  # after a word
    b = a[:at] + "CHANGED " + a[at:]
    assert len(a) > 100_000
    html = _pair(a, b)
    assert _marked(html, "ins") == ["CHANGED"]
    assert html.count(f"diff of the first {DIFF_LIMIT:,} characters") == 2
    assert len(html) < 100_000


def test_the_cases_tab_opens_on_what_changed() -> None:
    a = _run({"q1": "a cat", "q2": "same text", "q3": "no"}, "before")
    b = _run({"q1": "a dog", "q2": "same text", "q3": "a cat now"}, "after")
    view = eb.show(eb.compare(a, b))
    assert view.change.value == "changed"
    listed = [label.split(" · ")[0] for label, _ in view.cases.options]
    assert listed == ["q1", "q3"]  # q2 is the same in both runs: not listed by default
    detail = view.detail.value  # q1, the first changed pair, is open
    assert _marked(detail, "del") == ["cat"] and _marked(detail, "ins") == ["dog"]
    assert 'data-evalbook="score-changes"' in detail and "regressed" in detail


def test_nothing_changed_is_said_not_shown_as_an_empty_list() -> None:
    a = _run({"q1": "a cat", "q2": "b"}, "before")
    view = eb.show(eb.compare(a, _run({"q1": "a cat", "q2": "b"}, "after")))
    assert view.cases.options == ()
    assert "Nothing changed" in view.detail.value
    view.change.value = "regressed"
    assert "Nothing regressed." in view.detail.value
    view.change.value = "all"
    assert len(view.cases.options) == 2 and "same output in both runs" in view.detail.value


def test_text_of_many_alike_words_is_matched_line_by_line() -> None:
    """600 lines alike but for one word each: the words are matched within each line pair
    (matching all 1 800 words at once took seconds)."""
    a = "\n".join(["same line here"] * 600)
    b = "\n".join(["same line there"] * 600)
    left, right = word_diff(a, b)
    assert _marked(left, "del") == ["here"] * 600 and _marked(right, "ins") == ["there"] * 600


def test_with_epochs_the_diff_says_it_is_of_the_first_epoch() -> None:
    df = pd.DataFrame({"q": ["a"]})
    a = eb.run(df, task=lambda q, epoch: f"{q} cat {epoch}", epochs=2, store=None,
               scorers=[lambda output: 1.0], progress=False)  # fmt: skip
    b = eb.run(df, task=lambda q, epoch: f"{q} dog {epoch}", epochs=2, store=None,
               scorers=[lambda output: 0.0], progress=False)  # fmt: skip
    view = eb.show(eb.compare(a, b))
    assert "output of epoch 1 (each epoch&#x27;s is below)" in view.detail.value
    assert _marked(view.detail.value, "del") == ["cat"]


def test_a_smaller_pair_limit_marks_lines_instead_of_matching_words() -> None:
    a = " ".join(f"a{k}" if k % 2 else "same" for k in range(400))
    b = " ".join(f"b{k}" if k % 2 else "same" for k in range(400))
    fine_left, _ = _diff.word_diff(a, b)
    coarse_left, _ = _diff.word_diff(a, b, pair_limit=1_000)  # 200 × 200 pairs of "same"
    assert fine_left.count('data-diff="del"') == 200  # each differing word marked
    assert coarse_left.count('data-diff="del"') == 1  # the differing middle, whole
