"""Pairwise judges: a scorer that asks a model which of two outputs is better.

`eb.pairwise_judge(definition, prompt, client=..., baseline=...)` returns a `Scorer`. The prompt
has two slots, `{output}` and `{baseline}`; the client answers the `submit_preference` tool with
`{"preference": "output"|"baseline"|"tie", "justification": ...}`, where "output" and
"baseline" name the slots, not the texts. In the *original* order the case's output fills the
`{output}` slot and the baseline's fills `{baseline}`; in the *swapped* order the two texts
trade slots, and the reply is mapped back (a swapped "output" means the baseline won). A call is
worth 1 (the case's output better), 0.5 (tie) or 0 (the baseline better); each order's value is
the mean of its votes, the record's value the mean of the orders' values, and
`metadata.position_flip` is True when one order is above 0.5 and the other below (a tie against
a preference is not a flip). The calls go through `_judge.Caller` (retries, backoff, timeout,
cache, concurrency limit) and record their usage under the score's name (docs/judges.md).
"""

from __future__ import annotations

import asyncio
import inspect
import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from .._errors import ConfigurationError
from .._model._contract import Score, ScoreError, Unscored, safe_repr
from .._model._definitions import Grader, ScoreDefinition
from .._model._run_data import RunData
from .._model._scorers import Scorer
from .._runner._meter import source
from ._clients import JudgeClient
from ._judge import Caller, definition_of
from ._options import JudgeOptions, check_votes
from ._prompt import NO_TRANSCRIPT, make_prompt
from ._replies import Vote, reply_field

__all__ = ["pairwise_judge", "preference_tool"]

TOOL_NAME = "submit_preference"
# What each preference is worth when the case's output fills the {output} slot.
SLOT_VALUE: dict[str, float] = {"output": 1.0, "tie": 0.5, "baseline": 0.0}
_PREFERENCE = {v: k for k, v in SLOT_VALUE.items()}
ORDERS = ("both", "one")
NO_BASELINE = "no_baseline"
_USABLE = ("passed", "failed")  # a baseline sample that errored or never ran has no output


def preference_tool(definition: ScoreDefinition) -> dict[str, Any]:
    """The `submit_preference` tool (an OpenAI function-tool dict) for one definition.

    Example:
        >>> import evalbook as eb
        >>> tool = preference_tool(eb.define_score("better"))
        >>> tool["function"]["parameters"]["properties"]["preference"]["enum"]
        ['output', 'baseline', 'tie']
    """
    what = definition.display_label()
    about = f" {definition.description}" if definition.description else ""
    return {
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": (
                f"Submit which response is better for '{what}'.{about} Give a short "
                "justification, then the preference: 'output' if the response given as the "
                "output is better, 'baseline' if the response given as the baseline is "
                "better, 'tie' if neither is."
            ),
            "parameters": {
                "type": "object",
                "properties": {
                    "justification": {
                        "type": "string",
                        "description": "Why, in one or two sentences.",
                    },
                    "preference": {"type": "string", "enum": ["output", "baseline", "tie"]},
                },
                "required": ["justification", "preference"],
                "additionalProperties": False,
            },
        },
    }


def parse_preference(reply: object) -> Vote:
    """Validate one `submit_preference` reply: `raw` is the value of the slot it names.

    Example:
        >>> parse_preference('{"preference": "tie", "justification": "same"}').raw
        0.5
        >>> parse_preference({"preference": "A"}).code
        'invalid_judge_output'
    """
    found = reply_field(reply, "preference")
    if isinstance(found, Vote):
        return found
    choice, text = found
    if type(choice) is not str or choice not in SLOT_VALUE:  # never guessed: no "A", no True
        return Vote(
            justification=text,
            code="invalid_judge_output",
            message=(
                f"the judge's preference must be 'output', 'baseline' or 'tie', "
                f"got {safe_repr(choice)}"
            ),
        )
    value = SLOT_VALUE[choice]
    return Vote(raw=value, shown=value, justification=text)


def _missing(value: object) -> bool:
    """None, NaN, pandas' NA or NaT: what a DataFrame holds where a value is missing."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


def _baseline_outputs(run: RunData) -> tuple[dict[tuple[str, int], Any], int]:
    """A baseline run's usable outputs by (case_id, epoch), and its number of epochs."""
    cases = run.cases
    found: dict[tuple[str, int], Any] = {}
    for case_id, epoch, outcome, output in zip(
        cases["case_id"], cases["epoch"], cases["outcome"], cases["output"], strict=True
    ):
        if outcome in _USABLE and not _missing(output):
            found[(str(case_id), int(epoch))] = output
    epochs = int(cases["epoch"].max()) if len(cases) else 1
    return found, epochs


@dataclass(eq=False, repr=False)
class _Pairwise(Caller):
    """One `eb.pairwise_judge`: `votes` calls per order, mapped back and averaged."""

    orders: str
    column: str | None  # the baseline column, or None for a baseline run
    outputs: dict[tuple[str, int], Any]  # the baseline run's outputs (empty for a column)
    epochs: int  # the baseline run's epochs
    prompt_names: tuple[str, ...] | None  # what a prompt function takes (None: all)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.tool = preference_tool(self.definition)

    def _parse(self, reply: object) -> Vote:
        return parse_preference(reply)

    def _baseline(self, kw: dict[str, Any]) -> tuple[bool, Any]:
        if self.column is not None:
            value = kw[self.column] if self.column in kw else kw["row"].get(self.column)
            return not _missing(value), value
        epoch = 1 if self.epochs == 1 else int(kw["epoch"])
        key = (str(kw["case_id"]), epoch)
        return key in self.outputs, self.outputs.get(key)

    async def _messages(self, kw: dict[str, Any], first: Any, second: Any) -> list[dict[str, Any]]:
        values = dict(kw)
        values["output"], values["baseline"] = first, second
        if self.prompt_names is not None:
            values = {k: values[k] for k in self.prompt_names if k in values}
        return await self.prompt.messages((), values)

    async def score(self, kw: dict[str, Any]) -> Score | ScoreError | Unscored:
        if self.prompt.lacks_transcript(kw):  # a template showing {transcript}: none here
            return Unscored(NO_TRANSCRIPT)
        found, base = self._baseline(kw)
        if not found:
            return Unscored(NO_BASELINE)
        output = kw["output"]
        # Usage of these calls goes under the score's name, as a judge's (docs/cost.md).
        with source(self.definition.name):
            asked = [await self._messages(kw, output, base)]
            if self.orders == "both":
                asked.append(await self._messages(kw, base, output))
            calls = [
                self._vote(messages, o * self.options.votes + v)  # the occurrence, for the cache
                for o, messages in enumerate(asked)
                for v in range(self.options.votes)
            ]
            votes = list(await asyncio.gather(*calls))
        return self._combine(votes, len(asked))

    def _combine(self, votes: list[Vote], n_orders: int) -> Score | ScoreError:
        shown: list[dict[str, Any]] = []
        for i, v in enumerate(votes):
            swapped = i >= self.options.votes
            entry: dict[str, Any] = {"order": "swapped" if swapped else "original"}
            if v.raw is not None:
                entry["preference"] = _PREFERENCE[v.raw]
                entry["value"] = 1.0 - v.raw if swapped else v.raw
            entry.update(v.to_json())
            entry.pop("raw", None)  # the slot's value; "value" is the output's
            shown.append(entry)
        meta: dict[str, Any] = {"model": self.options.model, "orders": self.orders, "votes": shown}
        cached = sum(v.cached for v in votes)
        if cached:
            meta["cached"] = cached
        bad = [(i, v) for i, v in enumerate(votes) if not v.valid]
        if bad:
            i, first = bad[0]
            assert first.code is not None and first.message is not None
            message = first.message
            if len(votes) > 1:
                message = (
                    f"{len(bad)} of {len(votes)} judge calls invalid; call {i + 1} "
                    f"({shown[i]['order']} order): {message}"
                )
            return ScoreError(first.code, message, first.justification, meta, first.origin)
        n = self.options.votes
        per_order = [
            math.fsum(e["value"] for e in shown[o * n : (o + 1) * n]) / n for o in range(n_orders)
        ]
        meta["order_values"] = per_order
        if n_orders == 2:
            a, b = per_order
            meta["position_flip"] = (a - 0.5) * (b - 0.5) < 0
        return Score(
            math.fsum(per_order) / n_orders, rationale=votes[0].justification, metadata=meta
        )


def _prompt_parts(prompt: object, where: str) -> tuple[list[inspect.Parameter], bool]:
    """The prompt's parameters other than `baseline`, and whether it takes **kwargs."""
    made = make_prompt(prompt, where)
    params = list(made.signature.parameters.values())
    names = {p.name for p in params}
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    missing = [n for n in ("output", "baseline") if n not in names]
    if missing and not var_kw:
        kind = "template" if isinstance(prompt, str) else "function"
        slots = " and ".join(f"{{{n}}}" if kind == "template" else repr(n) for n in missing)
        raise ConfigurationError(
            f"{where}: the prompt {kind} must take both texts it compares; it lacks {slots}. "
            "A pairwise prompt shows the case's output in {output} and the baseline's in "
            "{baseline} (e.g. 'Response A: {output}\\nResponse B: {baseline}')"
        )
    kept = [
        p.replace(kind=p.KEYWORD_ONLY)
        for p in params
        if p.name != "baseline" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]
    return kept, var_kw


def pairwise_judge(
    definition: ScoreDefinition | str,
    prompt: str | Callable[..., Any],
    *,
    client: JudgeClient,
    baseline: str | RunData,
    orders: Literal["both", "one"] = "both",
    votes: int = 1,
    model: str | None = None,
    retries: int = 3,
    backoff: float = 1.0,
    max_backoff: float = 30.0,
    timeout: float | None = None,
    cache: str | os.PathLike[str] | None = None,
    max_concurrency: int | None = None,
) -> Scorer:
    """A scorer that asks a model whether the case's output beats a baseline's.

    Args:
        definition: The score (a `ScoreDefinition`, or a name: then the definition gets
            `Grader(kind="model", id="pairwise_judge", model=..., votes=...)`).
        prompt: A template with `{output}` and `{baseline}` slots (and `{column}`
            placeholders), or a function taking `output` and `baseline` (and columns)
            returning chat messages or a string. In the swapped order the two texts trade
            slots; the reply names slots, and is mapped back.
        client: Any callable `(messages, tool) -> reply`, sync or async; `reply` is the
            `submit_preference` tool call's arguments as a dict or JSON text.
        baseline: A column name of the data, or a Run whose outputs are matched by case_id
            (and epoch when it has several epochs; a one-epoch baseline serves every epoch).
            No baseline output for a case (missing from the run, not passed or failed, or
            a missing value in the column) ⇒ `Unscored("no_baseline")`.
        orders: "both" asks in both orders (the value is their mean, and
            `metadata.position_flip` says whether they named different winners); "one"
            asks in the original order only.
        votes: Calls per order; they run concurrently.
        model, retries, backoff, max_backoff, timeout, cache, max_concurrency: as for
            `eb.judge`.

    Example:
        >>> from evalbook._judges._pairwise import pairwise_judge  # eb.pairwise_judge
        >>> fake = lambda messages, tool: {"preference": "tie", "justification": "same"}
        >>> better = pairwise_judge("better", "A: {output}\\nB: {baseline}", client=fake,
        ...                         baseline="reference")
        >>> better.definitions[0].name
        'better'
    """
    check_votes(votes)  # before the orders, as always: the first error named is the same
    if orders not in ORDERS:
        raise ConfigurationError(f"orders must be 'both' or 'one', got {orders!r}")
    options = JudgeOptions.of(  # the judge kinds' shared keywords, in their signatures' order
        client, votes, model, retries, backoff, max_backoff, timeout, cache, max_concurrency
    )
    if isinstance(baseline, RunData):
        outputs, epochs = _baseline_outputs(baseline)
        column = None
    elif isinstance(baseline, str) and baseline:
        outputs, epochs, column = {}, 1, baseline
    else:
        raise ConfigurationError(
            f"baseline must be a column name of the data or a Run, not {baseline!r}"
        )
    grader = Grader(kind="model", id="pairwise_judge", model=options.model, votes=votes)
    d = definition_of(definition, grader, "eb.pairwise_judge()")
    name = f"pairwise_judge({d.name})"
    kept, var_kw = _prompt_parts(prompt, name)
    # What the engine binds: the prompt's names, the output, and what finds the baseline.
    wanted = [p.name for p in kept]
    extra = ["output"]
    if column is None:
        extra += ["case_id", "epoch"]
    else:
        extra.append(column if column.isidentifier() else "row")  # else read from the row
    params = kept + [
        inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY)
        for n in dict.fromkeys(extra)
        if n not in wanted
    ]
    if var_kw:
        params.append(inspect.Parameter("kwargs", inspect.Parameter.VAR_KEYWORD))
    state = _Pairwise(
        definition=d,
        prompt=make_prompt(prompt, name),
        options=options.for_definition(d),  # the definition's grader may name the model
        orders=orders,
        column=column,
        outputs=outputs,
        epochs=epochs,
        prompt_names=None if isinstance(prompt, str) or var_kw else (*wanted, "baseline"),
    )

    async def run_pairwise(**kwargs: Any) -> Score | ScoreError | Unscored:
        return await state.score(kwargs)

    run_pairwise.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    run_pairwise.__name__ = run_pairwise.__qualname__ = name
    return Scorer(run_pairwise, [d], name=name)
