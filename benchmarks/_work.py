"""The reference work shared by evalbook and the bare-asyncio baseline."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pandas as pd


def make_data(n: int) -> pd.DataFrame:
    """n cases: a question and its expected answer (half of them match the echo)."""
    questions = [f"what is item {i} of the list" for i in range(n)]
    expected = [q if i % 2 == 0 else f"item {i}" for i, q in enumerate(questions)]
    return pd.DataFrame({"question": questions, "expected": expected})


async def echo(question: str) -> str:
    return question


def echo_sync(question: str) -> str:
    """The echo task written as a sync function (evalbook runs it in a worker thread)."""
    return question


async def echo_to_thread(question: str) -> str:
    """The bare baseline for a sync task: the correct way to run blocking code in asyncio."""
    return await asyncio.to_thread(echo_sync, question)


def exact(output: str, expected: str) -> float:
    return 1.0 if output == expected else 0.0


def includes(output: str, expected: str) -> float:
    return 1.0 if expected in output else 0.0


def jaccard(output: str, expected: str) -> float:
    a, b = set(output.split()), set(expected.split())
    return len(a & b) / len(a | b) if a | b else 1.0


SCORERS = (exact, includes, jaccard)


async def bare(df: pd.DataFrame, concurrency: int, task: Any = echo) -> dict[str, float]:
    """The same work with nothing but asyncio.gather + Semaphore: long table and means."""
    sem = asyncio.Semaphore(concurrency)
    questions = df["question"].tolist()
    expected = df["expected"].tolist()
    case_ids: list[int] = []
    names: list[str] = []
    values: list[float] = []

    async def one(i: int) -> None:
        async with sem:
            output = await task(questions[i])
            for fn in SCORERS:
                case_ids.append(i)
                names.append(fn.__name__)
                values.append(fn(output, expected[i]))

    await asyncio.gather(*(one(i) for i in range(len(questions))))
    long = pd.DataFrame({"case_id": case_ids, "score": names, "value": values})
    means: dict[str, float] = long.groupby("score")["value"].mean().to_dict()
    return means


def evalbook_run(df: pd.DataFrame, concurrency: int, task: Any = echo) -> dict[str, float]:
    """The same work through eb.run: long table and per-score means."""
    import evalbook as eb

    run = eb.run(
        df, task=task, scorers=list(SCORERS), concurrency=concurrency, store=None, progress=False
    )
    _ = run.scores
    summary = run.summary()
    return dict(zip(summary["score"].astype(str), summary["mean"], strict=True))


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn(*args)
    return time.perf_counter() - t0, out
