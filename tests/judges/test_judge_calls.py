"""One judge call: reply parsing, transient errors, retries, timeouts, backoff, the reply cache."""

from __future__ import annotations

import asyncio
import json
import random
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _judge_helpers import Scripted, meta, one, run, score

# the judge's reply parsing, retry rules and cache keys, case by case
from evalbook._judges._cache import ResponseCache
from evalbook._judges._replies import Vote, backoff_delay, is_transient, judge_request, parse_reply


def test_parse_reply_keeps_int_raw_scores_as_written() -> None:
    vote = parse_reply({"score": 7, "justification": 3}, 0, 10)
    assert (vote.raw, vote.shown, vote.justification, vote.valid) == (7.0, 7, "3", True)
    assert vote.to_json() == {"raw": 7, "justification": "3"}


def test_invalid_vote_json_names_the_code() -> None:
    vote = parse_reply("{", 0, 10)
    assert not vote.valid
    assert vote.to_json() == {"error": "invalid_judge_output", "message": vote.message}
    assert "'{'" in (vote.message or "")


def test_vote_json_marks_cached_and_retried_votes() -> None:
    vote = Vote(raw=1.0, shown=1, cached=True, tries=2)
    assert vote.to_json() == {"raw": 1, "justification": None, "cached": True, "tries": 2}


def test_fence_must_wrap_the_whole_reply() -> None:
    assert parse_reply('```JSON\n{"score": 3}\n```', 0, 10).raw == 3.0
    assert parse_reply('```{"score": 3}```', 0, 10).raw == 3.0
    assert not parse_reply('```json\n{"score": 3}\n``` and more', 0, 10).valid


class _Response:
    def __init__(self, status_code: int, headers: dict[str, str] | None = None) -> None:
        self.status_code = status_code
        self.headers = headers or {}


class _SdkError(Exception):
    def __init__(self, response: _Response) -> None:
        super().__init__("sdk error")
        self.response = response


class APITimeoutError(Exception):
    """Named like the OpenAI SDK's timeout: recognised by name, no import needed."""


class ReadTimeout(APITimeoutError):
    pass


@pytest.mark.parametrize(
    ("exc", "transient"),
    [
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (_SdkError(_Response(429)), True),
        (_SdkError(_Response(500)), True),
        (_SdkError(_Response(599)), True),
        (_SdkError(_Response(408)), True),
        (_SdkError(_Response(400)), False),
        (_SdkError(_Response(401)), False),
        (_SdkError(_Response(404)), False),
        (APITimeoutError(), True),
        (ReadTimeout(), True),
        (ValueError("x"), False),
        (KeyError("x"), False),
    ],
)
def test_is_transient(exc: BaseException, transient: bool) -> None:
    assert is_transient(exc) is transient


def test_backoff_grows_exponentially_up_to_the_cap() -> None:
    rng = random.Random(1)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 8.0), (6, 10.0), (20, 10.0)]:
        for _ in range(50):
            d = backoff_delay(retry, 1.0, 10.0, rng)
            assert ceiling / 2 <= d <= ceiling


def test_backoff_has_jitter() -> None:
    rng = random.Random(2)
    assert len({backoff_delay(3, 1.0, 30.0, rng) for _ in range(20)}) > 1


def test_backoff_honours_retry_after_within_the_cap() -> None:
    rng = random.Random(3)
    hint = _SdkError(_Response(429, {"retry-after": "7"}))
    assert backoff_delay(0, 1.0, 30.0, rng, hint) == 7.0
    assert backoff_delay(0, 1.0, 5.0, rng, hint) == 5.0
    junk = _SdkError(_Response(429, {"retry-after": "soon"}))
    assert backoff_delay(0, 1.0, 30.0, rng, junk) <= 1.0
    assert backoff_delay(0, 0.0, 30.0, rng) == 0.0


def _key(cache: ResponseCache, vote: int = 0, **changes: Any) -> str | None:
    parts: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tool": {"type": "function"},
        "params": {"temperature": 0},
    }
    parts.update(changes)
    return cache.key(judge_request(**parts), epoch=1, occurrence=vote)


def test_cache_key_covers_every_part_of_the_request(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path)
    base = _key(cache)
    assert base is not None and base == _key(cache)
    others = [
        _key(cache, model="m2"),
        _key(cache, messages=[{"role": "user", "content": "hi!"}]),
        _key(cache, tool={"type": "function", "x": 1}),
        _key(cache, params={"temperature": 1}),
        _key(cache, vote=1),
    ]
    assert len({base, *others}) == 6
    assert _key(cache, messages=[{"role": "user", "content": object()}]) is None


def test_cache_round_trip_and_misses(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c")
    assert cache.get("ab" * 32) == (False, None)
    cache.put("ab" * 32, {"score": 5})
    cache.put("cd" * 32, '{"score": 6}')
    cache.put("ef" * 32, {"score": object()})  # JSON cannot hold it: not cached
    assert cache.get("ab" * 32) == (True, {"score": 5})
    assert cache.get("cd" * 32) == (True, '{"score": 6}')
    assert cache.get("ef" * 32) == (False, None)
    path = tmp_path / "c" / "ab" / f"{'ab' * 32}.json"
    path.write_text(json.dumps({"schema_version": 999, "value": 1}))
    assert cache.get("ab" * 32) == (False, None)
    files = {p.name for p in (tmp_path / "c").rglob("*") if p.is_file()}
    # no temporary file left behind; the marker says the folder is a cache
    assert files == {f"{k * 32}.json" for k in ("ab", "cd")} | {"evalbook-cache.json"}


# -- retries and timeouts -------------------------------------------------------------------


class StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"HTTP {status_code}")
        self.status_code = status_code


@pytest.mark.parametrize(
    "transient",
    [TimeoutError("slow"), ConnectionError("reset"), StatusError(429), StatusError(503)],
)
def test_transient_errors_are_retried(transient: Exception) -> None:
    client = Scripted(transient, transient, score(60))
    rec = one(client, retries=3)
    assert (rec.status, rec.value) == ("scored", 0.6)
    assert len(client.calls) == 3
    assert meta(rec)["votes"][0]["tries"] == 3


def test_retries_run_out_into_judge_raised() -> None:
    client = Scripted(StatusError(500))
    rec = one(client, retries=2)
    assert (rec.status, rec.reason) == ("error", "judge_raised")
    assert rec.message == "StatusError: HTTP 500 (after 3 tries)"
    assert len(client.calls) == 3


def test_client_errors_4xx_are_not_retried() -> None:
    client = Scripted(StatusError(400), score(10))
    assert one(client, retries=3).reason == "judge_raised"
    assert len(client.calls) == 1


def test_backoff_waits_between_tries() -> None:
    client = Scripted(TimeoutError(), score(60))
    t0 = time.perf_counter()
    rec = one(client, retries=1, backoff=0.05)
    assert rec.status == "scored"
    assert time.perf_counter() - t0 >= 0.025  # at least half the first ceiling


def test_timeout_per_call_is_transient() -> None:
    calls = 0

    async def client(messages: Any, tool: Any) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # never answers
        # The retry answers at once: it ends in the first step of its call, which the event
        # loop runs before the deadline's timer however late that fires, so the short timeout
        # cannot cut it on a loaded machine.
        return score(70)

    rec = one(client, timeout=0.05, retries=1)
    assert (rec.status, rec.value, calls) == ("scored", 0.7, 2)
    rec = one(lambda m, t: asyncio.Event().wait(), timeout=0.05, retries=0)
    assert (rec.reason, rec.message) == (
        "judge_raised",
        "TimeoutError: no reply within timeout=0.05s",
    )


# -- cache ------------------------------------------------------------------------------------


def test_cache_replays_replies_without_calling_again(tmp_path: Path) -> None:
    df = pd.DataFrame({"q": ["a", "b"]})
    first = Scripted(score(90), score(60), score(30), score(950), model="m1")
    j1 = eb.judge("q", "{q} {output}", client=first, votes=2, quorum=1, cache=tmp_path)
    r1 = run(df, task=lambda q: q, scorers=[j1], concurrency=1)
    assert len(first.calls) == 4
    assert len(list(tmp_path.glob("*/*.json"))) == 4  # one file per (case, vote)

    broken = Scripted(RuntimeError("must not be called"), model="m1")
    j2 = eb.judge("q", "{q} {output}", client=broken, votes=2, quorum=1, cache=tmp_path)
    r2 = run(df, task=lambda q: q, scorers=[j2], concurrency=1)
    assert broken.calls == []
    assert list(r2.scores["value"]) == list(r1.scores["value"])
    assert [json.loads(m)["cached"] for m in r2.scores["metadata"]] == [2, 2]

    other_model = Scripted(score(10), model="m2")
    j3 = eb.judge("q", "{q} {output}", client=other_model, votes=2, quorum=1, cache=tmp_path)
    run(df, task=lambda q: q, scorers=[j3])
    assert len(other_model.calls) == 4


def test_cache_ignores_unreadable_files_and_never_caches_exceptions(tmp_path: Path) -> None:
    client = Scripted(TimeoutError(), score(40))
    assert one(client, retries=0, cache=tmp_path).reason == "judge_raised"
    assert list(tmp_path.rglob("*.json")) == []
    assert one(client, cache=tmp_path).value == 0.4
    (path,) = tmp_path.glob("*/*.json")
    path.write_text("{not json")
    again = Scripted(score(50))
    assert one(again, cache=tmp_path).value == 0.5
    assert len(again.calls) == 1
