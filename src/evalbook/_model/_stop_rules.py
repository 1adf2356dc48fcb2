"""The stopping rules of `eb.run(stop_when=...)` (docs/spend-less.md): `eb.decided`,
`eb.precise`, and how a run's stop is said in words.

>>> decided(max_drop=0.02)
decided(max_drop=0.02, alpha=0.05)
>>> stop_text({"decision": "non_inferior", "ran": 312, "of": 2000, "max_drop": 0.02})
'stopped after 312 of 2,000 cases: non-inferior at −2 pp'
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .._errors import ConfigurationError

__all__ = [
    "DECISIONS",
    "STOPPED_EARLY",
    "Decided",
    "Precise",
    "StopRule",
    "decided",
    "precise",
    "stop_text",
]

DECISIONS = ("non_inferior", "inferior", "precise", "undecided")
# the reason of a record whose sample an early stop kept from running (run.scores, summary)
STOPPED_EARLY = "stopped_early"


def _share(name: str, value: object, example: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value < 1
    ):
        raise ConfigurationError(
            f"{name} must be a number between 0 and 1 (a share of the score's range), "
            f"got {value!r}; e.g. {example}"
        )
    return float(value)


@dataclass(frozen=True, slots=True)
class Decided:
    """Stop once the paired delta against the base is known to lie above or below −max_drop."""

    max_drop: float
    alpha: float = 0.05

    def __repr__(self) -> str:
        return f"decided(max_drop={self.max_drop:g}, alpha={self.alpha:g})"

    def spec(self) -> dict[str, Any]:
        """The rule as `run.options["stop_when"]` records it."""
        return {"rule": "decided", "max_drop": self.max_drop, "alpha": self.alpha}


@dataclass(frozen=True, slots=True)
class Precise:
    """Stop once the primary score's mean is known within ±half_width."""

    half_width: float
    alpha: float = 0.05

    def __repr__(self) -> str:
        return f"precise(half_width={self.half_width:g}, alpha={self.alpha:g})"

    def spec(self) -> dict[str, Any]:
        """The rule as `run.options["stop_when"]` records it."""
        return {"rule": "precise", "half_width": self.half_width, "alpha": self.alpha}


StopRule = Decided | Precise


def decided(max_drop: float, *, alpha: float = 0.05) -> Decided:
    """A stopping rule for `eb.run(..., against=BASE, stop_when=eb.decided(max_drop=X))`.

    The samples run in a seeded random order; after each one, an anytime-valid confidence
    sequence of the mean paired delta of the primary score (this run − BASE) is updated, and
    the run stops once it lies above −X (`non_inferior`) or below −X (`inferior`). Under a
    look after every sample, the chance of a wrong decision is at most `alpha`.

    Example:
        >>> import evalbook as eb
        >>> eb.decided(max_drop=0.02)
        decided(max_drop=0.02, alpha=0.05)
    """
    return Decided(
        _share("max_drop", max_drop, "eb.decided(max_drop=0.02) for 2 points"),
        _share("alpha", alpha, "alpha=0.05"),
    )


def precise(half_width: float, *, alpha: float = 0.05) -> Precise:
    """A stopping rule for `eb.run(..., stop_when=eb.precise(half_width=H))`: stop once the
    anytime-valid interval of the primary score's mean is at most ±H.

    Example:
        >>> import evalbook as eb
        >>> eb.precise(half_width=0.05)
        precise(half_width=0.05, alpha=0.05)
    """
    return Precise(
        _share("half_width", half_width, "eb.precise(half_width=0.05) for ±5 points"),
        _share("alpha", alpha, "alpha=0.05"),
    )


def _pp(x: float) -> str:
    text = f"{x * 100:.1f}".rstrip("0").rstrip(".")
    return text.replace("-", "−")


def stop_text(stopped: Any) -> str | None:
    """A run's stop in words (`run.options["stopped"]`), or None for a run without one."""
    if not isinstance(stopped, dict) or "decision" not in stopped:
        return None
    decision = stopped["decision"]
    ran, of = int(stopped.get("ran", 0)), int(stopped.get("of", 0))
    if decision == "undecided":
        return f"undecided after all {of:,} cases"
    if decision == "precise":
        half = float(stopped.get("half_width", math.nan))
        what = f"precise to ±{_pp(half)} pp"
    else:
        drop = float(stopped.get("max_drop", math.nan))
        what = f"{decision.replace('_', '-')} at {_pp(-drop)} pp"
    return f"stopped after {ran:,} of {of:,} cases: {what}"
