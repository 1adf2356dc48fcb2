"""Early stopping on Dask (docs/spend-less.md): the same decision as the local run, and once
decided no further batch starts (the driver applies the rows, feeds the sequence in order)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import evalbook as eb
from _runner_helpers import dask_client

pytestmark = pytest.mark.slow  # a real Dask LocalCluster

pytest.importorskip("distributed")

N = 400
_rng = np.random.default_rng(8)
DATA = pd.DataFrame({"id": [f"c{i:03d}" for i in range(N)], "old": _rng.random(N) < 0.5})
DATA["new"] = DATA["old"] | (_rng.random(N) < 0.4)
OK = eb.define_score("ok", primary=True)


@eb.scorer(OK)
def old_score(old: bool) -> float:
    return float(old)


@eb.scorer(OK)
def new_score(new: bool) -> float:
    return float(new)


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    with dask_client(processes=False) as c:
        yield c


def test_decided_on_dask_as_locally(client: Any) -> None:
    base = eb.run(DATA, task=lambda id: id, scorers=[old_score], store=None, progress=False)
    options: dict[str, Any] = {
        "against": base,
        "stop_when": eb.decided(max_drop=0.02),
        "store": None,
        "progress": False,
        "concurrency": 4,
    }
    local = eb.run(DATA, task=lambda id: id, scorers=[new_score], **options).options["stopped"]
    run = eb.run(DATA, task=lambda id: id, scorers=[new_score], executor=client, **options)
    stopped = run.options["stopped"]
    assert stopped["decision"] == local["decision"] == "non_inferior"
    # the same point of the same order: the decision depends on the finished samples alone
    assert (stopped["at"], stopped["low"], stopped["high"]) == (
        local["at"],
        local["low"],
        local["high"],
    )
    assert stopped["ran"] < N / 2  # no batch started once decided (those in flight finished)
    assert stopped["ran"] == int(run.cases["outcome"].notna().sum())
