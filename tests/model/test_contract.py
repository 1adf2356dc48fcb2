"""The score contract: any value becomes a valid float record or an invalid_score naming it."""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._contract import (
    ERROR,
    SCORED,
    UNSCORED,
    InvalidScore,
    interpret,
    record_of,
    safe_repr,
    validate_value,
)

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
    return re.sub(r" at 0x[0-9a-fA-F]+", "", safe_repr(value))


@pytest.mark.parametrize(("value", "expected"), VALID, ids=[_test_id(v) for v, _ in VALID])
def test_valid_values_become_floats(value: object, expected: float) -> None:
    result = validate_value(value)
    assert type(result) is float
    assert result == pytest.approx(expected)


@pytest.mark.parametrize("value", INVALID, ids=[_test_id(v) for v in INVALID])
def test_invalid_values_are_named(value: object) -> None:
    with pytest.raises(InvalidScore) as info:
        validate_value(value)
    assert safe_repr(value) in str(info.value)
    rec = record_of(value)
    assert rec.status == ERROR and rec.reason == "invalid_score"
    assert math.isnan(rec.value)
    assert safe_repr(value) in (rec.message or "")


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr for you")


def test_a_failing_repr_does_not_escape() -> None:
    rec = record_of(_BadRepr())
    assert rec.status == ERROR and "failing __repr__" in (rec.message or "")


def test_long_values_are_truncated_in_messages() -> None:
    rec = record_of("x" * 10_000)
    assert rec.status == ERROR and len(rec.message or "") < 400


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
    rec = record_of(value)
    if rec.status == SCORED:
        assert type(rec.value) is float and 0.0 <= rec.value <= 1.0
        assert not isinstance(value, bool | str | type(None))
        assert value == rec.value or abs(float(value) - rec.value) < 1e-12
    else:
        assert rec.status == ERROR and rec.reason == "invalid_score"
        assert safe_repr(value) in (rec.message or "")


def test_score_object_keeps_rationale_label_and_metadata() -> None:
    rec = record_of(eb.Score(0.5, rationale="why", label="ok", metadata={"k": [1, 2]}))
    assert (rec.status, rec.value, rec.rationale) == (SCORED, 0.5, "why")
    assert rec.metadata == {"k": [1, 2], "label": "ok"}


def test_score_object_with_invalid_value_is_an_error() -> None:
    rec = record_of(eb.Score("0.9", rationale="because"))
    assert rec.status == ERROR and "'0.9'" in (rec.message or "")
    assert rec.rationale == "because"


def test_unserialisable_metadata_is_kept_as_repr() -> None:
    rec = record_of(eb.Score(1, metadata={"obj": object()}))
    assert rec.metadata is not None and rec.metadata["obj"].startswith("<object object")


def test_unscored() -> None:
    rec = record_of(eb.Unscored("no_reference"))
    assert (rec.status, rec.reason) == (UNSCORED, "no_reference")


A = eb.define_score("a")
B = eb.define_score("b")


def test_dict_for_several_definitions() -> None:
    recs = interpret({"a": 1, B: eb.Unscored("skip")}, [A, B])
    assert [r.status for r in recs] == [SCORED, UNSCORED]


def test_dict_missing_a_key_is_an_error_for_that_score() -> None:
    recs = interpret({"a": 1}, [A, B])
    assert recs[0].status == SCORED
    assert recs[1].status == ERROR and "'b'" in (recs[1].message or "")


def test_dict_with_unknown_key_is_invalid_for_every_score() -> None:
    recs = interpret({"a": 1, "b": 0, "c": 1}, [A, B])
    assert all(r.status == ERROR and "'c'" in (r.message or "") for r in recs)


def test_a_number_for_several_definitions_is_invalid() -> None:
    recs = interpret(1.0, [A, B])
    assert all(r.status == ERROR and r.reason == "invalid_score" for r in recs)


def test_single_definition_may_return_a_dict_keyed_by_its_name() -> None:
    assert interpret({"a": 0.5}, [A])[0].value == 0.5
