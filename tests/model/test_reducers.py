"""Reducers on score definitions (docs/repeats.md): the field, its validation, the derived-score
rule and the reduction of a case's epochs into its reduced record."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from evalbook._model._contract import ERROR, SCORED, STATUSES, UNSCORED
from evalbook._model._definitions import ScoreDefinition
from evalbook._model._epochs import (
    NEEDS_BINARY,
    REDUCED_COLUMNS,
    TOO_FEW_EPOCHS,
    reduce_scores,
    variance_parts,
)
from evalbook._model._reducers import VOTE_REDUCERS, reduce_values
from evalbook._model._results import ERRORED, FAILED, PASSED, PENDING, TIMED_OUT
from evalbook._model._scoring_rule import counted_values


@pytest.mark.parametrize(
    ("reducer", "stored"),
    [
        ("mean", "mean"),
        ("median", "median"),
        ("min", "min"),
        ("max", "max"),
        ("mode", "mode"),
        (eb.pass_at(1), "pass@1"),
        (eb.pass_at(3), "pass@3"),
        (eb.pass_hat(12), "pass^12"),
    ],
)
def test_every_reducer_round_trips_through_the_logged_json(reducer: str, stored: str) -> None:
    d = eb.define_score("s", reducer=reducer)
    assert d.reducer == stored
    # what the run log's score.defined event holds, written out and read back
    line = json.dumps(d.model_dump(mode="json"))
    back = ScoreDefinition.model_validate(json.loads(line))
    assert back == d and back.reducer == stored


def test_the_default_and_an_old_definition_without_the_field_are_mean() -> None:
    assert eb.define_score("s").reducer == "mean"
    old = {"name": "s", "label": None, "primary": False, "errors": "exclude", "grader": None}
    assert ScoreDefinition.model_validate(old).reducer == "mean"


@pytest.mark.parametrize(
    "reducer",
    ["avg", "Mean", " mean", "pass@0", "pass@03", "pass@-1", "pass@", "pass@1.5", "pass#2", ""],
)
def test_an_unknown_reducer_is_a_configuration_error_listing_the_choices(reducer: str) -> None:
    with pytest.raises(eb.ConfigurationError) as err:
        eb.define_score("s", reducer=reducer)
    message = str(err.value)
    assert repr(reducer) in message
    for choice in ('"mean"', '"median"', '"min"', '"max"', '"mode"', "pass_at(k)", "pass_hat(k)"):
        assert choice in message


@pytest.mark.parametrize("reducer", [None, 3, 1.0, len, ("pass@2",)])
def test_a_reducer_that_is_not_text_is_a_configuration_error(reducer: Any) -> None:
    with pytest.raises(eb.ConfigurationError, match="reducer must be one of"):
        eb.define_score("s", reducer=reducer)


def test_an_invalid_reducer_read_from_a_file_is_refused() -> None:
    with pytest.raises(ValueError, match="reducer must be one of"):
        ScoreDefinition.model_validate({"name": "s", "reducer": "pass@0"})


@pytest.mark.parametrize("make", [eb.pass_at, eb.pass_hat])
@pytest.mark.parametrize("k", [0, -2, True, False, 2.0, "3", None])
def test_pass_k_takes_a_whole_number_of_at_least_one(make: Any, k: Any) -> None:
    with pytest.raises(eb.ConfigurationError, match="whole number k ≥ 1"):
        make(k)


def test_pass_k_takes_numpy_integers() -> None:
    np = pytest.importorskip("numpy")
    assert eb.pass_at(np.int64(4)) == "pass@4"
    assert eb.pass_hat(np.int32(2)) == "pass^2"


A, B = eb.define_score("a"), eb.define_score("b")


@pytest.mark.parametrize("make", [eb.pass_at, eb.pass_hat])
def test_pass_k_over_a_mean_of_is_a_configuration_error(make: Any) -> None:
    with pytest.raises(eb.ConfigurationError, match="mean_of") as err:
        eb.define_score("both", combine=eb.mean_of(A, B), reducer=make(2))
    assert "'both'" in str(err.value) and "all_of" in str(err.value)


@pytest.mark.parametrize(
    "combine",
    [eb.all_of(A, B), eb.any_of(A, B), eb.at_least(A, 0.5), eb.at_least(eb.mean_of(A, B), 0.5)],
)
def test_pass_k_over_a_binary_combination_is_allowed(combine: Any) -> None:
    d = eb.define_score("both", combine=combine, reducer=eb.pass_at(2))
    assert d.reducer == "pass@2" and d.derived


def test_a_derived_score_ignores_its_components_reducers() -> None:
    # components' reducers do not enter the derived score: any mix is allowed
    a = eb.define_score("a", reducer="median")
    b = eb.define_score("b", reducer=eb.pass_hat(2))
    assert eb.define_score("m", combine=eb.mean_of(a, b), reducer="max").reducer == "max"
    assert eb.define_score("p", combine=eb.all_of(a, b), reducer=eb.pass_at(3)).reducer == "pass@3"


# -- the reduction of a case's epochs ----------------------------------------------------------

NAN = math.nan


def _samples(rows: list[tuple[str, int, str, str, float, str | None]]) -> pd.DataFrame:
    """A sample table from (case_id, epoch, score, status, counted, reason) rows."""
    frame = pd.DataFrame(rows, columns=["case_id", "epoch", "score", "status", "counted", "reason"])
    frame["value"] = frame["counted"]
    return frame


def _one(frame: pd.DataFrame, definitions: list[ScoreDefinition]) -> dict[str, Any]:
    table = reduce_scores(frame, definitions)
    assert list(table.columns) == REDUCED_COLUMNS and len(table) == 1
    row: dict[str, Any] = table.iloc[0].to_dict()
    return row


def _scored(score: str, values: list[float]) -> pd.DataFrame:
    return _samples([("c", e + 1, score, "scored", v, None) for e, v in enumerate(values)])


@pytest.mark.parametrize(
    ("reducer", "values", "expected"),
    [
        ("mean", [1.0, 0.0, 0.5, 0.5], 0.5),
        ("median", [0.9, 0.1, 0.2], 0.2),
        ("median", [0.9, 0.1, 0.2, 0.4], 0.3),
        ("min", [0.9, 0.1, 0.2], 0.1),
        ("max", [0.9, 0.1, 0.2], 0.9),
        ("mode", [0.5, 1.0, 0.5, 0.0], 0.5),
        ("mode", [1.0, 0.0, 1.0, 0.0, 0.25], 0.0),  # a tie: the smallest of the most frequent
        ("mode", [0.7], 0.7),
        ("pass@1", [1.0, 0.0, 0.0, 1.0, 1.0], 0.6),
        ("pass@2", [1.0, 0.0, 0.0, 0.0], 0.5),  # 1 − C(3,2)/C(4,2)
        ("pass@3", [0.0, 0.0, 1.0], 1.0),
        ("pass^2", [1.0, 1.0, 1.0, 0.0], 0.5),  # C(3,2)/C(4,2)
        ("pass^3", [1.0, 1.0, 0.0], 0.0),
        ("pass^1", [1.0, 1.0], 1.0),
    ],
)
def test_every_reducer(reducer: str, values: list[float], expected: float) -> None:
    d = eb.define_score("s", reducer=reducer)
    row = _one(_scored("s", values), [d])
    assert row["status"] == "scored" and pd.isna(row["reason"])
    assert (row["epochs"], row["counted"]) == (len(values), len(values))
    assert row["value"] == pytest.approx(expected, abs=1e-12)
    assert row["sd"] == pytest.approx(
        float(np.std(values, ddof=1)) if len(values) > 1 else NAN, nan_ok=True
    )


@settings(max_examples=200, deadline=None)
@given(
    reducer=st.sampled_from(VOTE_REDUCERS),
    # few distinct values, so that the mode has ties to break
    values=st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]), min_size=1, max_size=8),
)
def test_votes_and_epochs_reduce_by_the_same_rules(reducer: str, values: list[float]) -> None:
    # a judge's votes (`reduce_values`, one list) and a case's epochs (`reduce_scores`, every
    # case at once) are reduced by one vocabulary and one rule: ties of the mode included
    row = _one(_scored("s", values), [eb.define_score("s", reducer=reducer)])
    assert row["value"] == pytest.approx(reduce_values(values, reducer), abs=1e-12)


def test_uncounted_epochs_are_left_out_and_counted_in_epochs() -> None:
    frame = _samples(
        [
            ("c", 1, "s", "scored", 1.0, None),
            ("c", 2, "s", "error", NAN, "scorer_raised"),
            ("c", 3, "s", "unscored", NAN, "no answer"),
            ("c", 4, "s", "scored", 0.0, None),
        ]
    )
    row = _one(frame, [eb.define_score("s", reducer="max")])
    assert (row["epochs"], row["counted"], row["value"], row["status"]) == (4, 2, 1.0, "scored")


def test_too_few_counted_epochs_for_k_is_unscored() -> None:
    frame = _samples(
        [
            ("c", 1, "s", "scored", 1.0, None),
            ("c", 2, "s", "error", NAN, "case_errored"),
            ("c", 3, "s", "scored", 0.0, None),
        ]
    )
    row = _one(frame, [eb.define_score("s", reducer=eb.pass_hat(3))])
    assert (row["status"], row["reason"], row["counted"]) == ("unscored", TOO_FEW_EPOCHS, 2)
    assert math.isnan(row["value"])


@pytest.mark.parametrize("reducer", ["pass@1", "pass^2"])
def test_a_value_other_than_0_or_1_under_pass_k_is_an_error(reducer: str) -> None:
    row = _one(_scored("s", [1.0, 0.5, 0.0]), [eb.define_score("s", reducer=reducer)])
    assert (row["status"], row["reason"]) == ("error", NEEDS_BINARY)
    assert math.isnan(row["value"])
    # the binary check comes first: one counted 0.5 of k = 3 is an error, not too few epochs
    row = _one(_scored("s", [0.5]), [eb.define_score("s", reducer=eb.pass_at(3))])
    assert (row["status"], row["reason"]) == ("error", NEEDS_BINARY)


@pytest.mark.parametrize(
    ("statuses", "expected"),
    [
        ([("unscored", "no answer"), ("unscored", "later")], ("unscored", "no answer")),
        ([("unscored", "no answer"), ("error", "case_errored")], ("error", "case_errored")),
        ([("error", "case_timed_out"), ("error", "case_errored")], ("error", "case_timed_out")),
        ([("scored", None), ("scored", None)], (None, None)),  # no final outcome yet
        ([("scored", None), ("unscored", "skip")], ("unscored", "skip")),
    ],
)
def test_no_counted_epoch_is_not_counted_with_the_first_epochs_reason(
    statuses: list[tuple[str, str | None]], expected: tuple[str | None, str | None]
) -> None:
    # listed out of epoch order: the reason is the first *epoch*'s, not the first row's
    rows = [("c", e + 1, "s", st, NAN, r) for e, (st, r) in enumerate(statuses)][::-1]
    for reducer in ("mean", "pass@2"):
        row = _one(_samples(rows), [eb.define_score("s", reducer=reducer)])
        got = tuple(None if pd.isna(row[c]) else row[c] for c in ("status", "reason"))
        assert got == expected
        assert row["counted"] == 0 and math.isnan(row["value"]) and math.isnan(row["sd"])


def test_rows_come_in_case_order_then_definition_order() -> None:
    defs = [eb.define_score("z"), eb.define_score("a", reducer="min")]
    rows = [
        (case, e, s, "scored", 1.0, None)
        for case in ("c2", "c1")
        for e in (2, 1)
        for s in ("a", "z")
    ]
    plain = reduce_scores(_samples(rows), defs)
    assert list(zip(plain["case_id"], plain["score"], strict=True)) == [
        ("c2", "z"),
        ("c2", "a"),
        ("c1", "z"),
        ("c1", "a"),
    ]
    frame = _samples(rows)
    frame["case_id"] = pd.Categorical(frame["case_id"], categories=["c1", "c2", "c0"])
    by_category = reduce_scores(frame, defs)
    assert list(by_category["case_id"]) == ["c1", "c1", "c2", "c2"]
    assert list(by_category["case_id"].cat.categories) == ["c1", "c2", "c0"]
    assert list(by_category["score"].cat.categories) == ["z", "a"]


def test_a_score_without_definition_is_refused() -> None:
    with pytest.raises(ValueError, match="'other' of the sample table has no definition"):
        reduce_scores(_scored("other", [1.0]), [eb.define_score("s")])
    with pytest.raises(ValueError, match="lacks the column"):
        reduce_scores(_scored("s", [1.0]).drop(columns="epoch"), [eb.define_score("s")])


# -- property: the reduction equals a straightforward pandas groupby ----------------------------

REDUCERS = [
    "mean",
    "median",
    "min",
    "max",
    "mode",
    "pass@1",
    "pass@2",
    "pass@3",
    "pass^1",
    "pass^3",
]
OUTCOME_CODES = [PENDING, PASSED, FAILED, ERRORED, TIMED_OUT]
STATUS_CODES = [SCORED, UNSCORED, ERROR]


def _expected_one(group: pd.DataFrame, reducer: str) -> tuple[Any, ...]:
    """One (case, score) reduced the slow, obvious way."""
    group = group.sort_values("epoch")
    values = group["counted"].dropna()
    n = len(values)
    sd = values.std(ddof=1) if n > 1 else NAN
    if n == 0:
        for status in ("error", "unscored"):
            hit = group[group["status"] == status]
            if len(hit):
                return (len(group), 0, NAN, sd, status, hit["reason"].iloc[0])
        return (len(group), 0, NAN, sd, None, None)
    if reducer.startswith("pass"):
        k = int(reducer[5:])
        if not values.isin([0.0, 1.0]).all():
            return (len(group), n, NAN, sd, "error", NEEDS_BINARY)
        if n < k:
            return (len(group), n, NAN, sd, "unscored", TOO_FEW_EPOCHS)
        c = int((values == 1.0).sum())
        exact = Fraction(math.comb(c, k), math.comb(n, k))
        value = float(
            exact if reducer[4] == "^" else 1 - Fraction(math.comb(n - c, k), math.comb(n, k))
        )
    elif reducer == "mode":
        counts = values.value_counts()
        value = float(min(counts[counts == counts.max()].index))
    else:
        value = float(getattr(values, reducer)())
    return (len(group), n, value, sd, "scored", None)


@st.composite
def sample_tables(draw: st.DrawFn) -> tuple[pd.DataFrame, list[ScoreDefinition]]:
    defs = [
        eb.define_score(
            f"s{j}",
            reducer=draw(st.sampled_from(REDUCERS)),
            errors=draw(st.sampled_from(["exclude", "zero"])),
        )
        for j in range(draw(st.integers(1, 3)))
    ]
    n_cases, epochs = draw(st.integers(0, 5)), draw(st.integers(1, 5))
    value = st.sampled_from([0.0, 1.0, 0.5, 0.25]) | st.floats(0.0, 1.0)
    rows = []
    for i in range(n_cases):
        for e in range(1, epochs + 1):
            outcome = draw(st.sampled_from(OUTCOME_CODES))
            for d in defs:
                status = draw(st.sampled_from(STATUS_CODES))
                v = draw(value) if status == SCORED else NAN
                reason = (
                    None
                    if status == SCORED
                    else draw(st.sampled_from(["r1", "r2", "case_errored"]))
                )
                rows.append((f"c{i}", e, d.name, outcome, status, v, reason, d.errors == "zero"))
    rows = draw(st.permutations(rows))
    frame = pd.DataFrame(
        rows, columns=["case_id", "epoch", "score", "outcome", "status", "value", "reason", "zero"]
    )
    counted = counted_values(
        frame["outcome"].to_numpy(np.int8),
        frame["status"].to_numpy(np.int8),
        frame["value"].to_numpy(np.float64),
        frame["zero"].to_numpy(bool),
    )
    frame["counted"] = counted  # the one rule decides; the reduction only reduces
    frame["status"] = pd.Categorical.from_codes(frame["status"], categories=list(STATUSES))
    if draw(st.booleans()):  # as run.scores has it: a categorical of every case, in input order
        frame["case_id"] = pd.Categorical(
            frame["case_id"], categories=[f"c{i}" for i in range(n_cases)]
        )
        frame["reason"] = frame["reason"].astype("category")
    return frame, defs


def _same(a: Any, b: Any) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return bool(pd.isna(a) and pd.isna(b))
    if isinstance(a, float):
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


@settings(max_examples=100, deadline=None)
@given(sample_tables())
def test_the_reduction_equals_a_pandas_groupby(
    table: tuple[pd.DataFrame, list[ScoreDefinition]],
) -> None:
    frame, defs = table
    got = reduce_scores(frame, defs)
    reducer = {d.name: d.reducer for d in defs}
    expected = {
        (str(case), str(score)): _expected_one(group, reducer[str(score)])
        for (case, score), group in frame.groupby(["case_id", "score"], observed=True, sort=False)
    }
    assert len(got) == len(expected)
    case_order = (
        list(frame["case_id"].cat.categories)
        if isinstance(frame["case_id"].dtype, pd.CategoricalDtype)
        else list(dict.fromkeys(frame["case_id"]))
    )
    names = [d.name for d in defs]
    keys = list(zip(got["case_id"].astype(str), got["score"].astype(str), strict=True))
    assert keys == sorted(expected, key=lambda k: (case_order.index(k[0]), names.index(k[1])))
    for row, key in zip(got.itertuples(index=False), keys, strict=True):
        row_values = (row.epochs, row.counted, row.value, row.sd, row.status, row.reason)
        for a, b in zip(row_values, expected[key], strict=True):
            assert _same(None if pd.isna(a) else a, b), (key, row_values, expected[key])
    value = got["value"].dropna()
    assert ((value >= 0.0) & (value <= 1.0)).all()


@settings(max_examples=100, deadline=None)
@given(sample_tables())
def test_variance_parts_equal_a_pandas_groupby(
    table: tuple[pd.DataFrame, list[ScoreDefinition]],
) -> None:
    frame, defs = table
    got = variance_parts(frame, defs).set_index("score")
    by = frame.dropna(subset=["counted"]).groupby(["score", "case_id"], observed=True)["counted"]
    for d in defs:
        means = by.mean().get(d.name, pd.Series(dtype=float))
        variances = by.var(ddof=1).get(d.name, pd.Series(dtype=float)).dropna()
        between = means.var(ddof=1) if len(means) > 1 else NAN
        within = variances.mean() if len(variances) else NAN
        assert _same(float(got.loc[d.name, "var_between"]), float(between))
        assert _same(float(got.loc[d.name, "var_within"]), float(within))


def test_variance_parts_of_a_known_design() -> None:
    # case a: 1, 1, 0, 0 (mean 0.5, var 1/3); case b: 1, 1, 1, 1 (mean 1, var 0)
    rows = [("a", e + 1, "s", "scored", v, None) for e, v in enumerate([1.0, 1.0, 0.0, 0.0])]
    rows += [("b", e + 1, "s", "scored", 1.0, None) for e in range(4)]
    got = variance_parts(_samples(rows), [eb.define_score("s")]).iloc[0]
    assert got["var_between"] == pytest.approx(0.125)  # ((0.5 − 0.75)² + (1 − 0.75)²) / 1
    assert got["var_within"] == pytest.approx((1 / 3 + 0) / 2)
