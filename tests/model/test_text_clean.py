"""The run's text boundary (docs/design.md, "Text"): every lone surrogate replaced by its
escape where text enters a run, exactly those, once, with one warning per run; text and
containers that need nothing come through as the very objects the user's code gave."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb

S, ES = "\ud800", "\\ud800"


def escaped(text: str) -> str:
    return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)


@contextmanager
def caught() -> Iterator[list[str]]:
    """The warnings raised inside the block, as messages."""
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        messages: list[str] = []
        yield messages
    messages.extend(str(w.message) for w in got)


def _outputs(*outputs: Any, **options: Any) -> eb.Run:
    """A run in memory whose task returns `outputs[k]` for case k."""
    picked = list(outputs)
    return eb.run(
        pd.DataFrame({"k": range(len(picked))}),
        task=lambda k: picked[k],
        store=None,
        progress=False,
        **options,
    )


# Each example is one or two runs in memory (about 10 ms each).
@settings(max_examples=100, deadline=None)
@given(st.text(st.characters(exclude_categories=())))
def test_lone_surrogates_and_only_they_are_escaped(text: str) -> None:
    with caught() as said:
        run = _outputs(text)
    cleaned = run.cases["output"][0]
    assert cleaned == escaped(text)
    cleaned.encode("utf-8")  # valid UTF-8 whatever came in
    assert len(said) == (cleaned != text)
    if cleaned == text:
        assert cleaned is text  # nothing replaced: the very same object
    with caught() as again:  # once: the escape is plain ASCII
        assert _outputs(cleaned).cases["output"][0] is cleaned
    assert again == []


def test_containers_are_walked_and_what_needs_nothing_is_kept() -> None:
    shared = [S]
    value: dict[str, Any] = {"k" + S: (1, S), "a": shared, "b": shared, "n": None, "x": 1.5}
    plain = {"é": ["日本", ("😀", 3)], "n": None}
    loop: list[Any] = [S]
    loop.append(loop)
    obj = object()
    with caught() as said:
        out = _outputs(value, plain, loop, obj).cases["output"].tolist()
    assert len(said) == 1
    assert out[0] == {"k" + ES: (1, ES), "a": [ES], "b": [ES], "n": None, "x": 1.5}
    assert value == {"k" + S: (1, S), "a": [S], "b": [S], "n": None, "x": 1.5}  # not changed
    assert out[1] is plain
    assert out[2][0] == ES  # a container inside itself: no endless walk
    assert out[3] is obj


def test_a_run_stores_the_cleaned_case_with_one_warning_per_run() -> None:
    outputs = ["é ok", {"o": S}, S]

    @eb.scorer("a")
    def a(k: int) -> Any:
        return eb.Score(1.0, metadata={S: 1}) if k == 1 else 1.0

    @eb.scorer("b")
    def b(k: int) -> Any:
        if k == 0:
            return eb.Score(0.5, rationale="fine", metadata={"raw": 50})
        return eb.Unscored("why" + S) if k == 1 else eb.Score(1.0, rationale=S)

    df = pd.DataFrame({"k": range(3)}, index=["a", "b", "c"])
    with caught() as said:
        run = eb.run(
            df,
            task=lambda k: outputs[k],
            scorers=[a, b],
            concurrency=1,  # the cases in order: b is the first with a lone surrogate
            store=None,
            progress=False,
        )
    assert said == [
        "case 'b': output held a lone surrogate, replaced by \\ud800 (the first in this run; "
        "later ones are replaced without a warning)"
    ]
    out = run.cases["output"].tolist()
    assert out == ["é ok", {"o": ES}, ES] and out[0] is outputs[0]  # nothing to replace: as given
    scores = run.scores
    assert scores["reason"].astype(object)[3] == "why" + ES
    assert json.loads(scores["metadata"][2]) == {ES: 1}
    assert json.loads(scores["metadata"][1]) == {"raw": 50}
    assert scores["rationale"][5] == ES and scores["rationale"][1] == "fine"


def test_the_ids_and_the_results_share_one_warning() -> None:
    df = pd.DataFrame({"k": [0, 1]}, index=pd.Index(["a" + S, "b"], dtype=object))
    with caught() as said:
        run = eb.run(df, task=lambda k: [1, S][k], store=None, progress=False)
    assert len(said) == 1 and said[0].startswith("the input data's index held")  # ids first
    assert run.cases["case_id"].tolist() == ["a" + ES, "b"]
    assert run.cases["output"].tolist() == [1, ES]
