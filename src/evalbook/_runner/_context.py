"""The case context handed to tasks as `ctx`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import ConfigurationError
from .._model._contract import UNSCORED, Rec, Score, record_of, safe_repr
from .._model._definitions import Grader, ScoreDefinition
from .._model._tally import TASK
from .._model._transcript import Message, message_of
from .._util._text import safe_str
from ._meter import Meter
from ._steps import StepLog

__all__ = ["CaseContext", "CaseFailed"]


class CaseFailed(AssertionError):
    """Raised by `ctx.fail(reason)`; the case's outcome is `failed`."""


class CaseContext:
    """What a task can do besides returning its output.

    Example:
        >>> def task(question, ctx):
        ...     answer = question.upper()
        ...     ctx.record_score("shouted", 1.0, rationale="all caps")
        ...     if not answer:
        ...         ctx.fail("empty answer")
        ...     return answer
    """

    __slots__ = ("_index", "_meter", "_steps", "attempt", "case_id", "epoch", "recorded")

    def __init__(
        self,
        case_id: str,
        attempt: int,
        index: Mapping[str, int],
        epoch: int = 1,
        meter: Meter | None = None,
        steps: StepLog | None = None,
    ) -> None:
        self.case_id = case_id
        self.attempt = attempt
        self.epoch = epoch  # 1..epochs: which run of the case this is
        self._index = index
        self._meter = meter
        self._steps = steps
        self.recorded: dict[int, Rec] = {}

    def _position(self, definition_or_name: ScoreDefinition | str) -> int:
        d = definition_or_name
        name = d.name if isinstance(d, ScoreDefinition) else d
        pos = self._index.get(name) if isinstance(name, str) else None
        if pos is None:
            known = ", ".join(self._index) or "(none)"
            raise ConfigurationError(
                f"ctx.record_score: {definition_or_name!r} is not a score of this run. "
                f"Known scores: {known}. Add its definition to scores=[...]"
            )
        return pos

    def record_score(
        self,
        definition_or_name: ScoreDefinition | str,
        value: Any,
        rationale: str | None = None,
        grader: Grader | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        """Record a value for a score; it goes through the same contract check as scorers.

        A bad value is an error record for that score (as from a scorer); a score that is not
        the run's, or a `grader` that is not an `eb.Grader`, is a mistake in the call itself
        and raises `ConfigurationError`, so the case errors with a message naming it.
        """
        pos = self._position(definition_or_name)
        if grader is not None and not isinstance(grader, Grader):
            raise ConfigurationError(
                f"ctx.record_score: grader= takes an eb.Grader(kind=..., id=...) or None, "
                f"not {safe_repr(grader)} ({type(grader).__name__})"
            )
        self.recorded[pos] = record_of(Score(value, rationale, None, metadata), grader)

    def record_unscored(self, definition_or_name: ScoreDefinition | str, reason: str) -> None:
        """Leave a score unscored for this case, with a reason."""
        self.recorded[self._position(definition_or_name)] = Rec(UNSCORED, reason=safe_str(reason))

    def record_usage(
        self,
        usage: Any = None,
        *,
        input_tokens: float | None = None,
        output_tokens: float | None = None,
        cost: float | None = None,
        model: str | None = None,
    ) -> None:
        """Record one model call's usage for this sample (calls add up; see docs/cost.md).

        `usage` may be an OpenAI `CompletionUsage`-like object or a dict
        (`prompt_tokens`/`completion_tokens` or `input_tokens`/`output_tokens`); explicit
        amounts win. Without `cost`, the run's `prices=` for `model` price the tokens; an
        amount nobody reported stays unknown (NaN), never 0. A negative or non-finite amount
        never raises: that call's usage counts as unknown, named in `run.usage()["invalid"]`.

        Example:
            >>> def task(question, ctx):
            ...     ctx.record_usage({"prompt_tokens": 12, "completion_tokens": 3}, model="m")
            ...     return question
        """
        if self._meter is not None:
            self._meter.record(
                usage,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost=cost,
                model=model,  # the meter takes text only (isinstance may raise on a user's)
                source=TASK,
            )

    def step(self, message: Message | Mapping[str, Any] | None = None, /, **fields: Any) -> None:
        """Add one step to this sample's transcript: a message, or its fields.

        The fields are those of an `eb.Transcript` message: `role, content, tool_calls,
        tool_call_id, name` (OpenAI chat format) and `model, input_tokens, output_tokens,
        cost, latency_s, error, started_at`. A step that is not a valid message raises
        `ConfigurationError` here, where it was made.

        Example:
            >>> def task(question, ctx):
            ...     ctx.step(role="user", content=question)
            ...     ctx.step(role="assistant", content="42", model="m", latency_s=0.2)
            ...     return "42"
        """
        step = message_of(message, **fields)
        if self._steps is not None:
            self._steps.add(step)

    def fail(self, reason: str) -> None:
        """End the case now with outcome `failed` (every score counts 0)."""
        raise CaseFailed(reason)
