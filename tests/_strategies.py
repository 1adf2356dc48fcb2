"""Hypothesis strategies shared by the store tests: any run a Results can hold."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._contract import ERROR, SCORED, UNSCORED, Rec
from evalbook._model._results import PENDING, Finished, Results

text = st.text(max_size=12)
maybe_text = st.none() | text
json_leaf = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | text
outputs = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
) | st.tuples(st.integers(), text)
metadata = st.none() | st.dictionaries(text, json_leaf, max_size=3)
graders = st.none() | st.builds(eb.Grader, kind=st.sampled_from(["rule", "model"]), id=text)


@st.composite
def records(draw: Any) -> Rec:
    status = draw(st.sampled_from([SCORED, UNSCORED, ERROR]))
    value = draw(st.floats(0.0, 1.0)) if status == SCORED else math.nan
    reason = None if status == SCORED else draw(text)
    message = None if status == SCORED else draw(maybe_text)
    return Rec(status, value, reason, message, draw(maybe_text), draw(metadata), draw(graders))


@st.composite
def runs(draw: Any, texts: Any = text) -> tuple[list[eb.ScoreDefinition], Results]:
    """Definitions and results; `texts` draws the case ids, text outputs and errors."""
    n_scores = draw(st.integers(1, 3))
    definitions = [eb.define_score(f"s{j}") for j in range(n_scores)]
    ids = draw(st.lists(texts, min_size=0, max_size=6, unique=True))
    results = Results(ids, n_scores)
    for pos in range(len(ids)):
        outcome = draw(st.sampled_from([PENDING, 0, 1, 2, 3]))
        if outcome == PENDING:
            continue
        results.set_case(
            pos,
            Finished(
                outcome,
                draw(st.integers(0, 5)),
                draw(outputs | texts),
                draw(st.none() | texts),
                draw(st.none() | texts),
                draw(st.integers(10**15, 2 * 10**15)) / 1e6,  # the engine takes whole µs
                draw(st.integers(0, 10**10)) / 1e6,
                [draw(records()) for _ in range(n_scores)],
            ),
        )
    return definitions, results
