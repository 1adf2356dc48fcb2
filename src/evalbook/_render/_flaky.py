"""How consistent each case is over its epochs: always, sometimes or never right (docs/repeats.md).

Read off the counted values (`run.scores["counted"]`), the same values the reducers reduce:
for one score, a case is

- **always** right when every counted epoch is 1, **never** when every counted epoch is 0,
- **sometimes** otherwise (some 1s and some 0s, or a value strictly between 0 and 1),
- **not counted** when none of its epochs is counted (counted apart from the three).

Its pass rate is the mean of its counted epoch values. This module is the plain part (no
plotly): the counts and their HTML, which the flakiness figure carries as its fallback for
viewers without JavaScript (`_run_plots.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._util._fmt import format_pct
from ._protocols import RunLike
from ._style import MUTED, badge, esc, root

__all__ = ["CLASSES", "Flakiness", "flakiness", "flakiness_html"]

# the classes in the order every view shows them, each with the status whose colour it takes
CLASSES = {
    "always": "passed",
    "sometimes": "timed_out",
    "never": "failed",
    "not_counted": "pending",
}


@dataclass(frozen=True)
class Flakiness:
    """One score's cases by consistency over epochs (module docstring).

    `kind[i]` is case i's class (input order), `rate[i]` its pass rate (NaN: not counted).
    """

    score: str
    label: str
    epochs: int
    kind: np.ndarray
    rate: np.ndarray

    def count(self, kind: str) -> int:
        """Cases of this class."""
        return int(np.count_nonzero(self.kind == kind))

    @property
    def n_cases(self) -> int:
        """Cases of the run."""
        return int(self.kind.size)

    @property
    def message(self) -> str:
        """The one line every view of it shows."""
        if self.epochs < 2:
            return (
                f"Flakiness needs epochs ≥ 2: this run has 1 epoch per case. Run with "
                f"eb.run(..., epochs=5) to see which of its {self.n_cases} cases are always, "
                "sometimes or never right."
            )
        return (
            f"{self.label}: always right {self.count('always')} · sometimes "
            f"{self.count('sometimes')} · never {self.count('never')} · not counted "
            f"{self.count('not_counted')} (of {self.n_cases} cases × {self.epochs} epochs)"
        )


def flakiness(run: RunLike, score: str | None = None) -> Flakiness:
    """Each case's class and pass rate for `score` (default: the headline's, else the first)."""
    names = [d.name for d in run.definitions]
    if not names:
        raise ValueError("flakiness needs a score, and this run has none; add scorers=[...]")
    if score is None:
        score = run.headline.score if run.headline.score in names else names[0]
    if score not in names:
        raise ValueError(f"unknown score {score!r}; scores are {names}")
    k = max(run.headline.epochs, 1)
    rows = run.scores.iloc[names.index(score) :: len(names)]  # one per sample: case, then epoch
    x = rows["counted"].to_numpy(dtype=float).reshape(-1, k)
    counted = ~np.isnan(x)
    n = counted.sum(axis=1)
    total = np.where(counted, x, 0.0).sum(axis=1)
    rate = np.divide(total, n, out=np.full(n.size, np.nan), where=n > 0)
    ones = (counted & (x == 1.0)).sum(axis=1)
    zeros = (counted & (x == 0.0)).sum(axis=1)
    kind = np.full(n.size, "sometimes", dtype=object)
    kind[(n > 0) & (ones == n)] = "always"
    kind[(n > 0) & (zeros == n)] = "never"
    kind[n == 0] = "not_counted"
    label = next(d.display_label() for d in run.definitions if d.name == score)
    return Flakiness(score, label, k, kind, rate)


def flakiness_html(f: Flakiness) -> str:
    """The counts as static HTML (no script): what a viewer without JavaScript shows."""
    if f.epochs < 2:
        inner = f'<div style="{MUTED}">{esc(f.message)}</div>'
    else:
        n = max(f.n_cases, 1)
        badges = "".join(
            badge(
                f"{kind.replace('_', ' ')} {f.count(kind)} ({format_pct(f.count(kind) / n)})",
                status,
            )
            for kind, status in CLASSES.items()
        )
        inner = (
            f'<div style="font-weight: 600">Flakiness · {esc(f.label)} '
            f'<span style="{MUTED}; font-weight: 400; font-size: 12px">{esc(f.score)} · '
            f"{f.n_cases} cases × {f.epochs} epochs</span></div><div>{badges}</div>"
        )
    return root(f'<div style="margin: 4px 0 8px 0">{inner}</div>', "flakiness")
