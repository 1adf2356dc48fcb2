"""Bad input to `eb.run` is a `ConfigurationError` naming the fix, raised before any case runs."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb


def _run(data: pd.DataFrame, **kw: Any) -> eb.Run:
    kw.setdefault("task", lambda x: x)
    return eb.run(data, store=None, progress=False, **kw)


@eb.scorer
def exact(output: object) -> float:
    return 1.0


def test_one_scorer_or_score_instead_of_a_list_names_the_fix() -> None:
    df = pd.DataFrame({"x": [1]})
    with pytest.raises(eb.ConfigurationError, match=r"scorers= takes a list: scorers=\[exact\]"):
        _run(df, scorers=exact)
    with pytest.raises(eb.ConfigurationError, match=r"scorers= takes a list"):
        _run(df, scorers=lambda output: 1.0)
    with pytest.raises(eb.ConfigurationError, match=r"scores= takes a list: scores=\[score\]"):
        _run(df, scores=eb.define_score("d"))


@pytest.mark.parametrize(
    ("column", "task", "scorer"),
    [
        ("case_id", lambda case_id: case_id, lambda output: 1.0),
        ("row", lambda row: 1, lambda output: 1.0),
        ("ctx", lambda ctx, x=0: 1, lambda output: 1.0),
        ("output", lambda x=0: 1, lambda output: 1.0),
        ("row", lambda x=0, **kw: 1, lambda output: 1.0),  # **kwargs receives every name
    ],
)
def test_a_column_shadowing_a_special_name_that_is_received(
    column: str, task: Any, scorer: Any
) -> None:
    ran: list[int] = []

    def counting(**kw: Any) -> Any:
        ran.append(1)
        return task(**kw)

    counting.__signature__ = __import__("inspect").signature(task)  # type: ignore[attr-defined]
    with pytest.raises(eb.ConfigurationError, match=rf"column named '{column}'.*rename the column"):
        _run(pd.DataFrame({column: [1, 2], "x": [1, 2]}), task=counting, scorers=[scorer])
    assert ran == []  # before any case runs


def test_a_special_named_column_nobody_receives_is_fine() -> None:
    run = _run(pd.DataFrame({"row": [1], "x": [2]}), scorers=[lambda output: 1.0])
    assert run.headline.value == 1.0
    # scoring the stored outputs of a column named "output": the same value, no clash
    run = eb.run(
        pd.DataFrame({"output": ["a"]}),
        output_column="output",
        scorers=[lambda output: float(output == "a")],
        store=None,
        progress=False,
    )
    assert run.headline.value == 1.0


def test_an_empty_frame_says_it_has_no_rows_and_columns() -> None:
    with pytest.raises(eb.ConfigurationError, match="the DataFrame has 0 rows and 0 columns"):
        _run(pd.DataFrame())
    assert _run(pd.DataFrame({"x": []})).headline.n_cases == 0  # a run of 0 cases stays valid


@pytest.mark.parametrize("missing", [float("nan"), None, pd.NA])
def test_a_missing_id_names_the_row(missing: object) -> None:
    df = pd.DataFrame({"id": ["a", missing, "c"], "x": [1, 2, 3]}, index=[10, 11, 12])
    with pytest.raises(eb.ConfigurationError, match=r"missing case id in the 'id' column: row 1 "):
        _run(df)
    with pytest.raises(eb.ConfigurationError, match=r"in the index: row 0"):
        _run(pd.DataFrame({"x": [1]}, index=pd.Index([missing], dtype=object)))


@pytest.mark.parametrize("name", ["", "  "])
def test_a_blank_name_is_refused(name: str) -> None:
    with pytest.raises(eb.ConfigurationError, match="name= must not be blank"):
        _run(pd.DataFrame({"x": [1]}), name=name)
