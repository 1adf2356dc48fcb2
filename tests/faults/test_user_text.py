"""User objects whose `__str__` is hostile become text in a record, never an escaped exception.

The promise is in docs/concepts.md: nothing a scorer or task returns or raises breaks a run.
"""

from __future__ import annotations

import json
import warnings
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _hostile import BadText, ClassRaises, Hostile, StrNotText, StrRaises, armed

import evalbook as eb
from _public import case_pages, scores_of

S = eb.define_score("s")
DF = pd.DataFrame({"question": ["a", "b"]})


class Text(str):
    """A str subclass: its instances must not travel into the run's records."""


def test_the_text_gate_never_raises_on_a_hostile_object() -> None:
    outputs = [
        Hostile(),
        [ClassRaises(), {"k": Hostile()}],
        (Hostile(),),
        ["\ud800", ClassRaises()],
    ]
    cells = [ClassRaises(), Hostile(), [ClassRaises()], "q"]
    seen: list[Any] = []

    def task(k: int, q: Any) -> Any:
        seen.append(q)
        return outputs[k]

    def reason(k: int) -> eb.Unscored:
        return eb.Unscored(Hostile())  # type: ignore[arg-type]

    df = pd.DataFrame({"k": range(4), "q": cells})
    with armed(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = eb.run(df, task=task, scorers=[eb.scorer(S)(reason)], store=None, progress=False)
        got = r.cases["output"].tolist()
    assert r.cases["outcome"].astype(str).tolist() == ["passed"] * 4
    # nothing to replace: the very same objects, in the output and in the input data
    assert [a is b for a, b in zip(got[:3], outputs[:3], strict=True)] == [True] * 3
    assert [id(q) for q in seen] == [id(c) for c in cells]
    assert got[3][0] == "\\ud800" and got[3][1] is outputs[3][1]
    assert [str(w.message)[:31] for w in caught] == ["case '3': output held a lone su"]
    assert set(r.scores["reason"]) == {"<Hostile: str() raised RuntimeError>"}


def test_a_failing_str_gives_a_placeholder() -> None:
    reasons = [StrRaises(), StrNotText(), 10**5000]
    rows = scores_of([eb.Unscored(x) for x in reasons]).to_dict("records")  # type: ignore[arg-type]
    assert [r["reason"] for r in rows[:2]] == [
        "<StrRaises: str() raised ValueError>",
        "<StrNotText: str() raised TypeError>",
    ]
    assert rows[2]["reason"].startswith("<int: str() raised ValueError")
    [row] = scores_of([eb.Score(1.0, rationale=Text("x"))]).to_dict("records")
    assert type(row["rationale"]) is str and row["rationale"] == "x"


@pytest.mark.parametrize("exc", [StrRaises(), StrNotText()])
def test_a_scorer_raising_names_the_exception_whose_str_fails(exc: Exception) -> None:
    def raises(k: int) -> float:
        raise exc

    r = eb.run(
        pd.DataFrame({"k": [0]}),
        task=lambda k: k,
        scorers=[eb.scorer(S)(raises)],
        store=None,
        progress=False,
    )
    [row] = r.scores.to_dict("records")
    assert (row["status"], row["reason"]) == ("error", "scorer_raised")
    assert row["message"] == f"{type(exc).__name__}: <{type(exc).__name__}: str() raised " + (
        "ValueError>" if isinstance(exc, StrRaises) else "TypeError>"
    )


def test_hostile_rationale_label_and_reason_become_placeholders() -> None:
    given = [eb.Score(0.5, rationale=BadText(), label=BadText()), eb.Unscored(BadText())]  # type: ignore[arg-type]
    rows = scores_of(given).to_dict("records")
    assert rows[0]["rationale"] == "<BadText: str() raised RuntimeError>"
    assert json.loads(rows[0]["metadata"]) == {"label": "<BadText: str() raised RuntimeError>"}
    assert rows[1]["reason"] == "<BadText: str() raised RuntimeError>"


@pytest.mark.parametrize("kind", [StrRaises, StrNotText])
def test_a_scorer_raising_an_unprintable_exception_is_that_records_error(kind: type) -> None:
    @eb.scorer(S)
    def scorer(output: str) -> float:
        raise kind()

    r = eb.run(DF, task=lambda question: question, scorers=[scorer], store=None, progress=False)
    assert r.scores["status"].tolist() == ["error", "error"]
    assert r.scores["message"].str.contains("str() raised", regex=False).all()


def test_hostile_texts_through_every_text_channel_finish_the_run() -> None:
    t, u = eb.define_score("t"), eb.define_score("u")

    @eb.scorer(S)
    def skips(output: str) -> Any:
        exc = eb.SkipScore("x")
        exc.reason = BadText()  # type: ignore[assignment]
        raise exc

    def task(question: str, ctx: Any) -> str:
        ctx.record_score(t, 1.0, rationale=BadText())
        ctx.record_unscored(u, BadText())
        return question

    r = eb.run(DF, task=task, scores=[t, u], scorers=[skips], store=None, progress=False)
    rows = r.scores.sort_values(["case_id", "score"]).to_dict("records")
    assert [x["status"] for x in rows] == ["unscored", "scored", "unscored"] * 2
    assert {x["reason"] for x in rows if x["status"] == "unscored"} == {
        "<BadText: str() raised RuntimeError>"
    }
    assert {x["rationale"] for x in rows if x["status"] == "scored"} == {
        "<BadText: str() raised RuntimeError>"
    }


@pytest.mark.parametrize("store", [False, True], ids=["memory", "stored"])
def test_hostile_cells_in_the_data_never_break_a_run_or_a_view(store: bool, tmp_path: Path) -> None:
    """Cells whose `__class__`, `__str__`, `__repr__`, `__eq__`, `__hash__` ... raise pass
    through the text gate untouched (the task and scorer receive them) and every view shows
    them by a placeholder."""
    df = pd.DataFrame(
        {
            "q": [ClassRaises(), Hostile(), "ok"],
            "target": [Hostile(), ClassRaises(), "t"],
            "extra": [ClassRaises(), Hostile(), None],
        }
    )
    seen: list[Any] = []

    def task(q: Any, extra: Any) -> str:
        seen.append(q)
        return "x"

    def scorer(output: str, target: Any) -> float:
        seen.append(target)
        return 1.0

    # Parquet cannot hold such cells: a stored run says so and goes on without its data
    stored = pytest.warns(RuntimeWarning, match="could not store the input data")
    with armed(), stored if store else nullcontext():
        r = eb.run(
            df, task=task, scorers=[scorer], store=tmp_path if store else None, progress=False
        )
    with armed():
        views = [repr(r), r._repr_html_(), *case_pages(r)]
    assert r.cases["outcome"].astype(str).tolist() == ["passed"] * 3
    assert r.scores["value"].tolist() == [1.0] * 3
    assert {id(v) for v in seen} >= {id(df["q"][0]), id(df["q"][1]), id(df["target"][0])}
    assert "&lt;Hostile: str() raised RuntimeError&gt;" in views[3]
    if store:
        assert eb.load_run(r.path).cases["outcome"].astype(str).tolist() == ["passed"] * 3
