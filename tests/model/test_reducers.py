"""Reducers on score definitions (docs/repeats.md): the field, its validation, the derived-score
rule, check_epochs, and the reduction of a case's epochs into its reduced record."""

from __future__ import annotations

import json
from typing import Any

import pytest

import evalbook as eb
from evalbook._model._reducers import check_epochs
from evalbook._model._scores import ScoreDefinition


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


def test_check_epochs_names_the_scores_and_the_epochs_needed() -> None:
    defs = [
        eb.define_score("plain"),
        eb.define_score("p3", reducer=eb.pass_at(3)),
        eb.define_score("h5", reducer=eb.pass_hat(5)),
    ]
    check_epochs(defs, 5)
    check_epochs(defs, 9)
    with pytest.raises(eb.ConfigurationError) as err:
        check_epochs(defs, 3)
    message = str(err.value)
    assert "'h5' (pass^5)" in message and "p3" not in message
    assert "epochs ≥ 5" in message and "epochs=5" in message and "epochs=3" in message
    with pytest.raises(eb.ConfigurationError, match=r"'p3' \(pass@3\), 'h5' \(pass\^5\)"):
        check_epochs(defs, 1)


def test_check_epochs_accepts_runs_without_pass_k() -> None:
    check_epochs([eb.define_score("a", reducer="mode")], 1)
    check_epochs([], 1)
