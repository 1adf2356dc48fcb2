"""eb.wrap_openai with the real `openai` SDK against the loopback server (tests/_openai_server.py).

Every figure is the server's own: the requests it received (and when), the tokens it reported.
Nothing leaves the machine.
"""

from __future__ import annotations

import itertools
import math
import pickle
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _openai_server import Server, scored, server, text_message

openai = pytest.importorskip("openai")

__all__ = ["server"]  # the fixture, imported from the shared server module

RecordProperty = Callable[[str, object], None]
DATA = pd.DataFrame({"q": ["one two", "three four five", "six", "seven eight"]})


def sdk(server: Server, *, asynchronous: bool = False, max_retries: int = 2) -> Any:
    cls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return cls(base_url=server.url, api_key="test-key", max_retries=max_retries, timeout=10)


def task_for(client: Any, asynchronous: bool, **params: Any) -> Callable[..., Any]:
    """A task asking the model once per case: sync (worker threads) or async (the loop)."""

    def request(q: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "user", "content": q}], **params}

    if asynchronous:

        async def ask_async(q: str) -> str:
            reply = await client.chat.completions.create(**request(q))
            return str(reply.choices[0].message.content)

        return ask_async

    def ask(q: str) -> str:
        reply = client.chat.completions.create(**request(q))
        return str(reply.choices[0].message.content)

    return ask


def run(task: Callable[..., Any], **options: Any) -> eb.Run:
    options.setdefault("store", None)
    return eb.run(DATA, task=task, progress=False, **options)


def totals(r: eb.Run) -> dict[str, float]:
    u = r.usage()
    return {c: float(u[c].sum()) for c in ("calls", "cached_calls", "input_tokens", "retries")}


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_second_identical_run_makes_no_requests(
    server: Server, tmp_path: Path, asynchronous: bool, record_property: RecordProperty
) -> None:
    client = eb.wrap_openai(sdk(server, asynchronous=asynchronous), cache=tmp_path / "cache")
    first = run(task_for(client, asynchronous))
    after_first = server.count()
    second = run(task_for(client, asynchronous))
    after_second = server.count()
    print(
        f"cache ({'async' if asynchronous else 'sync'}): {after_first} requests, then "
        f"{after_second - after_first} on the identical re-run"
    )
    record_property("requests_first_run", after_first)
    record_property("requests_second_run", after_second - after_first)
    assert after_first == len(DATA) and after_second == after_first
    assert list(second.cases["output"]) == list(first.cases["output"]) == list(DATA["q"])
    u = second.usage()
    assert list(u["cached_calls"]) == [1] * len(DATA) and list(u["calls"]) == [1] * len(DATA)
    assert (u["input_tokens"] == 0).all() and (u["cost"] == 0).all()
    assert set(first.usage()["source"]) == {"task"}


def test_epochs_are_independent_and_replayed(
    server: Server, tmp_path: Path, record_property: RecordProperty
) -> None:
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache")
    run(task_for(client, False), epochs=2)
    first = server.count()
    run(task_for(client, False), epochs=2)
    second = server.count() - first
    print(f"epochs=2: {first} requests for {len(DATA)} cases, then {second} on the re-run")
    record_property("epochs2_requests", first)
    assert (first, second) == (2 * len(DATA), 0)


def test_a_repeated_call_within_a_sample_is_asked_again(server: Server, tmp_path: Path) -> None:
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache")

    def twice(q: str) -> str:
        request = {"model": "m", "messages": [{"role": "user", "content": q}]}
        client.chat.completions.create(**request)
        client.chat.completions.create(**request)
        return q

    run(twice)
    assert server.count() == 2 * len(DATA)  # the occurrence is in the key
    run(twice)
    assert server.count() == 2 * len(DATA)


def test_a_changed_parameter_misses_and_transport_options_do_not(
    server: Server, tmp_path: Path
) -> None:
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache")
    run(task_for(client, False, temperature=0))
    assert server.count() == len(DATA)
    run(task_for(client, False, temperature=0.5))
    assert server.count() == 2 * len(DATA)
    run(task_for(client, False, temperature=0, timeout=5, extra_headers={"X-Trace": "1"}))
    assert server.count() == 2 * len(DATA)  # how a request is sent is not what it asks
    run(task_for(client, False, temperature=0, max_tokens=7))
    assert server.count() == 3 * len(DATA)


def test_outside_a_run_a_hit_is_the_sdk_type_and_nothing_is_recorded(
    server: Server, tmp_path: Path
) -> None:
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache")
    request = {"model": "m", "messages": [{"role": "user", "content": "hello there"}]}
    fresh = client.chat.completions.create(**request)
    again = client.chat.completions.create(**request)
    assert server.count() == 1
    assert isinstance(again, openai.types.chat.ChatCompletion)
    assert again.choices[0].message.content == fresh.choices[0].message.content
    assert again.usage is not None and again.usage.prompt_tokens == fresh.usage.prompt_tokens


def test_judge_usage_is_under_its_score_name_and_totals_equal_the_server_count(
    server: Server, record_property: RecordProperty
) -> None:
    server.answer(scored(80, usage=(40, 9)))
    task_client = eb.wrap_openai(sdk(server, asynchronous=True))
    judge_client = eb.openai_client(eb.wrap_openai(sdk(server)), model="judge-1")
    quality = eb.judge("quality", "Rate: {output}", client=judge_client)
    r = run(task_for(task_client, True), scorers=[quality])
    u = r.usage()
    by_source = u.groupby("source", observed=True)[["calls", "input_tokens", "output_tokens"]]
    sums = by_source.sum()
    assert set(sums.index) == {"task", "quality"}
    assert list(sums.loc["quality"]) == [len(DATA), 40 * len(DATA), 9 * len(DATA)]
    assert sums.loc["task", "calls"] == len(DATA)
    served = server.count()
    print(
        f"judge + task: {served} requests served, {int(u['calls'].sum())} calls recorded; "
        f"tokens {server.input_tokens}+{server.output_tokens} served, "
        f"{int(u['input_tokens'].sum())}+{int(u['output_tokens'].sum())} recorded"
    )
    record_property("served_requests", served)
    assert u["calls"].sum() == served == 2 * len(DATA)
    assert u["input_tokens"].sum() == server.input_tokens
    assert u["output_tokens"].sum() == server.output_tokens
    assert r.cases["input_tokens"].sum() == server.input_tokens


def test_an_unwrapped_client_records_under_the_judge_and_a_wrapped_one_only_once(
    server: Server,
) -> None:
    server.answer(scored(60, usage=(30, 4)))
    plain = eb.judge("plain", "{output}", client=eb.openai_client(sdk(server), model="judge-1"))
    wrapped = eb.judge(
        "wrapped", "{output}", client=eb.openai_client(eb.wrap_openai(sdk(server)), model="j")
    )
    r = run(lambda q: q, scorers=[plain, wrapped])
    sums = r.usage().groupby("source", observed=True)[["calls", "input_tokens"]].sum()
    assert list(sums.loc["plain"]) == [len(DATA), 30 * len(DATA)]
    assert list(sums.loc["wrapped"]) == [len(DATA), 30 * len(DATA)]
    assert server.count() == 2 * len(DATA)


def test_a_custom_scorer_calling_a_judge_records_under_the_judge(server: Server) -> None:
    server.answer(scored(50, usage=(11, 2)))
    tone = eb.judge(
        "tone", "{output}", client=eb.openai_client(eb.wrap_openai(sdk(server)), model="j")
    )

    @eb.scorer("tone", "length")
    async def check(output: str) -> dict[str, Any]:
        judged = await tone.fn(output=output)
        return {"tone": judged, "length": float(len(output))}

    r = run(lambda q: q, scorers=[check])
    sums = r.usage().groupby("source", observed=True)["input_tokens"].sum()
    assert dict(sums) == {"tone": 11 * len(DATA)}


@pytest.mark.slow
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_the_request_rate_stays_within_the_limit(
    server: Server, asynchronous: bool, record_property: RecordProperty
) -> None:
    rpm, n = 120.0, 24  # 2 a second: a burst of 2 against 24 requests (ideal: 23/22 x rpm)
    client = eb.wrap_openai(sdk(server, asynchronous=asynchronous), requests_per_minute=rpm)
    data = pd.DataFrame({"q": [f"case {i}" for i in range(n)]})
    eb.run(data, task=task_for(client, asynchronous), store=None, progress=False, concurrency=8)
    times = server.arrivals()
    rate = (len(times) - 1) / (times[-1] - times[0])
    kind = "async" if asynchronous else "sync"
    print(
        f"rate limit ({kind}): {len(times)} requests at {rate:.3f}/s against "
        f"{rpm / 60:.3f}/s (limit x 1.1 = {rpm / 60 * 1.1:.3f})"
    )
    record_property(f"rate_{kind}_per_s", round(rate, 4))
    assert len(times) == n
    assert rate <= rpm / 60 * 1.1
    assert rate >= rpm / 60 * 0.8  # the limiter does not hold calls back far below it


class FakeCompletions:
    def create(self, **request: Any) -> dict[str, Any]:
        return {"usage": None}


class FakeChat:
    completions = FakeCompletions()


class Fake:
    """A picklable stand-in for an SDK client (the real one holds locks)."""

    chat = FakeChat()
    max_retries = 0

    def with_options(self, **options: Any) -> Fake:
        return self


def test_copies_share_one_limiter() -> None:
    def ask(client: Any) -> None:
        client.chat.completions.create(model="m", messages=[])

    # 120 a minute: a burst of 2, then one every 0.5 s, for the client and all its copies
    wrapped = eb.wrap_openai(Fake(), requests_per_minute=120)
    copies = [pickle.loads(pickle.dumps(wrapped)), wrapped.with_options(timeout=3)]
    t0 = time.monotonic()
    for client in [wrapped, *copies] * 2:  # each of the three within a burst of its own
        ask(client)
    assert time.monotonic() - t0 >= 4 * 0.5 * 0.9  # one budget: 4 of the 6 waited their turn
    other = eb.wrap_openai(Fake(), requests_per_minute=120)  # another client: its own budget
    t0 = time.monotonic()
    ask(other)
    ask(other)
    assert time.monotonic() - t0 < 0.45  # its burst, at once (shared, it would wait 0.5 s)


def test_429_with_retry_after_is_waited_for_and_counted(
    server: Server, record_property: RecordProperty
) -> None:
    server.fail(1, 429, retry_after=1)
    client = eb.wrap_openai(sdk(server))
    r = run(task_for(client, False), concurrency=1)
    times = server.arrivals()
    waited = times[1] - times[0]
    print(f"429 Retry-After: 1 -> waited {waited:.2f} s, {len(times)} requests")
    record_property("retry_after_wait_s", round(waited, 3))
    assert waited >= 0.95
    assert len(times) == len(DATA) + 1
    assert totals(r)["retries"] == 1
    assert int(r.usage()["retries"].iloc[0]) == 1
    assert list(r.cases["output"]) == list(DATA["q"])


def test_errors_are_never_cached_and_the_last_one_is_raised_unchanged(
    server: Server, tmp_path: Path
) -> None:
    server.fail(2, 500)
    server.answer(text_message("fine"))
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache", max_retries=1)
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(openai.InternalServerError, match="scripted 500"):
        client.chat.completions.create(**request)
    assert server.count() == 2  # one try and one retry, no SDK retry below ours
    reply = client.chat.completions.create(**request)  # asked again: the 500 was not kept
    assert reply.choices[0].message.content == "fine" and server.count() == 3
    assert client.chat.completions.create(**request).choices[0].message.content == "fine"
    assert server.count() == 3  # the reply was


def test_a_failing_call_in_a_run_counts_and_the_case_errors(server: Server) -> None:
    server.fail(1, 400)
    client = eb.wrap_openai(sdk(server))
    r = run(task_for(client, False), concurrency=1)
    outcomes = list(r.cases["outcome"])
    assert outcomes[0] == "errored" and r.cases["error_type"].iloc[0] == "BadRequestError"
    assert outcomes[1:] == ["passed"] * (len(DATA) - 1)
    u = r.usage()
    assert int(u["calls"].sum()) == server.count() == len(DATA)
    assert math.isnan(float(u["input_tokens"].iloc[0]))  # an error reply's usage is unknown


def test_negative_server_tokens_make_that_call_unknown(server: Server) -> None:
    server.answer(text_message("x", usage=(-5, 3)))
    client = eb.wrap_openai(sdk(server), tokens_per_minute=60_000)
    r = run(task_for(client, False))
    u = r.usage()
    assert list(u["calls"]) == [1] * len(DATA)
    assert u["input_tokens"].isna().all() and u["invalid"].notna().all()


def test_responses_create_is_cached_and_recorded(server: Server, tmp_path: Path) -> None:
    client = eb.wrap_openai(sdk(server), cache=tmp_path / "cache")

    def ask(q: str) -> str:
        return str(client.responses.create(model="m", input=q).output_text)

    first = run(ask)
    assert server.count() == len(DATA) and list(first.cases["output"]) == list(DATA["q"])
    assert {r["path"] for r in server.requests} == {"/v1/responses"}
    assert first.usage()["input_tokens"].sum() == server.input_tokens
    second = run(ask)
    assert server.count() == len(DATA) and list(second.cases["output"]) == list(DATA["q"])
    assert (second.usage()["cached_calls"] == 1).all()


def test_everything_else_is_the_clients_own(server: Server) -> None:
    raw = sdk(server)
    client = eb.wrap_openai(raw)
    assert client.base_url == raw.base_url and client.api_key == "test-key"
    assert client.chat.completions.with_raw_response is not None
    assert client.with_options(max_retries=5)._evalbook_max_retries == 5
    assert client._evalbook_max_retries == 2  # the client's own default


@pytest.mark.parametrize(
    ("option", "value"),
    list(
        itertools.product(
            ["requests_per_minute", "tokens_per_minute"], [0, -1, math.nan, math.inf, True, "5"]
        )
    ),
)
def test_bad_rates_are_configuration_errors(option: str, value: object) -> None:
    with pytest.raises(eb.ConfigurationError, match=f"{option} must be a finite number > 0"):
        eb.wrap_openai(
            openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k"), **{option: value}
        )


def test_bad_clients_and_options_are_configuration_errors() -> None:
    with pytest.raises(eb.ConfigurationError, match=r"openai\.OpenAI or openai\.AsyncOpenAI"):
        eb.wrap_openai(object())
    good = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    with pytest.raises(eb.ConfigurationError, match="wrapped already"):
        eb.wrap_openai(eb.wrap_openai(good))
    with pytest.raises(eb.ConfigurationError, match="max_retries"):
        eb.wrap_openai(good, max_retries=-1)
    with pytest.raises(eb.ConfigurationError, match="cache"):
        eb.wrap_openai(good, cache=3)  # type: ignore[arg-type]


def stream_task(client: Any, asynchronous: bool, include_usage: bool) -> Callable[..., Any]:
    """A task reading a streamed reply chunk by chunk."""
    options: dict[str, Any] = {"stream": True}
    if include_usage:
        options["stream_options"] = {"include_usage": True}

    def request(q: str) -> dict[str, Any]:
        return {"model": "m", "messages": [{"role": "user", "content": q}], **options}

    def text(chunk: Any) -> str:
        return "".join(c.delta.content or "" for c in chunk.choices)

    if asynchronous:

        async def read_async(q: str) -> str:
            stream = await client.chat.completions.create(**request(q))
            return "".join([text(chunk) async for chunk in stream])

        return read_async

    def read(q: str) -> str:
        return "".join(text(chunk) for chunk in client.chat.completions.create(**request(q)))

    return read


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("include_usage", [True, False], ids=["usage", "no-usage"])
def test_streams_pass_through_uncached_with_the_usage_the_sdk_gives(
    server: Server, tmp_path: Path, asynchronous: bool, include_usage: bool
) -> None:
    client = eb.wrap_openai(sdk(server, asynchronous=asynchronous), cache=tmp_path / "cache")
    task = stream_task(client, asynchronous, include_usage)
    first = run(task)
    assert list(first.cases["output"]) == list(DATA["q"])
    run(task)
    assert server.count() == 2 * len(DATA)  # a stream is never answered from the cache
    u = first.usage()
    assert list(u["calls"]) == [1] * len(DATA) and int(u["cached_calls"].sum()) == 0
    if include_usage:
        assert u["input_tokens"].sum() == server.input_tokens / 2 > 0
    else:
        assert u["input_tokens"].isna().all() and server.input_tokens == 0


def test_an_async_client_serves_one_run_after_another(server: Server) -> None:
    # Each eb.run() has its own event loop; the server keeps connections alive, and a
    # connection from the first run's (closed) loop must not be reused by the second.
    client = eb.wrap_openai(sdk(server, asynchronous=True))
    for _ in range(2):
        r = run(task_for(client, True))
        assert list(r.cases["outcome"]) == ["passed"] * len(DATA)
    assert server.count() == 2 * len(DATA)


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_wrapped_sdk_client_travels_by_pickle(server: Server, asynchronous: bool) -> None:
    raw = openai.OpenAI if not asynchronous else openai.AsyncOpenAI
    sdk_client = raw(
        base_url=server.url,
        api_key="test-key",
        max_retries=3,
        timeout=9,
        default_headers={"X-Team": "evals"},
    )
    wrapped = eb.wrap_openai(sdk_client, requests_per_minute=600)
    copy = pickle.loads(pickle.dumps(wrapped))  # the SDK client itself cannot be pickled
    assert copy._evalbook_id == wrapped._evalbook_id
    assert copy._evalbook_limiter() is wrapped._evalbook_limiter()
    assert (copy.api_key, str(copy.base_url), copy.max_retries) == ("test-key", server.url + "/", 3)
    assert copy._evalbook_max_retries == 3 and copy.timeout == 9
    assert copy.default_headers["X-Team"] == "evals"
    r = run(task_for(copy, asynchronous))
    assert list(r.cases["output"]) == list(DATA["q"])
    assert {req["path"] for req in server.requests} == {"/v1/chat/completions"}
    assert server.count() == len(DATA)


def test_a_compatible_client_gets_its_own_replies_back_and_its_usage_read(tmp_path: Path) -> None:
    asked: list[dict[str, Any]] = []

    class Completions:
        def create(self, **request: Any) -> dict[str, Any]:
            asked.append(request)
            return {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 1}}

    class Chat:
        completions = Completions()

    class Client:
        chat = Chat()
        max_retries = 0

        def with_options(self, **options: Any) -> Client:
            return self

    client = eb.wrap_openai(Client(), cache=tmp_path / "cache")

    def twice(q: str) -> str:
        fresh = client.chat.completions.create(model="m", messages=[{"content": q}])
        assert type(fresh) is dict
        return q

    first, again = run(twice), run(twice)
    assert len(asked) == len(DATA)  # the second run was answered from the cache
    assert list(first.usage()["input_tokens"]) == [3] * len(DATA)  # a dict's usage is read
    assert list(again.usage()["cached_calls"]) == [1] * len(DATA)


def test_a_cache_hit_answers_with_the_type_of_a_miss_for_an_sdk_subclass(
    server: Server, tmp_path: Path
) -> None:
    class MyClient(openai.OpenAI):  # type: ignore[misc]  # defined outside the openai package
        pass

    client = eb.wrap_openai(
        MyClient(base_url=server.url, api_key="test-key", timeout=10), cache=tmp_path / "c"
    )
    request = {"model": "m", "messages": [{"role": "user", "content": "one two"}]}
    miss = client.chat.completions.create(**request)
    hit = client.chat.completions.create(**request)
    assert server.count() == 1  # the second answer came from the cache
    assert type(hit) is type(miss)
    assert hit.choices[0].message.content == miss.choices[0].message.content
