"""`RunOptions`: how a run runs, checked once before any case runs.

`eb.run`, `eb.arun`, `eb.Eval`, `run.rescore` and the Dask executor all take their options
through it, so each option has one default and one error message.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError
from .._model._origin import environment_types
from .._model._tally import check_prices
from ._stopping import check_stop

__all__ = ["RunOptions"]


@dataclass(frozen=True, slots=True)
class RunOptions:
    """The options of one run (see `eb.run` for what each one means).

    Example:
        >>> RunOptions(concurrency=4).recorded()
        {'concurrency': 4, 'timeout': None, 'attempts': 1, 'output_column': None}
        >>> RunOptions.of(retries=3)
        Traceback (most recent call last):
        ...
        evalbook._errors.ConfigurationError: unknown run option 'retries'; run options are: ...
    """

    name: str | None = None
    output_column: str | None = None
    concurrency: int = 8
    timeout: float | None = None
    scorer_timeout: float | None = None
    attempts: int = 1
    epochs: int = 1
    cluster: str | None = None
    store: str | os.PathLike[str] | None = "runs"
    resume: Any = None
    progress: bool = True
    executor: Any = None
    max_cost: float | None = None
    prices: Mapping[str, tuple[float, float]] | None = None
    against: Any = None
    stop_when: Any = None
    seed: int = 0
    environment_errors: Sequence[type[BaseException]] = ()

    def __post_init__(self) -> None:
        c, a, t = self.concurrency, self.attempts, self.timeout
        if isinstance(self.name, str) and not self.name.strip():
            # a blank name used to become "run" silently
            raise ConfigurationError(
                f"name= must not be blank, got {self.name!r}: pass a name such as "
                "name='qa-v2', or leave name= out to use the task's name"
            )
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ConfigurationError(f"concurrency must be an integer >= 1, got {c!r}")
        if isinstance(a, bool) or not isinstance(a, int) or a < 1:
            raise ConfigurationError(f"attempts must be an integer >= 1, got {a!r}")
        k = self.epochs
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ConfigurationError(
                f"epochs must be an integer >= 1 (how many times each case runs), got {k!r}"
            )
        if self.cluster is not None and (not isinstance(self.cluster, str) or not self.cluster):
            raise ConfigurationError(
                "cluster= takes the name of a column of the data whose cases belong together "
                f"(e.g. cluster='passage'), or None; got {self.cluster!r}"
            )
        if self.store is not None and not isinstance(self.store, str | os.PathLike):
            raise ConfigurationError(
                f"store= takes the folder that holds runs (a str or pathlib.Path, e.g. "
                f"store='runs'), or None to keep the run in memory; got {self.store!r} "
                f"({type(self.store).__name__})"
            )
        object.__setattr__(self, "prices", check_prices(self.prices))
        try:
            kinds = environment_types(self.environment_errors)
        except TypeError as exc:
            raise ConfigurationError(str(exc)) from None
        object.__setattr__(self, "environment_errors", kinds)
        m = self.max_cost
        if m is not None and (
            isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m < 0
        ):
            raise ConfigurationError(
                f"max_cost must be a number of US dollars >= 0 or None, got {m!r}; "
                "e.g. max_cost=5.0 stops starting samples once $5 is recorded"
            )
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigurationError(
                f"seed= must be an integer (the seed of the samples' order), got {self.seed!r}"
            )
        check_stop(self.stop_when, self.against, self.epochs)
        for label, value in (("timeout", t), ("scorer_timeout", self.scorer_timeout)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
            ):
                raise ConfigurationError(
                    f"{label} must be a number of seconds > 0 or None, got {value!r}"
                )

    @classmethod
    def of(cls, **options: Any) -> RunOptions:
        """Options from keyword arguments; an unknown name is a `ConfigurationError`."""
        known = [f.name for f in dataclasses.fields(cls)]
        unknown = [k for k in options if k not in known]
        if unknown:
            names = ", ".join(repr(k) for k in unknown)
            near = difflib.get_close_matches(unknown[0], known, n=1, cutoff=0.8)
            hint = f" (did you mean {near[0]}=?)" if near else ""
            raise ConfigurationError(
                f"unknown run option{'s' if len(unknown) > 1 else ''} {names}{hint}; run "
                "options are: " + ", ".join(known)
            )
        return cls(**options)

    def recorded(self) -> dict[str, Any]:
        """The options a stored run records (`run.options`); `scorer_timeout` only when set,
        `epochs` only when above 1, `cluster`, `max_cost` and `prices` only when set.

        Leaving unset options out keeps runs stored before they existed alike.
        """
        recorded: dict[str, Any] = {
            "concurrency": self.concurrency,
            "timeout": self.timeout,
            "attempts": self.attempts,
            "output_column": self.output_column,
        }
        if self.scorer_timeout is not None:
            recorded["scorer_timeout"] = self.scorer_timeout
        if self.epochs != 1:
            recorded["epochs"] = self.epochs
        if self.cluster is not None:  # the run's summary() clusters by it (docs/statistics.md)
            recorded["cluster"] = self.cluster
        if self.max_cost is not None:
            recorded["max_cost"] = self.max_cost
        if self.prices is not None:  # what the run's costs were computed with (docs/cost.md)
            recorded["prices"] = {m: list(p) for m, p in self.prices.items()}
        if self.stop_when is not None:  # early stopping (docs/spend-less.md)
            recorded["stop_when"] = self.stop_when.spec()
            recorded["seed"] = self.seed
            if self.against is not None:
                base = self.against
                recorded["against"] = {
                    "name": getattr(base, "name", None),
                    "id": getattr(base, "id", None),
                    "path": None if getattr(base, "path", None) is None else str(base.path),
                }
        return recorded
