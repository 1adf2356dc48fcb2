"""`clean` and the run's text boundary in `Results.set_case` (docs/design.md, "Text")."""

from __future__ import annotations

import math
import warnings
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evalbook._model._contract import SCORED, UNSCORED, Rec
from evalbook._model._results import Finished, Results
from evalbook._util._text import TextGate, clean

S, ES = "\ud800", "\\ud800"


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@given(st.text(st.characters(exclude_categories=())))
def test_clean_escapes_exactly_the_lone_surrogates(text: str) -> None:
    cleaned = clean(text)
    assert cleaned == escaped(text)
    cleaned.encode("utf-8")  # valid UTF-8 whatever came in
    assert clean(cleaned) is cleaned  # once: the escape is plain ASCII
    if cleaned == text:
        assert cleaned is text  # nothing replaced: the very same object


def test_clean_walks_containers_and_keeps_what_needs_nothing() -> None:
    shared = [S]
    value: dict[str, Any] = {"k" + S: (1, S), "a": shared, "b": shared, "n": None, "x": 1.5}
    assert clean(value) == {"k" + ES: (1, ES), "a": [ES], "b": [ES], "n": None, "x": 1.5}
    assert value == {"k" + S: (1, S), "a": [S], "b": [S], "n": None, "x": 1.5}  # not changed
    plain = {"é": ["日本", ("😀", 3)], "n": None}
    assert clean(plain) is plain
    loop: list[Any] = [S]
    loop.append(loop)
    assert clean(loop)[0] == ES  # a container inside itself: no endless walk
    obj = object()
    assert clean(obj) is obj


def _case(output: Any, rec: Rec) -> Finished:
    return Finished(0, 1, output, None, None, 1.0, 0.5, [Rec(SCORED, 1.0), rec])


def test_set_case_stores_and_returns_the_cleaned_case_with_one_warning_per_run() -> None:
    results = Results(["a", "b", "c"], 2)
    plain = _case("é ok", Rec(SCORED, 0.5, rationale="fine", metadata={"raw": 50}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert results.set_case(0, plain) is plain  # nothing to replace: the case itself
        odd = _case({"o": S}, Rec(UNSCORED, math.nan, "why" + S, metadata={S: 1}))
        stored = results.set_case(1, odd)
        results.set_case(2, _case(S, Rec(SCORED, 1.0, rationale=S)))
    assert [str(w.message) for w in caught] == [
        "case 'b': output held a lone surrogate, replaced by \\ud800 (the first in this run; "
        "later ones are replaced without a warning)"
    ]
    assert stored.output == {"o": ES} and stored.records[1].reason == "why" + ES
    assert stored.records[0] is odd.records[0]  # a record that needed nothing is kept
    assert results.output == ["é ok", {"o": ES}, ES]
    assert results.reason[3] == "why" + ES and results.metadata[3] == {ES: 1}
    assert results.rationale[5] == ES and results.rationale[1] == "fine"


def test_results_share_the_gate_they_are_given() -> None:
    gate = TextGate()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = Results(["a" + S, "b"], 1, gate)  # the ids warn first
        results.set_case(1, Finished(0, 1, S, None, None, 1.0, 0.5, [Rec(SCORED, 1.0)]))
    assert len(caught) == 1 and gate.warned
    assert results.case_ids == ["a" + ES, "b"] and results.output[1] == ES
