"""The verdict a summary or a report states: the check of a run, by the gate's one logic.

`evalbook show --format`, `evalbook compare --format` and `eb.report` call `verdict`, and
only it, so the conditions a summary checks are decided here once (`_gate.run_gate`, the
logic `evalbook gate` runs).
"""

from __future__ import annotations

from .._model._run_data import RunData
from ._gate import Check, run_gate
from ._gate_checks import GateSpec

__all__ = ["verdict"]


def verdict(
    run: RunData, against: RunData | None = None, *, max_drop: float | None = None
) -> Check:
    """`run` checked as `eb.check` does by default: complete (`min_completion=1.0`; an
    incomplete run never passes), and, with `against` and `max_drop`, not worse than
    `against` by more than `max_drop` (the paired delta's 95 % CI lower bound ≥ −max_drop).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> verdict(run).passed
        True
    """
    spec = GateSpec(min_completion=1.0, max_drop=max_drop)
    return run_gate(run, spec, against=against if max_drop is not None else None)
