"""How evalbook spells numbers: one place for %, pp, p-values and CIs."""

from __future__ import annotations

import math

__all__ = ["format_pct"]


def format_pct(x: float | None) -> str:
    """A percentage that never rounds to 0 % or 100 % unless it is exactly that."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    for digits in (0, 1, 2, 3):
        text = f"{x * 100:.{digits}f}"
        if (float(text) == 100 and x < 1) or (float(text) == 0 and x > 0):
            continue
        return f"{text}%"
    return f"{x * 100:.4g}%"
