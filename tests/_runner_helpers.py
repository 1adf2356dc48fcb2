"""Shared helpers of the runner tests: a run in memory, a tiny case set, a real Dask cluster,
a model client that reports usage."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import pandas as pd

import evalbook as eb

DF = pd.DataFrame({"question": ["a", "b", "c"], "expected": ["A", "B", "x"]})


def upper(question: str) -> str:
    return question.upper()


@eb.scorer
def exact(output: str, expected: str) -> float:
    return 1.0 if output == expected else 0.0


def run(*args: Any, **kwargs: Any) -> eb.Run:
    kwargs.setdefault("store", None)
    kwargs.setdefault("progress", False)
    return eb.run(*args, **kwargs)


@contextlib.contextmanager
def dask_client(
    workers: int = 2, *, processes: bool = True, settings: Mapping[str, Any] | None = None
) -> Iterator[Any]:
    """A Client of a real Dask `LocalCluster` (2 threads a worker, no dashboard)."""
    import dask  # the dask extra: only the Dask tests need it
    import distributed

    with (
        dask.config.set(dict(settings or {})),
        distributed.LocalCluster(
            n_workers=workers, threads_per_worker=2, processes=processes, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


class _Completions:
    def create(self, **request: Any) -> dict[str, Any]:
        tokens = int(request["messages"][0]["content"])
        usage = {"prompt_tokens": tokens, "completion_tokens": 1}
        return {"model": request["model"], "choices": [], "usage": usage}


class _Chat:
    completions = _Completions()


class _FakeSDK:
    """Stands in for `openai.OpenAI(...)` (no network): its reply reports usage."""

    chat = _Chat()
    max_retries = 0

    def with_options(self, **options: Any) -> _FakeSDK:
        return self


def metered_client() -> Any:
    """A client made by `eb.wrap_openai`: each call records into the sample that makes it,
    under the current source (the task, or the score being computed; docs/cost.md)."""
    return eb.wrap_openai(_FakeSDK())


def call_model(client: Any, tokens: int, model: str = "m") -> None:
    """One call whose reply reports `tokens` prompt tokens and 1 completion token."""
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": str(tokens)}])


def stepping(question: str, ctx: Any) -> str:
    """A task with a transcript of three steps (one tool call), for runs on Dask."""
    ctx.step(role="user", content=question)
    ctx.step(
        role="assistant", tool_calls=[{"id": "t", "function": {"name": "f", "arguments": "{}"}}]
    )
    ctx.step(role="tool", tool_call_id="t", content=question.upper())
    return question.upper()
