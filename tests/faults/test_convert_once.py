"""A score value is converted to a float once; that float is checked and stored."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from _hostile import Changing, FloatRaises, Liar

import evalbook as eb
from _public import scores_of


def test_a_value_converted_once_is_stored_as_that_float() -> None:
    value = Changing()
    [row] = scores_of([value]).to_dict("records")
    assert (row["status"], row["value"]) == ("scored", 0.5)
    assert value.calls == 1  # one float() from the scorer's return to the stored record


@pytest.mark.parametrize(
    ("value", "why"),
    [(Liar(), "out of range"), (FloatRaises(), "float() of it raised RuntimeError")],
    ids=["liar", "float-raises"],
)
def test_a_value_whose_float_is_out_or_raises_is_invalid(value: object, why: str) -> None:
    [row] = scores_of([value]).to_dict("records")
    assert (row["status"], row["reason"]) == ("error", "invalid_score")
    assert why in row["message"]


def test_in_a_run_the_stored_value_is_the_checked_one() -> None:
    s = eb.define_score("s")
    made = {0: Changing, 1: Liar, 2: FloatRaises}

    @eb.scorer(s)
    def scorer(k: int) -> Any:
        return made[k]()

    df = pd.DataFrame({"k": [0, 1, 2]})
    r = eb.run(df, task=lambda k: k, scorers=[scorer], store=None, progress=False)
    rows = r.scores.to_dict("records")
    assert (rows[0]["status"], rows[0]["value"]) == ("scored", 0.5)
    assert [x["reason"] for x in rows[1:]] == ["invalid_score", "invalid_score"]
    assert "float() of it raised RuntimeError" in rows[2]["message"]
    assert r.summary()["mean"].tolist() == [0.5]
