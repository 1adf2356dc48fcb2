"""`eb.check(run, ...)`: the CLI gate's conditions on a run, in Python, as an `eb.Check`.

The conditions are checked by `_compare/_gate.gate_spec` and the gate itself is
`_compare/_gate.run_gate`, the one gate logic `evalbook gate` calls too; this module only
turns the keyword arguments into them and finds the baseline a name refers to.
`eb.Eval(check=...)` and the pytest plugin use `check_options` to check the conditions when
the Eval is made, before any case runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._compare._gate import Check, gate_spec, run_gate
from .._compare._gate_checks import GateError, GateSpec
from .._errors import ConfigurationError
from .._model._run_data import RunData
from ._refs import RefError, resolve_run

__all__ = ["CHECK_KEYS", "baseline_of", "check", "check_options", "store_of"]

# the conditions `eb.check` takes (and `eb.Eval(check=...)` stores), in its order
CHECK_KEYS: tuple[str, ...] = (
    "min",
    "max_errors",
    "min_completion",
    "against",
    "max_drop",
    "score",
    "max_cost",
)


def check_options(options: Mapping[str, Any], *, where: str = "check") -> dict[str, Any]:
    """`eb.Eval(check=...)`'s conditions, checked: known keys, valid values.

    Raises:
        ConfigurationError: an unknown key, a bad value, or `against` without `max_drop`
            (or the reverse).

    Example:
        >>> import evalbook as eb
        >>> check_options({"min": 0.8, "against": "baseline", "max_drop": 0.02})["max_drop"]
        0.02
        >>> try:
        ...     check_options({"mni": 0.8})
        ... except eb.ConfigurationError as exc:
        ...     print(str(exc).split(";")[0])
        check= has an unknown condition 'mni'
    """
    if not isinstance(options, Mapping):
        raise ConfigurationError(
            f"{where}= must be a dict of conditions such as dict(min=0.8), got "
            f"{type(options).__name__}"
        )
    for key in options:
        if key not in CHECK_KEYS:
            raise ConfigurationError(
                f"{where}= has an unknown condition {key!r}; the conditions are "
                f"{', '.join(CHECK_KEYS)}"
            )
    out = dict(options)
    against = out.get("against")
    if against is not None and not isinstance(against, str | os.PathLike | RunData):
        raise ConfigurationError(
            f"against must be a run, or a run's name, id or folder, got {type(against).__name__}"
        )
    _spec(out)
    return out


def _spec(options: Mapping[str, Any]) -> GateSpec:
    if (options.get("against") is None) != (options.get("max_drop") is None):
        raise ConfigurationError(
            "against= and max_drop= go together: give both (non-inferiority against a baseline)"
        )
    return gate_spec(
        min=options.get("min"),
        max_errors=options.get("max_errors"),
        min_completion=options.get("min_completion", 1.0),
        max_drop=options.get("max_drop"),
        score=options.get("score"),
        max_cost=options.get("max_cost"),
    )


def store_of(run: RunData) -> Path:
    """The store a run is in (its folder's parent), else `runs`."""
    return Path("runs") if run.path is None else Path(run.path).parent


def baseline_of(
    against: RunData | str | os.PathLike[str], store: str | os.PathLike[str]
) -> RunData:
    """The baseline `against` names: a run as it is, else a run's name, id or folder, looked
    up as the CLI looks up RUN (in `store`).

    Raises:
        ConfigurationError: nothing of that name, or its folder cannot be read.
    """
    if isinstance(against, RunData):
        return against
    try:
        return resolve_run(os.fspath(against), store)
    except RefError as exc:
        raise ConfigurationError(f"against={os.fspath(against)!r}: {exc}") from None


def check(
    run: RunData,
    *,
    min: float | None = None,
    max_errors: int | None = None,
    min_completion: float | None = 1.0,
    against: RunData | str | os.PathLike[str] | None = None,
    max_drop: float | None = None,
    score: str | None = None,
    max_cost: float | None = None,
) -> Check:
    """Check `run` as `evalbook gate` does; the result is truthy when every condition holds.

    Args:
        run: A run (in memory, stored, loaded or imported).
        min: The score's mean must be ≥ this fraction.
        max_errors: At most this many error records for the score.
        min_completion: At least this share of the samples passed or failed (not errored,
            timed out or not run); 1.0 by default, None to leave it out.
        against: A baseline: a run, or a run's name, id or folder (a name is looked up in the
            store `run` is in, else in `runs`). Needs `max_drop`.
        max_drop: With `against`: the paired delta's 95 % CI lower bound must be ≥ −max_drop
            (non-inferiority). An underpowered comparison is said, and never fails.
        score: The score checked (default: the headline's).
        max_cost: The run's total recorded cost must be ≤ this many US dollars (an unknown
            cost fails).

    Returns:
        An `eb.Check`: `.passed`, `.report` (the words `evalbook gate` prints) and
        `repr()` = the report, so that `assert eb.check(run, min=0.8)` says why in pytest.
        An incomplete run never passes.

    Raises:
        ConfigurationError: a bad condition, an unknown score, a baseline not found.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2, 3, 4]}), task=lambda x: x, name="demo",
        ...              scorers=[lambda x: 1.0], store=None, progress=False)
        >>> assert eb.check(run, min=0.8, max_errors=0)
        >>> eb.check(run, min=0.8).verdict
        'gate passed: 2 conditions hold'
    """
    if not isinstance(run, RunData):
        raise ConfigurationError(
            f"eb.check needs a run (eb.run, eb.load_run), got {type(run).__name__}"
        )
    options = {
        "min": min,
        "max_errors": max_errors,
        "min_completion": min_completion,
        "against": against,
        "max_drop": max_drop,
        "score": score,
        "max_cost": max_cost,
    }
    spec = _spec(options)
    base = None if against is None else baseline_of(against, store_of(run))
    try:
        return run_gate(run, spec, against=base)
    except GateError as exc:
        raise ConfigurationError(str(exc)) from None
