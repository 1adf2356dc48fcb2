"""Exceptions raised by evalbook."""

from __future__ import annotations

__all__ = ["ConfigurationError", "EnvironmentFailure", "ScorerSignatureError", "SkipScore"]


class ConfigurationError(ValueError):
    """The evaluation is configured in a way that cannot run.

    Raised by `eb.run()` before any case runs: two primary scores, a `combine` naming an
    unknown score, a score bound twice, duplicate case ids, and so on.
    """


class ScorerSignatureError(ConfigurationError):
    """A scorer or task has a required parameter that no case can supply.

    The message names the function, the parameter and the names that are available.
    """


class SkipScore(Exception):
    """Raise inside a scorer to leave this (case, score) unscored with a reason.

    Example:
        >>> import evalbook as eb
        >>> @eb.scorer
        ... def has_answer(output):
        ...     if output is None:
        ...         raise eb.SkipScore("no_output")
        ...     return 1.0
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = str(reason)


class EnvironmentFailure(Exception):
    """Raise in a task (or a tool it calls) when the environment failed, not the model.

    A sample whose task raised it (also wrapped, as the `__cause__` or `__context__` of
    what the task raised) is errored with `origin="environment"`: a sandbox that did not
    start, a tool server that answered 503. `--retry-errors RUN --origin environment`
    runs such samples again.

    Example:
        >>> import evalbook as eb
        >>> def task(question):
        ...     raise eb.EnvironmentFailure("the tool server answered 503")
        >>> isinstance(eb.EnvironmentFailure("x"), Exception)
        True
    """
