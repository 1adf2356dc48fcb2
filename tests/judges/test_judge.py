"""eb.judge: declared scales, validated replies, votes, quorum, clients, configuration."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalbook as eb
from _judge_helpers import Scripted, judged, meta, one, run, score

# -- the production failures ---------------------------------------------------------------


@pytest.mark.parametrize("raw", [989898, 950, 100.5, -1])
def test_out_of_scale_is_an_error_never_clamped(raw: float) -> None:
    rec = one(score(raw))
    assert rec.status == "error"
    assert rec.reason == "invalid_score"
    assert math.isnan(rec.value)
    assert repr(raw) in (rec.message or "")
    assert "[0, 100]" in (rec.message or "")


def test_63_good_scores_and_one_corrupted_give_mean_098_and_one_error() -> None:
    client = Scripted(*([score(98)] * 63 + [score(989898)]))
    natural = eb.define_score("natural", grader=eb.Grader(kind="model", id="judge", model="m"))
    j = eb.judge(natural, "Q: {question}\nA: {output}", client=client)
    df = pd.DataFrame({"question": [f"q{i}" for i in range(64)]})
    r = run(df, task=lambda question: question.upper(), scorers=[j], concurrency=1)
    row = r.summary().iloc[0]
    assert row["mean"] == pytest.approx(0.98)
    assert (row["counted"], row["errors"], row["n_cases"]) == (63, 1, 64)
    bad = r.scores[r.scores["status"] == "error"]
    assert list(bad["case_id"]) == ["63"]
    assert list(bad["reason"]) == ["invalid_score"]
    assert "989898" in bad["message"].iloc[0]
    assert set(r.scores["grader_kind"]) == {"model"}
    assert len(client.calls) == 64
    assert client.calls[5][0] == [{"role": "user", "content": "Q: q5\nA: Q5"}]


# -- validation, branch by branch -----------------------------------------------------------


def test_valid_score_is_normalised_with_rationale_and_metadata() -> None:
    rec = one(score(95, "mostly right"), model="judge-1")
    assert (rec.status, rec.value, rec.rationale) == ("scored", 0.95, "mostly right")
    assert meta(rec) == {
        "model": "judge-1",
        "scale": [0, 100],
        "votes": [{"raw": 95, "justification": "mostly right"}],
        "raw": 95,
    }


@pytest.mark.parametrize(
    ("reply", "code", "named"),
    [
        ("not json at all", "invalid_judge_output", "not JSON"),
        ("[95]", "invalid_judge_output", "not an object"),
        ('"95"', "invalid_judge_output", "not an object"),
        (b"\xff\xfe", "invalid_judge_output", "not UTF-8"),
        (None, "invalid_judge_output", "not an object"),
        (42, "invalid_judge_output", "not an object"),
        ({"justification": "no score"}, "invalid_judge_output", "no 'score'"),
        ('{"rating": 5}', "invalid_judge_output", "no 'score'"),
        ({"score": None}, "invalid_score", "None"),
        ({"score": True}, "invalid_score", "True"),
        ({"score": False}, "invalid_score", "False"),
        ({"score": "95"}, "invalid_score", "'95'"),
        ({"score": [95]}, "invalid_score", "[95]"),
        ({"score": {"value": 95}}, "invalid_score", "{'value': 95}"),
        ({"score": math.nan}, "invalid_score", "nan"),
        ({"score": math.inf}, "invalid_score", "inf"),
        ('{"score": NaN}', "invalid_score", "nan"),
        ('{"score": 1e999}', "invalid_score", "inf"),
        ({"score": -math.inf}, "invalid_score", "-inf"),
    ],
)
def test_each_invalid_reply_is_its_own_error(reply: Any, code: str, named: str) -> None:
    rec = one(lambda messages, tool: reply)
    assert (rec.status, rec.reason) == ("error", code)
    assert named in (rec.message or "")


def test_client_exception_is_judge_raised_and_not_retried_when_permanent() -> None:
    client = Scripted(ValueError("bad request body"))
    rec = one(client)
    assert (rec.status, rec.reason) == ("error", "judge_raised")
    assert rec.message == "ValueError: bad request body"
    assert len(client.calls) == 1


def test_invalid_reply_is_not_retried() -> None:
    client = Scripted(score(950), score(95))
    rec = one(client, retries=5)
    assert rec.reason == "invalid_score"
    assert len(client.calls) == 1


@pytest.mark.parametrize(
    "reply",
    [
        '```json\n{"score": 80, "justification": "ok"}\n```',
        '```\n{"score": 80}\n```',
        '  {"score": 80}  ',
        b'{"score": 80}',
        '{"score": 80.0}',
    ],
)
def test_json_text_with_or_without_fences(reply: Any) -> None:
    rec = one(lambda messages, tool: reply)
    assert (rec.status, rec.value) == ("scored", 0.8)


def test_text_around_json_is_not_guessed() -> None:
    rec = one(lambda messages, tool: 'Sure! {"score": 80}')
    assert rec.reason == "invalid_judge_output"


def test_numpy_and_decimal_scores_are_real_numbers() -> None:
    assert one(score(np.int64(40))).value == 0.4
    assert one(score(Decimal("12.5"))).value == 0.125
    assert one(score(np.bool_(True))).reason == "invalid_score"


# -- scales -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("scale", "raw", "value"),
    [
        ((1, 5), 1, 0.0),
        ((1, 5), 5, 1.0),
        ((1, 5), 4, 0.75),
        ((1, 5), 4.5, 0.875),
        ((0, 10), 7, 0.7),
        ((0, 10), 0, 0.0),
        ((0, 10), 10, 1.0),
        ((0, 100), 100, 1.0),
        ((0, 1), 0.25, 0.25),
        ((-1, 1), 0, 0.5),
    ],
)
def test_scales_normalise_valid_scores(
    scale: tuple[float, float], raw: float, value: float
) -> None:
    rec = one(score(raw), scale=scale)
    assert rec.status == "scored"
    assert rec.value == pytest.approx(value)
    assert meta(rec)["raw"] == raw
    assert meta(rec)["scale"] == list(scale)


@pytest.mark.parametrize(
    ("scale", "raw"), [((1, 5), 0), ((1, 5), 6), ((1, 5), 50), ((0, 10), 10.5), ((0, 10), 95)]
)
def test_scales_reject_values_outside(scale: tuple[float, float], raw: float) -> None:
    rec = one(score(raw), scale=scale)
    assert rec.reason == "invalid_score"
    assert f"[{scale[0]}, {scale[1]}]" in (rec.message or "")


def test_tool_schema_follows_definition_and_scale() -> None:
    d = eb.define_score("clarity", label="Clear answer", description="Is it easy to follow?")
    client = Scripted(score(3))
    judged(eb.judge(d, "{output}", client=client, scale=(1, 5)), output="x")
    tool = client.calls[0][1]
    assert tool == {  # the tool the client is given: the one for this definition and scale
        "type": "function",
        "function": {
            "name": "submit_evaluation",
            "description": "Submit your evaluation of 'Clear answer'. Is it easy to follow? "
            "Give a short justification, then a score from 1 (worst) to 5 (best).",
            "parameters": {
                "type": "object",
                "properties": {
                    "justification": {
                        "type": "string",
                        "description": "Why this score, in one or two sentences.",
                    },
                    "score": {
                        "type": "number",
                        "minimum": 1,
                        "maximum": 5,
                        "description": "The score for 'Clear answer', a number from 1 to 5.",
                    },
                },
                "required": ["justification", "score"],
                "additionalProperties": False,
            },
        },
    }
    fn = tool["function"]
    assert fn["name"] == "submit_evaluation"
    props = fn["parameters"]["properties"]
    assert (props["score"]["minimum"], props["score"]["maximum"]) == (1, 5)
    assert props["justification"]["type"] == "string"
    assert set(fn["parameters"]["required"]) == {"score", "justification"}
    assert "Clear answer" in fn["description"] and "easy to follow" in fn["description"]
    json.dumps(tool)


# -- votes, reducers, quorum ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reducer", "raws", "value"),
    [
        ("median", [60, 90, 70], 0.7),
        ("median", [60, 90, 70, 80], 0.75),
        ("mean", [60, 90, 75], 0.75),
        ("min", [60, 90, 70], 0.6),
        ("max", [60, 90, 70], 0.9),
        ("mode", [70, 90, 70], 0.7),
        ("mode", [90, 60, 60, 90], 0.6),  # a tie goes to the lowest value
        ("mode", [80, 80, 80], 0.8),
    ],
)
def test_reducers(reducer: Any, raws: list[int], value: float) -> None:
    client = Scripted(*[score(r, f"j{r}") for r in raws])
    rec = one(client, votes=len(raws), reducer=reducer)
    assert len(client.calls) == len(raws)
    assert rec.status == "scored"
    assert rec.value == pytest.approx(value)
    m = meta(rec)
    assert sorted(v["raw"] for v in m["votes"]) == sorted(raws)
    assert m["reducer"] == reducer
    assert m["spread"] == max(raws) - min(raws)
    assert m["valid_votes"] == len(raws)
    closest = min(raws, key=lambda r: abs(r - value * 100))
    assert rec.rationale == f"j{closest}"


def test_majority_is_the_old_name_of_mode_and_warns() -> None:
    raws = [90, 60, 60, 90]
    client = Scripted(*[score(r, f"j{r}") for r in raws])
    with pytest.warns(DeprecationWarning, match='reducer="majority" is deprecated.*"mode"'):
        rec = one(client, votes=len(raws), reducer="majority")
    assert rec.value == pytest.approx(0.6)  # the same rule: a tie goes to the lowest value
    assert meta(rec)["reducer"] == "mode"
    with pytest.warns(DeprecationWarning) as caught:
        scorer = eb.judge("q", "{output}", client=client, votes=2, reducer="majority")
    assert caught[0].filename == __file__  # the warning points at the user's eb.judge()
    assert scorer.definitions[0].grader == eb.Grader(
        kind="model", id="judge", votes=2, reducer="mode"
    )


def test_a_grader_stored_with_majority_reads_as_mode() -> None:
    # a run written before the rename resumes and compares like one written since
    stored = {"kind": "model", "id": "judge", "votes": 3, "reducer": "majority"}
    assert eb.Grader.model_validate(stored).reducer == "mode"


def test_an_unknown_reducer_names_the_choices() -> None:
    with pytest.raises(eb.ConfigurationError, match="median, mean, min, max, mode; got 'vote'"):
        eb.judge("q", "{output}", client=Scripted(), reducer="vote")  # type: ignore[arg-type]


def test_mean_of_equal_votes_stays_in_range() -> None:
    rec = one(score(0.1), scale=(0, 0.1), votes=3, reducer="mean")
    assert rec.value == 1.0


def test_any_invalid_vote_is_an_error_by_default() -> None:
    client = Scripted(score(80), score(989898), score(90))
    rec = one(client, votes=3)
    assert (rec.status, rec.reason) == ("error", "invalid_score")
    assert "1 of 3 judge votes invalid, 3 valid needed" in (rec.message or "")
    assert "989898" in (rec.message or "")
    assert len(meta(rec)["votes"]) == 3


def test_quorum_lets_enough_valid_votes_score() -> None:
    client = Scripted(score(80), score(989898), score(90))
    rec = one(client, votes=3, quorum=2)
    assert (rec.status, rec.value) == ("scored", 0.85)
    m = meta(rec)
    assert m["valid_votes"] == 2
    assert sum("error" in v for v in m["votes"]) == 1


def test_quorum_not_met_is_an_error_with_the_first_invalid_code() -> None:
    client = Scripted(score(80), ValueError("down"), ValueError("down"))
    rec = one(client, votes=3, quorum=2)
    assert (rec.status, rec.reason) == ("error", "judge_raised")
    assert "2 of 3 judge votes invalid, 2 valid needed" in (rec.message or "")


def test_votes_run_concurrently() -> None:
    arrived = 0

    async def client(messages: Any, tool: Any) -> dict[str, Any]:
        nonlocal arrived
        arrived += 1
        while arrived < 4:  # finishes only once all four votes are in flight together
            await asyncio.sleep(0)
        return score(50)

    j = eb.judge("q", "{output}", client=client, votes=4, timeout=10, retries=0)
    rec = judged(j, output="x")  # sequential votes would time out into judge_raised
    assert (rec.status, rec.value) == ("scored", 0.5)


def test_votes_of_a_sync_client_run_in_threads_together() -> None:
    barrier = threading.Barrier(3, timeout=10)

    def client(messages: Any, tool: Any) -> dict[str, Any]:
        barrier.wait()  # breaks (and the vote raises) unless three calls overlap
        return score(30)

    rec = one(client, votes=3, retries=0)
    assert (rec.status, rec.value) == ("scored", 0.3)


def test_max_concurrency_bounds_calls_in_flight() -> None:
    lock = threading.Lock()
    now = peak = 0

    def client(messages: Any, tool: Any) -> dict[str, Any]:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
        time.sleep(0.01)
        with lock:
            now -= 1
        return score(50)

    j = eb.judge("q", "{output}", client=client, votes=3, max_concurrency=2)
    r = run(pd.DataFrame({"a": range(6)}), task=lambda a: a, scorers=[j], concurrency=4)
    assert r.summary().iloc[0]["counted"] == 6
    assert 1 <= peak <= 2


# -- clients --------------------------------------------------------------------------------


def test_async_client_function_and_async_callable_object() -> None:
    async def client(messages: Any, tool: Any) -> str:
        await asyncio.sleep(0)
        return json.dumps(score(20))

    class Client:
        model = "async-model"

        async def __call__(self, messages: Any, tool: Any) -> dict[str, Any]:
            return score(30)

    assert one(client).value == 0.2
    rec = one(Client())
    assert rec.value == 0.3
    assert meta(rec)["model"] == "async-model"


def test_async_client_in_a_run_inside_a_running_loop() -> None:
    async def client(messages: Any, tool: Any) -> dict[str, Any]:
        return score(40)

    j = eb.judge("q", "{output}", client=client)

    async def main() -> eb.Run:
        return run(pd.DataFrame({"a": [1, 2]}), task=lambda a: a, scorers=[j])

    r = asyncio.run(main())
    assert list(r.scores["value"]) == [0.4, 0.4]


def test_clients_get_their_own_copies_of_messages() -> None:
    seen: list[tuple[int, str]] = []

    def client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        seen.append((len(messages), tool["function"]["name"]))
        messages.append({"role": "assistant", "content": "mutated"})
        tool["function"]["name"] = "mutated"
        return score(50)

    j = eb.judge("q", "{output}", client=client, votes=3)
    assert judged(j, output="x").status == "scored"
    assert judged(j, output="y").status == "scored"  # the next case sees none of the edits
    assert seen == [(1, "submit_evaluation")] * 6


def test_name_definition_gets_a_model_grader() -> None:
    j = eb.judge("tone", "{output}", client=Scripted(score(1), model="gpt-x"), votes=3)
    d = j.definitions[0]
    assert d.grader == eb.Grader(kind="model", id="judge", model="gpt-x", votes=3, reducer="median")
    r = run(pd.DataFrame({"a": [1]}), task=lambda a: a, scorers=[j])
    row = r.scores.iloc[0]
    assert (row["grader_kind"], row["grader_id"], row["grader_model"]) == (
        "model",
        "judge",
        "gpt-x",
    )
    assert json.loads(row["metadata"])["model"] == "gpt-x"


def test_definition_used_in_a_combined_score() -> None:
    natural = eb.define_score("natural")
    passed = eb.define_score("pass", combine=eb.at_least(natural, 0.5), primary=True)
    j = eb.judge(natural, "{output}", client=Scripted(score(80), score(20), score(950)))
    r = run(
        pd.DataFrame({"a": [1, 2, 3]}),
        task=lambda a: a,
        scorers=[j],
        scores=[passed],
        concurrency=1,
    )
    table = r.scores[r.scores["score"] == "pass"]
    assert list(table["status"]) == ["scored", "scored", "error"]
    assert list(table["value"][:2]) == [1.0, 0.0]
    assert table["reason"].iloc[2] == "component_error:natural"


# -- configuration ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {"scale": (100, 0)},
        {"scale": (0, 0)},
        {"scale": (0,)},
        {"scale": (0, math.inf)},
        {"scale": (False, True)},
        {"scale": "0-100"},
        {"votes": 0},
        {"votes": True},
        {"reducer": "vote"},  # "mode" is one now ("majority" was its judge-only name)
        {"quorum": 4, "votes": 3},
        {"quorum": 0},
        {"retries": -1},
        {"backoff": -1},
        {"timeout": 0},
        {"max_concurrency": 0},
        {"max_backoff": math.nan},
        {"client": "not callable"},
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any]) -> None:
    options.setdefault("client", Scripted(score(1)))
    with pytest.raises(eb.ConfigurationError):
        eb.judge("q", "{output}", **options)


def test_bad_definitions_are_configuration_errors() -> None:
    a = eb.define_score("a")
    with pytest.raises(eb.ConfigurationError, match="derived"):
        eb.judge(eb.define_score("b", combine=eb.all_of(a)), "{output}", client=Scripted(1))
    with pytest.raises(eb.ConfigurationError):
        eb.judge(42, "{output}", client=Scripted(1))  # type: ignore[arg-type]
    with pytest.raises(eb.ConfigurationError):
        eb.judge("bad name!", "{output}", client=Scripted(1))
    with pytest.raises(eb.ConfigurationError, match="prompt"):
        eb.judge("q", 42, client=Scripted(1))  # type: ignore[arg-type]


# -- the contract, as a property ----------------------------------------------------------------

_scores = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
_replies = st.one_of(
    st.builds(lambda s, j: {"score": s, "justification": j}, _scores, st.text(max_size=10)),
    st.dictionaries(st.text(max_size=6), _scores, max_size=3),
    st.builds(lambda s: json.dumps({"score": s}), _scores.filter(lambda s: s is not None)),
    st.text(max_size=30),
    st.binary(max_size=10),
    st.integers(),
    st.none(),
    st.lists(st.integers(), max_size=3),
)
_scales = st.sampled_from([(0, 100), (1, 5), (0, 10), (0, 1), (-5, 5)])


def _expected_value(reply: Any, low: float, high: float) -> float | None:
    if isinstance(reply, bytes):
        try:
            reply = reply.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(reply, str):
        try:
            reply = json.loads(reply)
        except ValueError:
            return None
    if not isinstance(reply, dict) or "score" not in reply:
        return None
    s = reply["score"]
    if isinstance(s, bool) or not isinstance(s, int | float):
        return None
    try:
        if not (math.isfinite(s) and low <= s <= high):
            return None
    except OverflowError:
        return None
    return (float(s) - low) / (high - low)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=_replies, scale=_scales)
def test_any_reply_is_a_valid_record_or_an_error(reply: Any, scale: tuple[int, int]) -> None:
    rec = one(lambda messages, tool: reply, scale=scale)
    expected = _expected_value(reply, *scale)
    if expected is None:
        assert rec.status == "error"
        assert rec.reason in ("judge_raised", "invalid_judge_output", "invalid_score")
        assert math.isnan(rec.value)
        assert rec.message
    else:
        assert rec.status == "scored"
        assert 0.0 <= rec.value <= 1.0
        assert rec.value == pytest.approx(expected)


def test_a_judge_travels_with_cloudpickle() -> None:
    cloudpickle = pytest.importorskip("cloudpickle")
    j = eb.judge("q", "{output}", client=lambda m, t: score(30), votes=2, max_concurrency=1)
    assert judged(j, output="x").value == 0.3  # its pool and semaphore exist now
    copy = cloudpickle.loads(cloudpickle.dumps(j))
    assert copy.definitions == j.definitions
    assert judged(copy, output="x").value == 0.3


def test_model_name_falls_back_to_the_definitions_grader() -> None:
    d = eb.define_score("graded", grader=eb.Grader(kind="model", id="judge", model="gpt-x"))
    j = eb.judge(d, "Rate {output}", client=lambda messages, tool: {"score": 50})
    run = eb.run(
        pd.DataFrame({"x": ["a"]}), task=lambda x: x, scorers=[j], store=None, progress=False
    )
    assert json.loads(run.scores["metadata"][0])["model"] == "gpt-x"
