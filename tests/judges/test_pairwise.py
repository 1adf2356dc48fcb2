"""eb.pairwise_judge: both orders, position flips, ties, invalid replies, baselines, judge_stats."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import openai
import pandas as pd
import pytest

import evalbook as eb
from _judge_helpers import Scripted, run
from _openai_server import Server, completion, server

__all__ = ["server"]  # the fixture, imported from the shared server module

PROMPT = "Question: {q}\nResponse A: {output}\nResponse B: {baseline}\nWhich is better?"
SLOTS = re.compile(r"Response A: (.*)\nResponse B: (.*)\n")


def prefer(choice: str, why: str = "because") -> dict[str, Any]:
    return {"preference": choice, "justification": why}


def slots(messages: list[dict[str, Any]]) -> tuple[str, str]:
    found = SLOTS.search(messages[0]["content"])
    assert found is not None
    return found.group(1), found.group(2)


def better_text(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
    """A judge without position bias: the slot whose text says 'good' wins."""
    a, b = slots(messages)
    if ("good" in a) == ("good" in b):
        return prefer("tie")
    return prefer("output" if "good" in a else "baseline")


DATA = pd.DataFrame(
    {
        "q": ["q0", "q1", "q2", "q3"],
        "answer": ["good 0", "bad 1", "good 2", "bad 3"],
        "ref": ["bad r0", "good r1", "good r2", "bad r3"],
    }
)


def judged_run(client: Any, data: pd.DataFrame = DATA, **options: Any) -> eb.Run:
    options.setdefault("baseline", "ref")
    options.setdefault("backoff", 0)
    j = eb.pairwise_judge("better", PROMPT, client=client, **options)
    return run(data, task=lambda answer: answer, scorers=[j])


def metas(r: eb.Run) -> list[dict[str, Any]]:
    return [json.loads(m) if isinstance(m, str) else {} for m in r.scores["metadata"]]


def test_a_judge_that_always_prefers_position_one_flips_every_case_and_scores_half() -> None:
    client = Scripted(prefer("output"))
    r = judged_run(client)
    assert list(r.scores["value"]) == [0.5] * 4
    assert [m["position_flip"] for m in metas(r)] == [True] * 4
    assert len(client.calls) == 8  # two orders per case
    stats = r.judge_stats().set_index("score").loc["better"]
    assert stats["position_flip_rate"] == 1.0
    assert (stats["calls"], stats["invalid"], stats["retried"], stats["retries"]) == (8, 0, 0, 0)


def test_the_swapped_order_trades_the_texts_slots() -> None:
    client = Scripted(prefer("output"))
    judged_run(client, data=DATA.iloc[:1])
    (first, _), (second, _) = client.calls
    assert slots(first) == ("good 0", "bad r0")
    assert slots(second) == ("bad r0", "good 0")
    tool = client.calls[0][1]["function"]
    assert tool["name"] == "submit_preference"
    assert tool["parameters"]["properties"]["preference"]["enum"] == ["output", "baseline", "tie"]


def test_a_judge_that_picks_the_better_text_gives_1_0_and_ties_and_no_flips() -> None:
    r = judged_run(better_text)
    assert list(r.scores["value"]) == [1.0, 0.0, 0.5, 0.5]
    assert [m["position_flip"] for m in metas(r)] == [False] * 4
    assert r.judge_stats()["position_flip_rate"].tolist() == [0.0]
    assert r.summary().iloc[0]["mean"] == pytest.approx(0.5)


def test_a_tie_against_a_preference_is_not_a_flip() -> None:
    r = judged_run(Scripted(prefer("baseline"), prefer("tie")), data=DATA.iloc[:1])
    (rec,) = metas(r)
    assert r.scores["value"].iloc[0] == 0.25  # (0 + 0.5) / 2
    assert rec["position_flip"] is False
    assert [v["preference"] for v in rec["votes"]] == ["baseline", "tie"]
    assert [v["order"] for v in rec["votes"]] == ["original", "swapped"]


# (original reply, swapped reply) -> (value, position_flip), worked out by hand: in the swapped
# order the baseline fills the {output} slot, so a swapped "output" is a win for the baseline.
HAND = {
    ("output", "output"): (0.5, True),
    ("output", "baseline"): (1.0, False),
    ("output", "tie"): (0.75, False),
    ("baseline", "output"): (0.0, False),
    ("baseline", "baseline"): (0.5, True),
    ("baseline", "tie"): (0.25, False),
    ("tie", "output"): (0.25, False),
    ("tie", "baseline"): (0.75, False),
    ("tie", "tie"): (0.5, False),
}


@pytest.mark.parametrize(("replies", "expected"), HAND.items())
def test_every_pair_of_replies_against_the_hand_table(
    replies: tuple[str, str], expected: tuple[float, bool]
) -> None:
    def by_order(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        original = slots(messages)[0] == "good 0"  # the case's output is in the {output} slot
        return prefer(replies[0] if original else replies[1])

    r = judged_run(by_order, data=DATA.iloc[:1])
    (meta,) = metas(r)
    assert (r.scores["value"].iloc[0], meta["position_flip"]) == expected


def test_orders_one_asks_once_and_has_no_flip_rate() -> None:
    client = Scripted(prefer("output"))
    r = judged_run(client, orders="one")
    assert list(r.scores["value"]) == [1.0] * 4
    assert len(client.calls) == 4
    assert all("position_flip" not in m for m in metas(r))
    assert math.isnan(r.judge_stats()["position_flip_rate"].iloc[0])


def test_votes_per_order_are_averaged_before_the_orders() -> None:
    # Original order: output, tie (0.75); swapped: "baseline" named twice = the output (1.0).
    client = Scripted(prefer("output"), prefer("tie"), prefer("baseline"))
    j = eb.pairwise_judge("better", PROMPT, client=client, baseline="ref", votes=2, backoff=0)
    r = run(DATA.iloc[:1], task=lambda answer: answer, scorers=[j], concurrency=1)
    (meta,) = metas(r)
    assert meta["order_values"] == [0.75, 1.0]
    assert r.scores["value"].iloc[0] == pytest.approx(0.875)
    assert meta["position_flip"] is False
    assert len(client.calls) == 4


@pytest.mark.parametrize(
    "reply",
    [
        {"preference": "A", "justification": "x"},
        {"preference": "Output"},
        {"preference": True},
        {"preference": 1},
        {"preference": None},
        {"justification": "no preference"},
        "I prefer the first one.",
        ["output"],
        b"\xff",
    ],
)
def test_anything_else_in_a_reply_is_invalid_judge_output(reply: Any) -> None:
    r = judged_run(Scripted(reply), data=DATA.iloc[:1])
    row = r.scores.iloc[0]
    assert (row["status"], row["reason"]) == ("error", "invalid_judge_output")
    assert math.isnan(row["value"])
    assert r.judge_stats()["invalid"].iloc[0] == 2  # both orders' replies


def test_one_invalid_order_makes_the_record_an_error_naming_it() -> None:
    r = judged_run(Scripted(prefer("output"), prefer("maybe")), data=DATA.iloc[:1])
    row = r.scores.iloc[0]
    assert (row["status"], row["reason"]) == ("error", "invalid_judge_output")
    assert "call 2 (swapped order)" in row["message"]
    assert "'maybe'" in row["message"]
    stats = r.judge_stats().iloc[0]
    assert (stats["calls"], stats["invalid"]) == (2, 1)
    assert math.isnan(stats["position_flip_rate"])  # an error record has no flip


def test_a_missing_value_in_the_baseline_column_is_no_baseline() -> None:
    data = DATA.assign(ref=["bad r0", None, math.nan, "bad r3"])
    client = Scripted(prefer("output"))
    r = judged_run(client, data=data)
    assert list(r.scores["status"]) == ["scored", "unscored", "unscored", "scored"]
    assert r.scores["reason"].tolist()[1:3] == ["no_baseline", "no_baseline"]
    assert len(client.calls) == 4  # no call for a case without a baseline


def test_pandas_na_in_a_string_baseline_column_is_no_baseline() -> None:
    data = DATA.assign(ref=pd.array(["bad r0", pd.NA, "good r2", "bad r3"], dtype="string"))
    r = judged_run(Scripted(prefer("tie")), data=data)
    assert list(r.scores["status"]) == ["scored", "unscored", "scored", "scored"]


def test_a_baseline_column_that_is_not_an_identifier_is_read_from_the_row() -> None:
    data = DATA.rename(columns={"ref": "the reference"})
    client = Scripted(prefer("output"))
    judged_run(client, data=data.iloc[:1], baseline="the reference")
    assert slots(client.calls[0][0]) == ("good 0", "bad r0")


def test_a_baseline_column_missing_from_the_data_fails_before_any_case() -> None:
    with pytest.raises(eb.ScorerSignatureError, match="nope"):
        judged_run(Scripted(prefer("tie")), baseline="nope")


def test_a_baseline_run_is_matched_by_case_id_and_a_missing_or_errored_case_is_no_baseline() -> (
    None
):
    def base_task(q: str) -> str:
        if q == "q1":
            raise RuntimeError("baseline broke")
        return f"base {q}"

    ids = pd.DataFrame({"id": ["a", "b", "c", "d"], "q": ["q0", "q1", "q2", "q3"]})
    base = run(ids.iloc[[2, 1, 0]], task=base_task)  # other order, no "d", "b" errored
    client = Scripted(prefer("output"))
    j = eb.pairwise_judge("better", "A: {output}\nB: {baseline}", client=client, baseline=base)
    r = run(ids, task=lambda q: f"new {q}", scorers=[j], concurrency=1)
    assert list(r.scores["status"]) == ["scored", "unscored", "scored", "unscored"]
    assert r.scores["reason"].iloc[[1, 3]].tolist() == ["no_baseline"] * 2
    contents = [c[0][0]["content"] for c in client.calls]
    assert contents[:2] == ["A: new q0\nB: base q0", "A: base q0\nB: new q0"]
    assert contents[2:] == ["A: new q2\nB: base q2", "A: base q2\nB: new q2"]


def test_a_baseline_run_with_epochs_is_matched_by_epoch_and_one_epoch_serves_all() -> None:
    data = pd.DataFrame({"q": ["x"]})
    base3 = run(data, task=lambda q, epoch: f"base e{epoch}", epochs=3)
    base1 = run(data, task=lambda q: "base once")
    for base, expected in ((base3, ["base e1", "base e2"]), (base1, ["base once"] * 2)):
        client = Scripted(prefer("tie"))
        j = eb.pairwise_judge(
            "b", "{output}|{baseline}", client=client, baseline=base, orders="one"
        )
        run(data, task=lambda q, epoch: f"new e{epoch}", scorers=[j], epochs=2, concurrency=1)
        got = sorted(c[0][0]["content"] for c in client.calls)
        assert got == [f"new e{k}|{b}" for k, b in zip((1, 2), expected, strict=True)]


def test_a_prompt_function_gets_output_and_baseline_swapped() -> None:
    seen: list[tuple[str, str, str]] = []

    def prompt(q: str, output: str, baseline: str) -> str:
        seen.append((q, output, baseline))
        return f"{output} vs {baseline}"

    j = eb.pairwise_judge("b", prompt, client=Scripted(prefer("tie")), baseline="ref")
    run(DATA.iloc[:1], task=lambda answer: answer, scorers=[j])
    assert seen == [("q0", "good 0", "bad r0"), ("q0", "bad r0", "good 0")]


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"prompt": "Only {output}"}, r"lacks \{baseline\}"),
        ({"prompt": lambda output: output}, "lacks 'baseline'"),
        ({"orders": "twice"}, "orders must be"),
        ({"baseline": 3}, "baseline must be a column name"),
        ({"votes": 0}, "votes must be"),
        ({"retries": -1}, "retries must be"),
        ({"client": "not callable"}, "client must be a callable"),
    ],
)
def test_configuration_errors(options: dict[str, Any], match: str) -> None:
    kwargs: dict[str, Any] = {"client": Scripted(prefer("tie")), "baseline": "ref"}
    kwargs.update(options)
    prompt = kwargs.pop("prompt", PROMPT)
    with pytest.raises(eb.ConfigurationError, match=match):
        eb.pairwise_judge("b", prompt, **kwargs)


def test_judge_stats_against_a_hand_count(tmp_path: Path) -> None:
    # plain judge: case 0 one timeout then a score (2 calls, 1 retried); case 1 invalid score;
    # cases 2, 3 fine. Pairwise: flips on cases 0 and 2 only (position one, then better text).
    plain = Scripted(TimeoutError("slow"), {"score": 50}, {"score": 500}, {"score": 10})
    quality = eb.judge("quality", "Rate {output}", client=plain, backoff=0)
    scripted = iter([prefer("output")] * 2 + [None] * 2 + [prefer("output")] * 2 + [None] * 2)

    def mixed(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
        return next(scripted) or better_text(messages, tool)

    better = eb.pairwise_judge("better", PROMPT, client=mixed, baseline="ref")
    exact = eb.scorer("exact")(lambda answer, ref: float(answer == ref))
    r = run(DATA, task=lambda answer: answer, scorers=[exact, quality, better], concurrency=1)
    stats = r.judge_stats()
    assert stats.columns.tolist() == [
        "score", "calls", "invalid", "retried", "position_flip_rate", "retries"
    ]  # fmt: skip
    assert stats.to_dict("records") == [
        {"score": "quality", "calls": 5, "invalid": 1, "retried": 1, "retries": 1,
         "position_flip_rate": pytest.approx(math.nan, nan_ok=True)},
        {"score": "better", "calls": 8, "invalid": 0, "retried": 0, "retries": 0,
         "position_flip_rate": 0.5},
    ]  # fmt: skip
    flips = [m.get("position_flip") for m in metas(r)[2::3]]
    assert flips == [True, False, True, False]


def test_a_cached_pairwise_judge_makes_no_calls_the_second_time(tmp_path: Path) -> None:
    # Output and baseline equal: both orders send the same messages, so only the occurrence
    # in the cache key keeps them apart.
    data = pd.DataFrame({"q": ["q0"], "answer": ["same"], "ref": ["same"]})
    client = Scripted(prefer("output"), prefer("baseline"))
    first = judged_run(client, data=data, cache=tmp_path / "cache")
    again = judged_run(Scripted(prefer("tie")), data=data, cache=tmp_path / "cache")
    assert len(client.calls) == 2
    assert metas(first)[0]["order_values"] == [1.0, 1.0]
    assert metas(again)[0]["order_values"] == [1.0, 1.0]
    assert again.judge_stats()["calls"].tolist() == [0]


def test_end_to_end_with_the_openai_sdk_against_the_local_server(server: Server) -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {
            "name": "submit_preference",
            "arguments": json.dumps({"justification": "first is better", "preference": "output"}),
        },
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    server.answer((200, completion(message, "tool_calls", (30, 7))))
    sdk = openai.OpenAI(base_url=server.url, api_key="test-key", max_retries=0, timeout=10)
    client = eb.openai_client(sdk, model="judge-1", temperature=0)
    j = eb.pairwise_judge("better", PROMPT, client=client, baseline="ref")
    r = run(DATA.iloc[:2], task=lambda answer: answer, scorers=[j])
    assert list(r.scores["value"]) == [0.5, 0.5]
    assert r.judge_stats()["position_flip_rate"].tolist() == [1.0]
    assert server.count() == 4
    body = server.requests[0]["body"]
    assert [t["function"]["name"] for t in body["tools"]] == ["submit_preference"]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "submit_preference"}}
    texts = sorted(slots(req["body"]["messages"])[0] for req in server.requests)
    assert texts == ["bad 1", "bad r0", "good 0", "good r1"]
    usage = r.usage()
    assert set(usage["source"]) == {"better"}
    assert usage["calls"].tolist() == [2, 2]
    assert usage["input_tokens"].tolist() == [60.0, 60.0]
    assert r.scores["rationale"].tolist() == ["first is better"] * 2


def test_judge_stats_of_a_stored_then_loaded_run_are_the_same(tmp_path: Path) -> None:
    client = Scripted(prefer("output"), prefer("tie"))
    j = eb.pairwise_judge("better", PROMPT, client=client, baseline="ref", backoff=0)
    r = eb.run(DATA, task=lambda answer: answer, scorers=[j], store=tmp_path, progress=False)
    loaded = eb.load_run(r.path)
    pd.testing.assert_frame_equal(loaded.judge_stats(), r.judge_stats())
    assert r.judge_stats()["calls"].tolist() == [8]


def test_a_pairwise_judge_survives_pickling_as_for_dask() -> None:
    import cloudpickle  # the way scorers travel to Dask workers

    j = eb.pairwise_judge("better", PROMPT, client=better_text, baseline="ref", max_concurrency=2)
    copy = cloudpickle.loads(cloudpickle.dumps(j))
    r = run(DATA, task=lambda answer: answer, scorers=[copy])
    assert list(r.scores["value"]) == [1.0, 0.0, 0.5, 0.5]
