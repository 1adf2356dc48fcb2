"""Early stopping in a run (`stop_when=`, docs/spend-less.md): the samples' seeded order, the
confidence sequence fed as they finish, and the decision.

The samples run in the order of their keys (SHA-256 of (seed, case id), as `eb.sample` draws:
the first n of the order are `eb.sample(data, n, seed=seed)`), and the confidence sequence takes
them in that order, a sample only once every sample before it has finished. So the values it
sees are a random order fixed before any ran, whatever the concurrency and however long a
sample takes (a slow or failing sample that finishes late is not left out of the early look),
and the decision is a function of the finished samples alone: a resume after kill -9 feeds the
kept ones again and comes to the same point, and starts none once the run is decided.

Once decided, no sample starts; those in flight finish and are kept (their values are not
fed: the decision was made without them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._errors import ConfigurationError
from .._model._confseq import ConfidenceSequence, lower_decision, precise_enough
from .._model._definitions import ScoreDefinition
from .._model._results import PENDING, Results
from .._model._run_data import RunData
from .._model._sampling import case_keys
from .._model._scoring_rule import counted_values
from .._model._stop_rules import Decided, Precise, StopRule

__all__ = ["Stopper", "check_stop", "primary_position"]


def primary_position(definitions: Sequence[ScoreDefinition]) -> int | None:
    """The position of the primary score (else of the only score), or None."""
    chosen = next((j for j, d in enumerate(definitions) if d.primary), None)
    if chosen is None and len(definitions) == 1:
        chosen = 0
    return chosen


def check_stop(stop_when: Any, against: Any, epochs: int) -> None:
    """The stop options, checked before any case runs."""
    if stop_when is None:
        if against is not None:
            raise ConfigurationError(
                "against= is the base run of stop_when=eb.decided(max_drop=...); pass "
                "stop_when= too, or leave against= out (eb.compare compares two runs)"
            )
        return
    if not isinstance(stop_when, Decided | Precise):
        raise ConfigurationError(
            f"stop_when= takes eb.decided(max_drop=X) or eb.precise(half_width=H), got "
            f"{stop_when!r}"
        )
    if isinstance(stop_when, Decided) and against is None:
        raise ConfigurationError(
            "stop_when=eb.decided(...) needs the base run to compare with: "
            "eb.run(..., against=BASE, stop_when=eb.decided(max_drop=0.02))"
        )
    if isinstance(stop_when, Precise) and against is not None:
        raise ConfigurationError(
            "stop_when=eb.precise(...) stops on this run's own mean: leave against= out "
            "(or use stop_when=eb.decided(max_drop=X) to compare with against=)"
        )
    if epochs != 1:
        raise ConfigurationError(
            f"stop_when= works with epochs=1 for now (got epochs={epochs}): the sequence "
            "takes one value per case"
        )


def _base_values(base: RunData, name: str, case_ids: Sequence[str]) -> np.ndarray:
    """The base run's counted value of score `name` per case of this run (NaN: none)."""
    names = [d.name for d in base.definitions]
    if name not in names:
        raise ConfigurationError(
            f"against= run {base.name!r} has no score {name!r} (this run's primary score); "
            f"its scores: {', '.join(names) or 'none'}"
        )
    if base.results.epochs != 1:
        raise ConfigurationError(
            f"against= run {base.name!r} has {base.results.epochs} epochs: stop_when= "
            "compares one value per case (a base run with epochs=1)"
        )
    j, k = names.index(name), len(names)
    res = base.results
    zero = np.array([base.definitions[j].errors == "zero"])
    rows = np.arange(res.n_samples) * k + j
    values = counted_values(
        res.outcome, res.status[rows], res.value[rows], np.repeat(zero, len(rows))
    )
    by_id = dict(zip(res.case_ids, values.tolist(), strict=True))
    return np.array([by_id.get(c, math.nan) for c in case_ids], dtype=np.float64)


class Stopper:
    """The stop of one run: its order, its confidence sequence and its decision."""

    def __init__(
        self,
        rule: StopRule,
        results: Results,
        definitions: Sequence[ScoreDefinition],
        *,
        seed: int,
        base: RunData | None,
    ) -> None:
        position = primary_position(definitions)
        if position is None:
            raise ConfigurationError(
                "stop_when= stops on the primary score: mark one score primary "
                "(eb.define_score(..., primary=True))"
            )
        self.rule = rule
        self.results = results
        self.position = position
        self.zero = definitions[position].errors == "zero"
        self.n_scores = len(definitions)
        keys = case_keys(list(results.case_ids), seed)
        self.order: list[int] = [int(p) for p in np.argsort(keys, kind="stable")]
        self.rank = {p: i for i, p in enumerate(self.order)}
        self.base: np.ndarray | None = None
        if isinstance(rule, Decided):
            assert base is not None
            self.base = _base_values(base, definitions[position].name, results.case_ids)
            self.cs = ConfidenceSequence(alpha=rule.alpha, lo=-1.0, hi=1.0)
        else:
            self.cs = ConfidenceSequence(alpha=rule.alpha)
        self.next = 0  # samples of the order taken so far (fed or skipped)
        self.decision: str | None = None
        self.skipped = 0  # samples that did not start: the run had decided
        self.catch_up()  # a resume: the kept samples, in order

    @property
    def stopped(self) -> bool:
        """Whether the run has decided: then no sample starts."""
        return self.decision is not None

    def ordered(self, todo: Sequence[int]) -> list[int]:
        """`todo` in the run's seeded order."""
        return sorted(todo, key=self.rank.__getitem__)

    def _value(self, pos: int) -> float:
        res = self.results
        i = pos * self.n_scores + self.position
        counted = counted_values(
            res.outcome[pos : pos + 1],
            res.status[i : i + 1],
            res.value[i : i + 1],
            np.array([self.zero]),
        )
        value = float(counted[0])
        if self.base is not None:
            value -= float(self.base[pos])
        return value

    def catch_up(self) -> None:
        """Feed every finished sample of the order's prefix; decide when the rule says so."""
        outcome = self.results.outcome
        while self.decision is None and self.next < len(self.order):
            pos = self.order[self.next]
            if outcome[pos] == PENDING:
                return
            self.next += 1
            value = self._value(pos)
            low, high = (-1.0, 1.0) if self.base is not None else (0.0, 1.0)
            if not low <= value <= high:  # not counted (NaN), in either run
                continue
            self.cs.update(value)
            rule = self.rule
            if isinstance(rule, Decided):
                self.decision = lower_decision(self.cs.low, self.cs.high, rule.max_drop)
            elif precise_enough(self.cs.low, self.cs.high, rule.half_width):
                self.decision = "precise"

    def recorded(self) -> dict[str, Any]:
        """The stop as `run.options["stopped"]` records it (also on the log's `run.ended`)."""
        ran = int((self.results.outcome != PENDING).sum())
        out: dict[str, Any] = {
            "decision": self.decision or "undecided",
            "ran": ran,
            "of": len(self.order),
            "at": self.next,  # samples of the order taken when it decided (or in all)
            "n": self.cs.n,  # of them, the values the sequence took
            "low": None if self.cs.n == 0 else self.cs.low,
            "high": None if self.cs.n == 0 else self.cs.high,
            "mean": None if self.cs.n == 0 else self.cs.mean,
            **{k: v for k, v in self.rule.spec().items() if k != "rule"},
        }
        return out
