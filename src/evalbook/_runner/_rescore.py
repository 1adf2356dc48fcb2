"""`run.rescore(...)`: score a run's stored outputs again, without calling the task."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition, reading_stored
from .._model._results import PENDING
from .._model._scorers import Scorer, as_scorers
from ._drive import drive
from ._engine import Kept, LocalExecutor
from ._options import RunOptions
from ._plan import check_epochs, make_plan
from ._prepare import prepare
from ._sync import run_sync

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["rescore"]


def _plain(d: ScoreDefinition) -> ScoreDefinition:
    """The definition without the component objects a combinator may carry."""
    with reading_stored():  # a stored run's definition, as it was written
        return ScoreDefinition.model_validate(d.model_dump(mode="json"))


async def arescore(
    source: RunData,
    scorers: Sequence[Scorer | Callable[..., Any]],
    scores: Sequence[ScoreDefinition | str],
    options: RunOptions,
) -> RunData:
    """The async form of `Run.rescore`; `options` gives name, concurrency, scorer_timeout
    and progress."""
    scorer_list = as_scorers(scorers)
    rescored = {d.name for s in scorer_list for d in s.definitions}
    given = {s.name for s in scores if isinstance(s, ScoreDefinition)}
    kept_defs = [_plain(d) for d in source.definitions if d.name not in rescored | given]
    column = "__evalbook_output__"
    while column in source.data.columns:
        column += "_"
    frame = source.data.copy(deep=False)
    # the column only binds `output` by name: each sample's own output comes from the source
    k = source.results.epochs
    outputs = np.empty(source.results.n_cases, dtype=object)
    outputs[:] = source.results.output[::k]
    frame[column] = pd.Series(outputs, index=frame.index, dtype=object)
    plan = make_plan(frame, None, scorer_list, [*kept_defs, *scores], column)
    if plan.case_ids != source.results.case_ids:
        raise ConfigurationError(
            "run.rescore(): the run's data does not give the run's case ids; it cannot be rescored"
        )
    src_index = {d.name: j for j, d in enumerate(source.definitions)}
    kept = {
        j: src_index[d.name]
        for j, d in enumerate(plan.definitions)
        if not d.derived and d.name not in rescored and d.name in src_index
    }
    run_name = options.name or f"{source.name}-rescored"
    recorded: dict[str, Any] = {"concurrency": options.concurrency, "rescored_from": source.id}
    if options.scorer_timeout is not None:  # recorded as eb.run records it: only when set
        recorded["scorer_timeout"] = options.scorer_timeout
    store = source.path.parent if source.path is not None else None
    if k > 1:
        recorded["epochs"] = k
    if source.options.get("cluster") is not None:  # the same cases: clustered as the source
        recorded["cluster"] = source.options["cluster"]
    options = dataclasses.replace(options, epochs=k)  # a rescore keeps the source's epochs
    check_epochs(plan.definitions, k)
    prepared = prepare(plan, source.data, run_name, recorded, store=store, epochs=k)
    todo = [p for p in range(source.results.n_samples) if source.results.outcome[p] != PENDING]
    return await drive(
        plan,
        prepared,
        todo,
        options,
        LocalExecutor(options.concurrency),
        source.data,
        recorded,
        kept=Kept(source.results, kept, frozenset(plan.definitions[j].name for j in kept)),
    )


def rescore(
    source: RunData,
    scorers: Sequence[Scorer | Callable[..., Any]] = (),
    scores: Sequence[ScoreDefinition | str] = (),
    *,
    name: str | None = None,
    concurrency: int = 8,
    scorer_timeout: float | None = None,
    progress: bool = True,
) -> RunData:
    """Run `arescore` from sync code, inside a running event loop too.

    `scorer_timeout` bounds each scorer and judge call as in `eb.run` (one `RunOptions`, so
    one check and one error message).
    """
    options = RunOptions(
        name=name,
        concurrency=concurrency,
        scorer_timeout=scorer_timeout,
        progress=progress,
        store=None,
    )
    return run_sync(arescore(source, scorers, scores, options))
