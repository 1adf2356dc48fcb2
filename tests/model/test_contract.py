"""The score contract: any value becomes a valid float record or an invalid_score naming it.

Every value is returned by a scorer of a real run (`eb.run`, in memory) and read back from
`run.scores`: status, value, reason and the message that names the value by its repr().
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _public import scores_of

VALID = [
    (0, 0.0),
    (1, 1.0),
    (0.0, 0.0),
    (0.25, 0.25),
    (1.0, 1.0),
    (np.float64(0.5), 0.5),
    (np.float32(0.5), 0.5),
    (np.int64(1), 1.0),
    (np.int8(0), 0.0),
    (Decimal("0.75"), 0.75),
    (Fraction(1, 3), 1 / 3),
]

INVALID = [
    True,
    False,
    np.bool_(True),
    np.bool_(False),
    "0.5",
    "high",
    "",
    b"1",
    None,
    math.nan,
    math.inf,
    -math.inf,
    np.float64("nan"),
    3,
    -1,
    1.0000001,
    -0.0000001,
    2.5,
    Decimal("1.5"),
    Decimal("NaN"),
    Decimal("sNaN"),
    Fraction(10**20 + 1, 10**20),  # > 1 although float() rounds it to 1.0
    [0.5],
    (1,),
    {"score": 1},
    {0.5},
    object(),
    1 + 0j,
    np.array([0.5]),
]


def _test_id(value: object) -> str:
    """The value's repr without a memory address: every pytest-xdist worker collects one id."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def _record(value: object) -> dict[str, Any]:
    """The one `run.scores` row of a case whose scorer returned `value`."""
    [row] = scores_of([value], "contract").to_dict("records")
    return row


@pytest.mark.parametrize(("value", "expected"), VALID, ids=[_test_id(v) for v, _ in VALID])
def test_valid_values_become_floats(value: object, expected: float) -> None:
    scores = scores_of([value])
    assert scores["value"].dtype == np.float64 and scores["counted"].dtype == np.float64
    row = scores.iloc[0]
    assert row["status"] == "scored" and pd.isna(row["reason"]) and pd.isna(row["message"])
    assert row["value"] == pytest.approx(expected) and row["counted"] == row["value"]


@pytest.mark.parametrize("value", INVALID, ids=[_test_id(v) for v in INVALID])
def test_invalid_values_are_named(value: object) -> None:
    row = _record(value)
    assert (row["status"], row["reason"]) == ("error", "invalid_score")
    assert math.isnan(row["value"]) and math.isnan(row["counted"])
    assert repr(value) in row["message"]
    assert "a score must be a finite real number in [0, 1]" in row["message"]


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def test_a_failing_repr_does_not_escape() -> None:
    row = _record(_BadRepr())
    assert row["status"] == "error" and "failing __repr__" in row["message"]


def test_long_values_are_truncated_in_messages() -> None:
    row = _record("x" * 10_000)
    assert row["status"] == "error" and len(row["message"]) < 400


# Each example is one run in memory (about 10 ms): 100 examples, hypothesis' default.
@settings(max_examples=100, deadline=None)
@given(
    st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.integers(),
        st.booleans(),
        st.text(max_size=8),
        st.none(),
        st.decimals(allow_nan=True, allow_infinity=True),
        st.fractions(),
        st.lists(st.floats(), max_size=3),
        st.dictionaries(st.text(max_size=3), st.floats(), max_size=2),
    )
)
def test_any_value_is_a_valid_record_or_an_error_naming_it(value: Any) -> None:
    # the score's name ("contract") is longer than the drawn dict keys: a drawn dict is never
    # keyed by it, so every dict is an invalid value here
    row = _record(value)
    if row["status"] == "scored":
        assert 0.0 <= row["value"] <= 1.0 and row["counted"] == row["value"]
        assert not isinstance(value, bool | str | type(None) | list | dict)
        assert value == row["value"] or abs(float(value) - row["value"]) < 1e-12
    else:
        assert (row["status"], row["reason"]) == ("error", "invalid_score")
        assert math.isnan(row["value"])
        assert repr(value)[:150] in row["message"]


def test_score_object_keeps_rationale_label_and_metadata() -> None:
    row = _record(eb.Score(0.5, rationale="why", label="ok", metadata={"k": [1, 2]}))
    assert (row["status"], row["value"], row["rationale"]) == ("scored", 0.5, "why")
    assert json.loads(row["metadata"]) == {"k": [1, 2], "label": "ok"}


def test_score_object_with_invalid_value_is_an_error() -> None:
    row = _record(eb.Score("0.9", rationale="because"))
    assert row["status"] == "error" and "'0.9'" in row["message"]
    assert row["rationale"] == "because"


def test_unserialisable_metadata_is_kept_as_repr() -> None:
    row = _record(eb.Score(1, metadata={"obj": object()}))
    assert json.loads(row["metadata"])["obj"].startswith("<object object")


def test_unscored() -> None:
    row = _record(eb.Unscored("no_reference"))
    assert (row["status"], row["reason"]) == ("unscored", "no_reference")
    assert math.isnan(row["value"]) and math.isnan(row["counted"])


A = eb.define_score("a")
B = eb.define_score("b")


def _two(result: object) -> list[dict[str, Any]]:
    """The rows of scores a and b of a case whose scorer, bound to both, returned `result`."""
    return scores_of([result], A, B).to_dict("records")


def test_dict_for_several_definitions() -> None:
    rows = _two({"a": 1, B: eb.Unscored("skip")})
    assert [(r["score"], r["status"]) for r in rows] == [("a", "scored"), ("b", "unscored")]
    assert rows[0]["value"] == 1.0 and rows[1]["reason"] == "skip"


def test_dict_missing_a_key_is_an_error_for_that_score() -> None:
    rows = _two({"a": 1})
    assert rows[0]["status"] == "scored"
    assert rows[1]["status"] == "error" and rows[1]["reason"] == "invalid_score"
    assert "'b'" in rows[1]["message"]


def test_dict_with_unknown_key_is_invalid_for_every_score() -> None:
    rows = _two({"a": 1, "b": 0, "c": 1})
    assert all(r["status"] == "error" and "'c'" in r["message"] for r in rows)


def test_a_number_for_several_definitions_is_invalid() -> None:
    rows = _two(1.0)
    assert all(r["status"] == "error" and r["reason"] == "invalid_score" for r in rows)


def test_single_definition_may_return_a_dict_keyed_by_its_name() -> None:
    [row] = scores_of([{"a": 0.5}], A).to_dict("records")
    assert (row["status"], row["value"]) == ("scored", 0.5)
