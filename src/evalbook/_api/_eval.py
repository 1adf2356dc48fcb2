"""`eb.Eval`: one evaluation bundled for the CLI, the magics and re-runs."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._compare._gate import Check
from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from .._model._scorers import Scorer
from .._runner._options import RunOptions
from ._check import baseline_of, check, check_options
from ._entry import run_with
from ._run import Run

__all__ = ["Eval", "run_and_check"]


class Eval:
    """Data, task, scorers and run options, ready to run (the CLI runs every module-level Eval).

    `check=dict(min=0.8, against="baseline", max_drop=0.02)` stores the conditions of
    `eb.check` its run must meet (`against`: a run name or id in the Eval's store); the pytest
    plugin (`pytest --evalbook`, docs/ci.md) runs every Eval that has them as one test.
    They are checked here: an unknown condition raises `eb.ConfigurationError`.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> ev = eb.Eval(pd.DataFrame({"x": ["a"]}), task=lambda x: x,
        ...              scorers=[lambda output, x: float(output == x)], name="echo")
        >>> ev.run(store=None, progress=False).headline.text
        'lambda 100% · completed 100%'
    """

    def __init__(
        self,
        data: Any,
        task: Callable[..., Any] | None = None,
        *,
        scorers: Sequence[Scorer | Callable[..., Any]] = (),
        scores: Sequence[ScoreDefinition | str] = (),
        name: str | None = None,
        check: Mapping[str, Any] | None = None,
        **run_options: Any,
    ) -> None:
        self.data = data
        self.task = task
        self.scorers = list(scorers)
        self.scores = list(scores)
        self.name = name
        RunOptions.of(name=name, **run_options)  # an unknown or bad option fails here, early
        self.run_options = dict(run_options)
        self.check = None if check is None else check_options(check)

    def run(self, **overrides: Any) -> Run:
        """Run the evaluation; `overrides` replace run options (e.g. `store=None`)."""
        options = RunOptions.of(**{"name": self.name, **self.run_options, **overrides})
        return run_with(self.data, self.task, self.scorers, self.scores, options)

    def __repr__(self) -> str:
        return f"<Eval {self.name or '(unnamed)'}: {len(self.data)} cases>"


def run_and_check(
    ev: Eval, *, store: str | os.PathLike[str] | None = None, name: str | None = None
) -> tuple[Run, Check]:
    """Run `ev` and check its run against `ev.check` (what the pytest plugin does per item).

    The run goes into `store` when given, else into the Eval's own `store=` (default
    `runs`); `against` is looked up there (`runs` for an Eval kept in memory) before the run
    starts, so that a missing baseline fails before any case runs and a run named like its
    baseline is not compared with itself. `name` names the run when the Eval has no name.

    Raises:
        ConfigurationError: the Eval has no `check=`, its baseline is not found, or a
            configuration mistake of the run.
    """
    if ev.check is None:
        raise ConfigurationError(f"{ev!r} has no check=: give eb.Eval(..., check=dict(min=0.8))")
    options = dict(ev.check)
    against = options.pop("against", None)
    target = store if store is not None else ev.run_options.get("store", "runs")
    base = None if against is None else baseline_of(against, target or "runs")
    run = ev.run(store=target, progress=False, name=ev.name or name)
    return run, check(run, against=base, **options)
