"""Shared helpers of the runner tests: a run in memory, a tiny case set, a real Dask cluster."""

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
