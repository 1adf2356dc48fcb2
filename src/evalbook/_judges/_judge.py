"""LLM judges: a scorer that asks a model, with a declared scale and validated replies.

`eb.judge(definition, prompt, client=...)` returns a `Scorer` bound to that one definition. Its
function is async (votes run concurrently on the run's loop); a sync client is called in the
judge's worker threads. Every vote goes through `_replies.parse_reply`; the votes are then
reduced into one `Score` (normalised to [0, 1], raw values in metadata) or one `ScoreError`.
"""

from __future__ import annotations

import abc
import asyncio
import copy
import dataclasses
import inspect
import os
import random
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from .._errors import ConfigurationError
from .._model._contract import Score, ScoreError, Unscored
from .._model._definitions import Grader, ScoreDefinition, define_score
from .._model._origin import TASK, failure_origin, mark_provider
from .._model._reducers import reduce_values, vote_reducer
from .._model._scorers import Scorer
from .._runner._calls import AttemptTimeout, Threads, within
from .._runner._engine import is_sample_error
from .._runner._meter import current_meter, source
from .._util._callables import is_async
from .._util._text import safe_str
from ._clients import JudgeClient
from ._options import JudgeOptions, check_votes, finite_number, whole_number
from ._prompt import NO_TRANSCRIPT, Prompt, make_prompt
from ._replies import (
    Vote,
    backoff_delay,
    is_transient,
    judge_request,
    parse_reply,
    storable,
)

__all__ = ["judge", "tool_schema"]

# "majority" is the old name of "mode" (a DeprecationWarning: `vote_reducer`)
Reducer = Literal["median", "mean", "min", "max", "mode", "majority"]
TOOL_NAME = "submit_evaluation"


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def tool_schema(definition: ScoreDefinition, scale: tuple[float, float]) -> dict[str, Any]:
    """The `submit_evaluation` tool (an OpenAI function-tool dict) for one definition and scale.

    Example:
        >>> import evalbook as eb
        >>> tool = tool_schema(eb.define_score("helpful"), (1, 5))
        >>> tool["function"]["name"], tool["function"]["parameters"]["required"]
        ('submit_evaluation', ['justification', 'score'])
    """
    low, high = scale
    what = definition.display_label()
    about = f" {definition.description}" if definition.description else ""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": (
                f"Submit your evaluation of '{what}'.{about} Give a short justification, then "
                f"a score from {_fmt(low)} (worst) to {_fmt(high)} (best)."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "justification": {
                        "type": "string",
                        "description": "Why this score, in one or two sentences.",
                    },
                    "score": {
                        "type": "number",
                        "minimum": low,
                        "maximum": high,
                        "description": (
                            f"The score for '{what}', a number from {_fmt(low)} to {_fmt(high)}."
                        ),
                    },
                },
                "required": ["justification", "score"],
                "additionalProperties": False,
            },
        },
    }


def _check_scale(
    scale: object, reducer: object, quorum: object, votes: int
) -> tuple[float, float, str]:
    """The scale's (low, high) and the reducer (its one name: "majority" is "mode")."""
    if (
        not isinstance(scale, tuple | list)
        or len(scale) != 2
        or not all(finite_number(x) for x in scale)
        or not scale[0] < scale[1]
    ):
        raise ConfigurationError(
            f"scale must be (low, high), two finite numbers with low < high, got {scale!r}; "
            "e.g. scale=(0, 100) or scale=(1, 5)"
        )
    name = vote_reducer(reducer)  # a warning names the user's eb.judge() line
    if quorum is not None and not whole_number(quorum, 1, votes):
        raise ConfigurationError(
            f"quorum must be None or an integer from 1 to votes ({votes}), got {quorum!r}"
        )
    return scale[0], scale[1], name  # kept as given: 0–100 reads better than 0.0–100.0


@dataclass(eq=False, repr=False)
class Caller(abc.ABC):
    """What every judge kind shares: one client call per vote, with retries, backoff, a
    timeout, the response cache and a concurrency limit. Subclasses set `tool` and `_parse`."""

    definition: ScoreDefinition
    prompt: Prompt
    options: JudgeOptions  # shared with the other judge kinds, checked once (`_options.py`)

    def __post_init__(self) -> None:
        self.client_is_async = is_async(self.options.client)
        self.params: dict[str, Any] = dict(getattr(self.options.client, "params", None) or {})
        self.tool: dict[str, Any] = {}
        self._unshared()

    def _unshared(self) -> None:
        # Locks and per-loop semaphores stay behind when a judge travels to a worker
        # process (cloudpickle): each copy makes its own.
        self.rng = random.Random()
        self._lock = threading.Lock()
        self._limits: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._limits = weakref.WeakKeyDictionary()

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        for name in ("_lock", "_limits", "rng"):
            del state[name]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._unshared()

    @abc.abstractmethod
    def _parse(self, reply: object) -> Vote:
        """One reply validated against this judge kind's tool (a `Vote`, never raising)."""

    async def _vote(self, messages: list[dict[str, Any]], index: int) -> Vote:
        key = None
        if self.options.cache is not None:
            # The epoch is in the key so that repeats stay independent; the vote is the
            # occurrence (the n-th identical request of this sample).
            meter = current_meter()
            request = judge_request(self.options.model, messages, self.tool, self.params)
            epoch = meter.epoch if meter is not None else None
            key = self.options.cache.key(request, epoch=epoch, occurrence=index)
            if key is not None:
                hit, reply = self.options.cache.get(key)
                if hit:
                    vote = self._parse(reply)
                    return dataclasses.replace(vote, cached=True)
        tries = 0
        while True:
            tries += 1
            try:
                reply = await self._ask(messages)
                break
            except BaseException as exc:  # GeneratorExit, a custom one: the client's error too
                if not is_sample_error(exc):  # Ctrl-C, SystemExit, this vote being cancelled
                    raise
                if tries <= self.options.retries and is_transient(exc):
                    delay = backoff_delay(
                        tries - 1, self.options.backoff, self.options.max_backoff, self.rng, exc
                    )
                    await asyncio.sleep(delay if self.options.backoff > 0 else 0)
                    continue
                after = f" (after {tries} tries)" if tries > 1 else ""
                return Vote(
                    code="judge_raised",
                    message=f"{type(exc).__name__}: {safe_str(exc)}{after}",  # any __str__
                    tries=tries,
                    origin=client_failure_origin(exc),
                )
        if key is not None and self.options.cache is not None:
            self.options.cache.put(key, storable(reply), model=self.options.model)
        return dataclasses.replace(self._parse(reply), tries=tries)

    async def _ask(self, messages: list[dict[str, Any]]) -> Any:
        # Each call gets its own copies: a client that edits them cannot touch the other votes.
        msgs, tool = copy.deepcopy(messages), copy.deepcopy(self.tool)
        limit = self._limit()
        if limit is None:
            return await self._call(msgs, tool)
        async with limit:
            return await self._call(msgs, tool)

    async def _call(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        # The call is a task of its own (`within`), even with no timeout: at a deadline (its
        # own, or the run's scorer_timeout= cancelling the vote) it is left behind, so that a
        # client that swallows its cancellation holds neither the vote nor the run.
        try:
            return await within(self._reply(messages, tool), self.options.timeout)
        except AttemptTimeout:
            raise TimeoutError(f"no reply within timeout={self.options.timeout}s") from None

    async def _reply(self, messages: list[dict[str, Any]], tool: dict[str, Any]) -> Any:
        result: Any
        if self.client_is_async:
            pending: Any = self.options.client(messages, tool)
            result = await pending
        else:
            # evalbook's worker threads: a call abandoned at a deadline (timeout=, the run's
            # scorer_timeout=) takes no slot from later calls and never blocks the exit
            # (GeneratorExit as is)
            result = await Threads().call(self.options.client, messages, tool)
        if inspect.isawaitable(result):  # a sync callable that hands back a coroutine
            result = await result
        return result

    def _limit(self) -> asyncio.Semaphore | None:
        if self.options.max_concurrency is None:
            return None
        loop = asyncio.get_running_loop()
        with self._lock:  # one semaphore per event loop (each eb.run() has its own loop)
            sem = self._limits.get(loop)
            if sem is None:
                sem = self._limits[loop] = asyncio.Semaphore(self.options.max_concurrency)
            return sem


@dataclass(eq=False, repr=False)
class _Judge(Caller):
    """One `eb.judge`: a score on a declared scale from `votes` calls, reduced."""

    scale: tuple[float, float]
    reducer: str
    quorum: int | None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.low, self.high = self.scale
        self.tool = tool_schema(self.definition, self.scale)

    def _parse(self, reply: object) -> Vote:
        return parse_reply(reply, self.low, self.high)

    # -- one case -------------------------------------------------------------------------

    async def score(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Score | ScoreError | Unscored:
        if self.prompt.lacks_transcript(kwargs):  # a template showing {transcript}: none here
            return Unscored(NO_TRANSCRIPT)
        # The votes' model calls record their usage under this judge's score name, even
        # when a custom scorer bound to several scores calls the judge (docs/cost.md).
        with source(self.definition.name):
            messages = await self.prompt.messages(args, kwargs)
            n = self.options.votes
            votes = await asyncio.gather(*(self._vote(messages, i) for i in range(n)))
        return self._combine(list(votes))

    # -- votes into one result ------------------------------------------------------------

    def _combine(self, votes: list[Vote]) -> Score | ScoreError:
        meta: dict[str, Any] = {
            "model": self.options.model,
            "scale": [self.low, self.high],
            "votes": [v.to_json() for v in votes],
        }
        if self.options.votes > 1:
            meta["reducer"] = self.reducer
        cached = sum(v.cached for v in votes)
        if cached:
            meta["cached"] = cached
        valid = [v for v in votes if v.valid]
        need = self.options.votes if self.quorum is None else self.quorum
        if len(valid) < need:
            i, first = next((i, v) for i, v in enumerate(votes) if not v.valid)
            assert first.code is not None and first.message is not None
            message = first.message
            if self.options.votes > 1:
                bad = len(votes) - len(valid)
                message = (
                    f"{bad} of {len(votes)} judge votes invalid, {need} valid needed; "
                    f"vote {i + 1}: {message}"
                )
            return ScoreError(first.code, message, first.justification, meta, first.origin)
        raws = [v.raw for v in valid if v.raw is not None]
        raw = reduce_values(raws, self.reducer)
        meta["raw"] = (
            int(raw) if raw.is_integer() and all(type(v.shown) is int for v in valid) else raw
        )
        if self.options.votes > 1:
            meta["spread"] = max(raws) - min(raws)
            meta["valid_votes"] = len(valid)
        low, high = float(self.low), float(self.high)
        value = (raw - low) / (high - low)
        closest = min(valid, key=lambda v: abs((v.raw or 0.0) - raw))
        return Score(value, rationale=closest.justification, metadata=meta)


def client_failure_origin(exc: BaseException) -> str | None:
    """The origin of a judge client's exception: the provider's for a 429, 5xx, timeout or
    lost connection (also one a wrapped client marked), the environment's for
    `eb.EnvironmentFailure`; None (the grader's) for anything else."""
    if is_transient(exc):
        mark_provider(exc)
    origin = failure_origin(exc)
    return None if origin == TASK else origin


def definition_of(item: ScoreDefinition | str, grader: Grader, where: str) -> ScoreDefinition:
    """The definition a judge grades: as given, or a new one named `item` with `grader`."""
    if isinstance(item, ScoreDefinition):
        if item.derived:
            raise ConfigurationError(
                f"score {item.name!r} is derived (combine=) and cannot be judged; "
                "judge a plain score and combine it"
            )
        return item
    if isinstance(item, str):
        return define_score(item, grader=grader)
    raise ConfigurationError(
        f"{where} takes a score definition or a score name first, not {item!r}"
    )


def judge(
    definition: ScoreDefinition | str,
    prompt: str | Callable[..., Any],
    *,
    client: JudgeClient,
    scale: tuple[float, float] = (0, 100),
    votes: int = 1,
    reducer: Reducer = "median",
    quorum: int | None = None,
    model: str | None = None,
    retries: int = 3,
    backoff: float = 1.0,
    max_backoff: float = 30.0,
    timeout: float | None = None,
    cache: str | os.PathLike[str] | None = None,
    max_concurrency: int | None = None,
) -> Scorer:
    """A scorer that asks a model for a score on a declared scale and validates the answer.

    Args:
        definition: The score it grades (a `ScoreDefinition`, or a name: then the definition
            gets `Grader(kind="model", id="judge", model=..., votes=..., reducer=...)`).
        prompt: A template with `{output}` and `{column}` placeholders (filled from the case;
            a placeholder no case can fill is a configuration error at `run()` start;
            `{transcript}` is the sample's transcript as text, one line per message, at most
            about 20,000 characters, and a sample without one is `Unscored("no_transcript")`), or a
            function (parameters bound by name, like a scorer's) returning the chat messages
            (a list of `{"role", "content"}` dicts) or a string (one user message).
        client: Any callable `(messages, tool) -> reply`, sync or async; `reply` is the
            `submit_evaluation` tool call's arguments as a dict or JSON text. See
            `eb.openai_client` for OpenAI-compatible SDK clients.
        scale: The judge's raw scale `(low, high)`; valid scores are normalised to [0, 1],
            anything outside is an `invalid_score` error (never clamped).
        votes: Calls per case; they run concurrently.
        reducer: How valid votes become one raw score: median, mean, min, max or mode (the
            most frequent value, a tie to the lowest; the name the epochs' reducer uses too).
            "majority", its old name, still works, with a DeprecationWarning.
        quorum: Valid votes enough for a score (default: all of them).
        model: The model name kept in metadata and in cache keys (default: `client.model`).
        retries: Extra tries after a transient error (timeout, connection, 408/409/429, 5xx).
        backoff: Base of the exponential backoff in seconds (0: retry at once).
        max_backoff: Longest wait between two tries, in seconds.
        timeout: Seconds per client call (a timeout is transient, so it is retried).
        cache: A folder where replies are kept, keyed by (model, messages, tool, params,
            epoch, vote); see docs/judges.md, "Cache".
        max_concurrency: Most calls of this judge in flight at once (default: as many as the
            run's cases in flight times `votes`; sync clients get up to 64 threads).

    Example:
        >>> import evalbook as eb
        >>> fake = lambda messages, tool: {"score": 4, "justification": "clear"}
        >>> clarity = eb.judge("clarity", "Rate the clarity of: {output}", client=fake,
        ...                    scale=(1, 5))
        >>> clarity.definitions[0].name
        'clarity'
    """
    check_votes(votes)  # before the scale, as always: the first error named is the same
    low, high, reduce_by = _check_scale(scale, reducer, quorum, votes)  # "majority": "mode"
    options = JudgeOptions.of(  # the judge kinds' shared keywords, in their signatures' order
        client, votes, model, retries, backoff, max_backoff, timeout, cache, max_concurrency
    )
    grader = Grader(kind="model", id="judge", model=options.model, votes=votes, reducer=reduce_by)
    d = definition_of(definition, grader, "eb.judge()")
    name = f"judge({d.name})"
    state = _Judge(
        definition=d,
        prompt=make_prompt(prompt, name),
        options=options.for_definition(d),  # the definition's grader may name the model
        scale=(low, high),
        reducer=reduce_by,
        quorum=quorum,
    )

    async def run_judge(*args: Any, **kwargs: Any) -> Score | ScoreError | Unscored:
        return await state.score(args, kwargs)

    run_judge.__signature__ = state.prompt.signature  # type: ignore[attr-defined]
    run_judge.__name__ = run_judge.__qualname__ = name
    return Scorer(run_judge, [d], name=name)
