"""`eb.tool_calls_match`: its four modes and three argument rules, through `eb.run`.

The modes' relations are hypothesis properties over any pair of call lists (one run per
example, one case per pair, one scorer per (mode, args)):

- strict ⇒ unordered;
- unordered ⇔ subset ∧ superset;
- unordered ⇒ as many calls made as expected;
- for every mode, the value with args="ignore" ≥ the value with args="exact";
- args=(a function that always says True) gives what args="ignore" gives, and args=(JSON
  equality as a function) what args="exact" gives;
- unordered, subset and superset do not change when the calls made are shuffled;
- the calls made, given back as the expected calls (with their arguments), match strictly;
- with args="exact", every mode gives what brute force gives (every injection tried).
"""

from __future__ import annotations

import json
import random
from itertools import permutations, product
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb

MODES = ("strict", "unordered", "subset", "superset")
NAMES = st.sampled_from(["search", "open", "click"])
ARGS = st.sampled_from([{}, {"x": 1}, {"x": 1.0}, {"x": True}, {"x": "1"}, {"x": [1, 2]}])
MADE = st.lists(st.tuples(NAMES, ARGS), max_size=5)
EXPECTED = st.lists(
    st.one_of(NAMES, st.builds(lambda n, a: {"name": n, "arguments": a}, NAMES, ARGS)),
    max_size=5,
)


def transcript_of(calls: list[tuple[str, Any]]) -> eb.Transcript:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i, (name, args) in enumerate(calls):
        tool_call = {"id": f"t{i}", "function": {"name": name, "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "tool_calls": [tool_call]})
        messages.append({"role": "tool", "tool_call_id": f"t{i}", "content": "ok"})
    return eb.Transcript(messages, output="done")


def agent(made: list[tuple[str, Any]]) -> eb.Transcript:
    return transcript_of(made)


def scores_of(frame: pd.DataFrame, scorers: list[Any]) -> pd.DataFrame:
    run = eb.run(frame, task=agent, scorers=scorers, store=None, progress=False)
    return run.scores.pivot(index="case_id", columns="score", values="value")


def canon(v: Any) -> Any:
    """A JSON value in a form Python compares as JSON does (true is not 1; 1 is 1.0)."""
    if isinstance(v, bool):
        return ("bool", v)
    if isinstance(v, int | float):
        return ("number", float(v))
    if isinstance(v, list | tuple):
        return ("list", tuple(canon(x) for x in v))
    if isinstance(v, dict):
        return ("object", tuple(sorted((k, canon(x)) for k, x in v.items())))
    return (type(v).__name__, v)


def json_same(e: Any, a: Any) -> bool:
    return bool(canon(e) == canon(a))


def fits(e: Any, a: tuple[str, Any]) -> bool:
    """Whether a call made is an expected one, with args="exact"."""
    if isinstance(e, str) or "arguments" not in e:
        return (e if isinstance(e, str) else e["name"]) == a[0]
    return bool(e["name"] == a[0] and canon(e["arguments"]) == canon(a[1]))


def oracle(expected: list[Any], made: list[tuple[str, Any]]) -> dict[str, bool]:
    """Every mode by brute force: strict in order, the others by trying every injection."""
    strict = len(expected) == len(made) and all(map(fits, expected, made))
    into = any(  # every expected call has its own call made
        all(fits(e, made[j]) for e, j in zip(expected, p, strict=True))
        for p in permutations(range(len(made)), len(expected))
    )
    onto = any(  # every call made has its own expected call
        all(fits(expected[i], a) for a, i in zip(made, p, strict=True))
        for p in permutations(range(len(expected)), len(made))
    )
    unordered = len(expected) == len(made) and into
    return {"strict": strict, "unordered": unordered, "subset": into, "superset": onto}


RULES: dict[str, Any] = {
    "exact": "exact",
    "ignore": "ignore",
    "yes": lambda e, a: True,
}


def all_scorers() -> list[Any]:
    return [
        eb.tool_calls_match(f"{mode}.{rule}", "expected", mode=mode, args=args)  # type: ignore[arg-type]
        for mode, (rule, args) in product(MODES, RULES.items())
    ]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.tuples(EXPECTED, MADE), min_size=1, max_size=12), seed=st.integers())
def test_the_modes_relations_hold_for_any_pair_of_call_lists(
    pairs: list[tuple[list[Any], list[tuple[str, Any]]]], seed: int
) -> None:
    rng = random.Random(seed)
    shuffled = [rng.sample(made, len(made)) for _, made in pairs]
    back = [[{"name": n, "arguments": a} for n, a in made] for _, made in pairs]
    frame = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(len(pairs))],
            "expected": [e for e, _ in pairs],
            "made": [m for _, m in pairs],
        }
    )
    v = scores_of(frame, all_scorers())
    w = scores_of(frame.assign(made=shuffled), all_scorers())
    mine = scores_of(frame.assign(expected=back), all_scorers())
    assert set(v.stack().unique()) <= {0.0, 1.0}
    for i, (expected, made) in enumerate(pairs):
        row, case = v.loc[f"c{i}"], f"c{i}"
        for rule in RULES:
            assert row[f"strict.{rule}"] <= row[f"unordered.{rule}"], case
            both = min(row[f"subset.{rule}"], row[f"superset.{rule}"])
            assert row[f"unordered.{rule}"] == both, case
            if row[f"unordered.{rule}"] == 1.0:
                assert len(expected) == len(made), case
            for mode in ("unordered", "subset", "superset"):
                assert w.loc[case, f"{mode}.{rule}"] == row[f"{mode}.{rule}"], case
            assert mine.loc[case, f"strict.{rule}"] == 1.0, case
        for mode in MODES:
            assert row[f"{mode}.ignore"] >= row[f"{mode}.exact"], case
            assert row[f"{mode}.yes"] == row[f"{mode}.ignore"], case
        for mode, value in oracle(expected, made).items():
            assert row[f"{mode}.exact"] == value, (case, mode)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs=st.lists(st.tuples(EXPECTED, MADE), min_size=1, max_size=10))
def test_a_json_equality_function_gives_what_exact_gives(
    pairs: list[tuple[list[Any], list[tuple[str, Any]]]],
) -> None:
    frame = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(len(pairs))],
            "expected": [e for e, _ in pairs],
            "made": [m for _, m in pairs],
        }
    )
    scorers = [
        eb.tool_calls_match(f"{mode}.{rule}", "expected", mode=mode, args=args)  # type: ignore[arg-type]
        for mode in MODES
        for rule, args in (("exact", "exact"), ("fn", json_same))
    ]
    v = scores_of(frame, scorers)
    for mode in MODES:
        assert v[f"{mode}.exact"].tolist() == v[f"{mode}.fn"].tolist()


def one(expected: Any, made: list[tuple[str, Any]], **kw: Any) -> pd.Series:
    frame = pd.DataFrame({"id": ["c"], "expected": [expected], "made": [made]})
    run = eb.run(
        frame,
        task=agent,
        scorers=[eb.tool_calls_match("m", "expected", **kw)],
        store=None,
        progress=False,
    )
    return run.scores.iloc[0]


MADE_2 = [("search", {"q": "paris"}), ("open", {"url": "a", "n": 1})]


@pytest.mark.parametrize(
    ("expected", "kw", "value"),
    [
        (["search", "open"], {}, 1.0),
        (["open", "search"], {}, 0.0),
        (["open", "search"], {"mode": "unordered"}, 1.0),
        (["search"], {"mode": "subset"}, 1.0),
        (["search"], {"mode": "superset"}, 0.0),
        (["search", "open", "click"], {"mode": "superset"}, 1.0),
        (["search", "open", "click"], {"mode": "subset"}, 0.0),
        (["search", "search"], {"mode": "subset"}, 0.0),  # each expected call is one call
        ([{"name": "search", "arguments": {"q": "paris"}}, "open"], {}, 1.0),
        ([{"name": "search", "arguments": '{"q": "paris"}'}, "open"], {}, 1.0),  # JSON text
        ([{"name": "search", "arguments": {"q": "rome"}}, "open"], {}, 0.0),
        ([{"name": "search", "arguments": {"q": "rome"}}, "open"], {"args": "ignore"}, 1.0),
        ([{"name": "search"}, {"name": "open", "arguments": {"n": 1.0, "url": "a"}}], {}, 1.0),
        ([{"name": "search"}, {"name": "open", "arguments": {"n": True, "url": "a"}}], {}, 0.0),
        ('["search", "open"]', {}, 1.0),  # JSON text of the list
        ([], {"mode": "subset"}, 1.0),
        ([], {}, 0.0),
    ],
)
def test_examples(expected: Any, kw: dict[str, Any], value: float) -> None:
    rec = one(expected, MADE_2, **kw)
    assert (rec["status"], rec["value"]) == ("scored", value)


def test_a_callable_compares_the_arguments() -> None:
    seen: list[Any] = []

    def close_enough(expected: Any, actual: Any) -> bool:
        seen.append((expected, actual))
        return str(expected["q"]).lower() == actual["q"]

    rec = one([{"name": "search", "arguments": {"q": "PARIS"}}, "open"], MADE_2, args=close_enough)
    assert rec["value"] == 1.0
    assert seen == [({"q": "PARIS"}, {"q": "paris"})]  # names-only calls are not compared


def test_a_callable_that_does_not_say_a_bool_is_an_error_record() -> None:
    rec = one([{"name": "search", "arguments": {}}], MADE_2, mode="subset", args=lambda e, a: 1)
    assert (rec["status"], rec["reason"]) == ("error", "scorer_raised")
    assert "not a bool" in rec["message"]


def test_a_mismatch_says_why() -> None:
    assert one(["search", "click"], MADE_2, mode="unordered")["rationale"] == (
        "not made: click; not expected: open"
    )
    assert "call 1" in one(["search", "click"], MADE_2)["rationale"]


def test_a_sample_without_a_transcript_is_unscored() -> None:
    frame = pd.DataFrame({"id": ["a", "b"], "expected": [["f"], ["f"]]})

    def task(case_id: str, ctx: Any) -> str:
        if case_id == "b":
            ctx.step(role="assistant", tool_calls=[{"id": "1", "function": {"name": "f"}}])
        return "x"

    run = eb.run(frame, task=task, scorers=[eb.tool_calls_match("m", "expected")],
                 store=None, progress=False)  # fmt: skip
    assert run.scores["status"].tolist() == ["unscored", "scored"]
    assert run.scores["reason"].iloc[0] == "no_transcript"
    assert run.scores["value"].iloc[1] == 1.0


@pytest.mark.parametrize(
    ("bad", "said"),
    [
        (None, "None"),
        ("search", "'search'"),
        ({"name": "search"}, "{'name': 'search'}"),
        ([3], "expected call 0 is 3"),
        ([{"name": "s", "args": {}}], "'args'"),
        ([{"name": "s", "arguments": "{not json"}], "not JSON text"),
        (float("nan"), "nan"),
    ],
)
def test_a_bad_expected_value_fails_before_any_case_runs(bad: Any, said: str) -> None:
    frame = pd.DataFrame({"id": ["ok", "bad"], "expected": [["search"], bad]})
    called: list[str] = []

    def task(case_id: str) -> str:
        called.append(case_id)
        return "x"

    with pytest.raises(eb.ConfigurationError) as info:
        eb.run(frame, task=task, scorers=[eb.tool_calls_match("m", "expected")], store=None,
               progress=False)  # fmt: skip
    assert called == []
    assert "case 'bad'" in str(info.value)
    assert said in str(info.value)


def test_a_missing_column_fails_before_any_case_runs() -> None:
    frame = pd.DataFrame({"id": ["a"], "calls": [["f"]], "made": [[]]})
    with pytest.raises(eb.ConfigurationError, match=r"'expected' is not a column.*calls"):
        eb.run(frame, task=agent, scorers=[eb.tool_calls_match("m", "expected")], store=None,
               progress=False)  # fmt: skip


def test_a_column_name_that_is_no_identifier_works() -> None:
    frame = pd.DataFrame({"id": ["a"], "expected calls": [["search", "open"]], "made": [MADE_2]})
    scorer = eb.tool_calls_match("m", "expected calls")
    run = eb.run(frame, task=agent, scorers=[scorer], store=None, progress=False)
    assert run.scores["value"].tolist() == [1.0]


@pytest.mark.parametrize(
    ("kw", "said"),
    [
        ({"mode": "ordered"}, "mode must be one of"),
        ({"args": "loose"}, "args must be 'exact', 'ignore' or a function"),
        ({"args": 3}, "args must be"),
    ],
)
def test_bad_options_fail_at_construction(kw: dict[str, Any], said: str) -> None:
    with pytest.raises(eb.ConfigurationError, match=said):
        eb.tool_calls_match("m", "expected", **kw)


def test_the_definition_and_grader() -> None:
    mine = eb.define_score("tools", primary=True)
    assert eb.tool_calls_match(mine, "e").definitions == (mine,)
    made = eb.tool_calls_match("tools", "e").definitions[0]
    assert (made.grader.kind, made.grader.id) == ("rule", "tool_calls_match")  # type: ignore[union-attr]
    derived = eb.define_score("both", combine=eb.all_of(mine))
    with pytest.raises(eb.ConfigurationError, match="derived"):
        eb.tool_calls_match(derived, "e")


def test_a_stored_runs_rescore_scores_as_the_run_did(tmp_path: Path) -> None:
    """data.parquet gives a column of dicts back as arrays of dicts with every row's keys
    (null where a row had none): the same expected calls, the same values."""
    made = {"a": [("s", {"q": 1})], "b": [("o", {"u": "x", "n": [1, 2]}), ("s", {})]}

    def task(case_id: str) -> eb.Transcript:
        return transcript_of(made[case_id])

    frame = pd.DataFrame(
        {
            "id": ["a", "b"],
            "expected": [
                [{"name": "s", "arguments": {"q": 1}}],
                [{"name": "o", "arguments": {"u": "x", "n": [1, 2]}}, {"name": "s"}],
            ],
        }
    )
    scorers = [eb.tool_calls_match(f"m.{m}", "expected", mode=m) for m in MODES]  # type: ignore[arg-type]
    run = eb.run(frame, task=task, scorers=scorers, store=tmp_path, progress=False)
    assert run.path is not None
    loaded = eb.load_run(run.path)
    assert isinstance(loaded.data["expected"].iloc[0], np.ndarray)  # what the store gives
    again = loaded.rescore(scorers=scorers, progress=False)
    assert run.scores["value"].tolist() == [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    assert again.scores["value"].tolist() == run.scores["value"].tolist()


@pytest.mark.parametrize(
    ("expected", "value"),
    [
        ([{"name": "open", "arguments": {"url": "a", "n": 1, "page": None}}], 1.0),
        ([{"name": "open", "arguments": None}], 1.0),  # null arguments: the name only
        ([{"name": "open", "arguments": {"url": "a", "n": [1]}}], 0.0),
    ],
)
def test_null_keys_count_as_absent(expected: Any, value: float) -> None:
    rec = one(expected, [("open", {"url": "a", "n": 1})])
    assert rec["value"] == value
