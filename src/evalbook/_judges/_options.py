"""What every judge kind takes alike, checked in one place: `JudgeOptions`.

`eb.judge` and `eb.pairwise_judge` keep their own keyword arguments (their signatures are
public); both build one `JudgeOptions` from the ones they share, and the judge's `Caller`
(`_judge.py`) reads its client calls' options from it.
"""

from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass

from .._errors import ConfigurationError
from .._model._definitions import ScoreDefinition
from ._cache import ResponseCache
from ._clients import JudgeClient

__all__ = ["JudgeOptions", "check_votes", "finite_number", "whole_number"]


def finite_number(x: object) -> bool:
    """True for an int or float (not a bool) that is finite."""
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def whole_number(x: object, low: int, high: float = math.inf) -> bool:
    """True for an int (not a bool) from `low` to `high`."""
    return isinstance(x, int) and not isinstance(x, bool) and low <= x <= high


def check_votes(votes: object) -> int:
    """`votes`, checked: an integer >= 1."""
    if not whole_number(votes, 1):
        raise ConfigurationError(f"votes must be an integer >= 1, got {votes!r}")
    return votes  # type: ignore[return-value]  # whole_number checked it


def _check_calls(
    client: object,
    retries: object,
    backoff: object,
    max_backoff: object,
    timeout: object,
    max_concurrency: object,
) -> None:
    if not whole_number(retries, 0):
        raise ConfigurationError(f"retries must be an integer >= 0, got {retries!r}")
    if not finite_number(backoff) or backoff < 0:  # type: ignore[operator]
        raise ConfigurationError(f"backoff must be a number of seconds >= 0, got {backoff!r}")
    if timeout is not None and (not finite_number(timeout) or not timeout > 0):  # type: ignore[operator]
        raise ConfigurationError(
            f"timeout must be a number of seconds > 0 or None, got {timeout!r}"
        )
    if max_concurrency is not None and not whole_number(max_concurrency, 1):
        raise ConfigurationError(
            f"max_concurrency must be None or an integer >= 1, got {max_concurrency!r}"
        )
    if not callable(client):
        raise ConfigurationError(
            f"client must be a callable (messages, tool) -> reply, not {client!r}; "
            "wrap an OpenAI-compatible SDK client with eb.openai_client(client, model=...)"
        )
    if not finite_number(max_backoff) or max_backoff < 0:  # type: ignore[operator]
        raise ConfigurationError(
            f"max_backoff must be a number of seconds >= 0, got {max_backoff!r}"
        )


def _model_of(client: object, model: str | None) -> str | None:
    """The model name a judge reports: `model=`, else the client's `model` attribute."""
    if model is None:
        found = getattr(client, "model", None)
        model = found if isinstance(found, str) else None
    return model


@dataclass(frozen=True, eq=False)
class JudgeOptions:
    """The options `eb.judge` and `eb.pairwise_judge` share, checked: build it with `of`.

    `votes` is calls per case (a pairwise judge: per order); `model` the model name kept in
    metadata and cache keys (`model=`, else the client's `model`, else the definition's
    grader's: `for_definition`).
    """

    client: JudgeClient
    votes: int
    model: str | None
    retries: int
    backoff: float
    max_backoff: float
    timeout: float | None
    cache: ResponseCache | None
    max_concurrency: int | None

    @classmethod
    def of(
        cls,
        client: JudgeClient,
        votes: int,
        model: str | None,
        retries: int,
        backoff: float,
        max_backoff: float,
        timeout: float | None,
        cache: str | os.PathLike[str] | None,
        max_concurrency: int | None,
    ) -> JudgeOptions:
        """The options, each checked (a ConfigurationError names the first one wrong).

        Positional, in the order of `eb.judge`'s and `eb.pairwise_judge`'s keywords, so
        that each passes its own arguments along in one line.
        """
        check_votes(votes)
        _check_calls(client, retries, backoff, max_backoff, timeout, max_concurrency)
        return cls(
            client=client,
            votes=votes,
            model=_model_of(client, model),
            retries=retries,
            backoff=float(backoff),
            max_backoff=float(max_backoff),
            timeout=timeout,
            cache=ResponseCache(cache, kind="judge_reply") if cache is not None else None,
            max_concurrency=max_concurrency,
        )

    def for_definition(self, definition: ScoreDefinition) -> JudgeOptions:
        """These options for the definition judged: its grader names the model if none did."""
        if self.model is None and definition.grader is not None:
            return dataclasses.replace(self, model=definition.grader.model)
        return self
