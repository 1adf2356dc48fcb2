"""`ctx.record_score(grader=...)` takes an `eb.Grader` or None; anything else is refused at once."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb

S, T = eb.define_score("s"), eb.define_score("t")


@pytest.mark.parametrize("grader", ["x", {"kind": "human", "id": "me"}, 3])
def test_a_grader_that_is_not_a_grader_errors_the_case_naming_it(grader: Any) -> None:
    def task(k: int, ctx: Any) -> int:
        ctx.record_score(S, 1.0, grader=grader)
        return k

    df = pd.DataFrame({"k": [0, 1]})
    r = eb.run(df, task=task, scores=[S], progress=False)
    assert r.cases["outcome"].tolist() == ["errored", "errored"]
    assert r.cases["error_message"].str.contains("grader= takes an eb.Grader").all()
    assert len(r.scores) == 2  # one record per (case, score); the tables and the log work
    assert eb.load_run(r.path).cases["outcome"].tolist() == ["errored", "errored"]


def test_a_real_grader_is_accepted() -> None:
    grader = eb.Grader(kind="human", id="me")

    def task(k: int, ctx: Any) -> int:
        ctx.record_score(S, 1.0, grader=grader)
        ctx.record_score(T, 0.0)
        return k

    r = eb.run(pd.DataFrame({"k": [0]}), task=task, scores=[S, T], progress=False)
    assert r.scores["value"].tolist() == [1.0, 0.0]
    assert r.cases["outcome"].tolist() == ["passed"]
