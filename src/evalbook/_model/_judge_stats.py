"""`run.judge_stats()`: how each judge score's model calls went, from its records' metadata.

A score is a *judge score* when at least one of its records carries a judge's `votes` list in
its metadata (what `eb.judge` and `eb.pairwise_judge` write, for scored and error records
alike); a score none of whose records has one (a rule, a custom scorer, a judge whose every
case errored before it ran) has no row. Figures are counted over the score's samples:

- `calls`: client calls (a vote answered from the cache made none; a retried vote counts
  each try), `invalid`: votes whose reply was not valid (`invalid_judge_output`,
  `invalid_score`; a client exception, `judge_raised`, is not a reply), `retried`: votes that
  needed more than one try, `retries`: the extra tries;
- `position_flip_rate`: among the records asked in both orders whose calls were all valid
  (those with `metadata.position_flip`), the share whose two orders named different winners;
  NaN for a score with none (a plain judge, or `orders="one"`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ._definitions import ScoreDefinition
from ._results import Results

__all__ = ["JUDGE_STATS_COLUMNS", "judge_stats"]

# the documented columns first, then `retries` (the extra tries, in all)
JUDGE_STATS_COLUMNS = ["score", "calls", "invalid", "retried", "position_flip_rate", "retries"]
_INVALID = ("invalid_judge_output", "invalid_score")


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and x >= 1


class _Count:
    """One score's running figures."""

    __slots__ = ("calls", "flips", "invalid", "judged", "paired", "retried", "retries")

    def __init__(self) -> None:
        self.judged = self.calls = self.invalid = self.retried = self.retries = 0
        self.flips = self.paired = 0

    def add(self, meta: Mapping[str, Any], votes: list[Any]) -> None:
        self.judged += 1
        for vote in votes:
            if not isinstance(vote, Mapping):
                continue
            if vote.get("error") in _INVALID:
                self.invalid += 1
            if vote.get("cached") is True:
                continue  # answered from the cache: no client call
            tries = vote.get("tries", 1)
            tries = tries if _whole(tries) else 1
            self.calls += tries
            self.retries += tries - 1
            self.retried += tries > 1
        flip = meta.get("position_flip")
        if isinstance(flip, bool):
            self.paired += 1
            self.flips += flip


def judge_stats(results: Results, definitions: Sequence[ScoreDefinition]) -> pd.DataFrame:
    """One row per judge score, in definition order (see the module's docstring).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> fake = lambda messages, tool: {"score": 4, "justification": "clear"}
        >>> clear = eb.judge("clear", "Rate: {output}", client=fake, scale=(1, 5))
        >>> run = eb.run(pd.DataFrame({"q": ["a", "b"]}), task=lambda q: q, scorers=[clear],
        ...              store=None, progress=False)
        >>> run.judge_stats()[["score", "calls", "invalid", "retried"]]
           score  calls  invalid  retried
        0  clear      2        0        0
    """
    n_scores = len(definitions)
    counts = [_Count() for _ in definitions]
    touched = results.touched
    where = range(len(results.metadata)) if touched is None else sorted(set(touched))
    for i in where:
        meta = results.metadata[i]
        if isinstance(meta, Mapping) and isinstance(meta.get("votes"), list):
            counts[i % n_scores].add(meta, meta["votes"])
    rows = [
        {
            "score": d.name,
            "calls": c.calls,
            "invalid": c.invalid,
            "retried": c.retried,
            "retries": c.retries,
            "position_flip_rate": c.flips / c.paired if c.paired else math.nan,
        }
        for d, c in zip(definitions, counts, strict=True)
        if c.judged
    ]
    table = pd.DataFrame(rows, columns=JUDGE_STATS_COLUMNS)
    for name in ("calls", "invalid", "retried", "retries"):
        table[name] = table[name].astype("int64")
    table["position_flip_rate"] = table["position_flip_rate"].astype("float64")
    return table
