"""The warnings of a comparison: what makes two runs less than like for like.

- `Primary scores differ (a, b)` when the runs' primary scores differ;
- a score graded by a different grader (kind, id, model, version, votes or reducer), naming
  the score and both values — read from the definitions and from the graders recorded on the
  score records (a judge may record its own);
- a score whose epochs are reduced differently (`define_score(reducer=...)`), naming the score
  and both reducers: a mean of case values reduced one way is not comparable with a mean of
  case values reduced another way;
- a score defined differently (label, combine, errors policy);
- runs drawn with different `eb.sample` specs (or one sampled, the other not).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from .._model._definitions import AllOf, AnyOf, AtLeast, MeanOf, ScoreDefinition
from .._model._run_data import RunData
from .._model._sampling import spec_text, specs_differ
from .._model._stop_rules import stop_text

__all__ = [
    "definition_warnings",
    "epochs_warning",
    "primary_of",
    "primary_warning",
    "sample_warning",
    "stop_notes",
]

_RECORDED = ("kind", "id", "model")  # grader fields the scores table carries per record
_GRADER_FIELDS = ("kind", "id", "model", "version", "votes", "reducer")


def primary_of(run: RunData) -> str | None:
    """The name of the run's primary score, or None."""
    return next((d.name for d in run.definitions if d.primary), None)


def primary_warning(a: RunData, b: RunData) -> list[str]:
    """`Primary scores differ (x, y)` when they do (`none` for a run without one)."""
    pa, pb = primary_of(a), primary_of(b)
    if pa == pb:
        return []
    return [f"Primary scores differ ({pa or 'none'}, {pb or 'none'})"]


def combine_text(expr: object) -> str:
    """A readable form of a combine expression, e.g. `all_of(correct, at_least(natural, 0.5))`."""
    if isinstance(expr, str):
        return expr
    if isinstance(expr, AtLeast):
        return f"at_least({combine_text(expr.score)}, {expr.threshold:g})"
    if isinstance(expr, AllOf | AnyOf):
        return f"{expr.op}({', '.join(combine_text(i) for i in expr.items)})"
    if isinstance(expr, MeanOf):
        inner = ", ".join(combine_text(i) for i in expr.items)
        if len(set(expr.weights)) > 1:
            inner += f", weights=[{', '.join(f'{w:g}' for w in expr.weights)}]"
        return f"mean_of({inner})"
    return "none" if expr is None else repr(expr)


def _values(values: Iterable[Any]) -> str:
    shown = sorted({repr(v) for v in values if v is not None and not pd.isna(v)})
    return " or ".join(shown) if shown else "none"


def _recorded_graders(run: RunData, names: set[str]) -> dict[str, dict[str, set[Any]]]:
    """For each score, the set of grader kind/id/model values on its records."""
    scores = run.scores
    present = [f for f in _RECORDED if f"grader_{f}" in scores.columns]
    if not present or len(scores) == 0:
        return {}
    # a grader column without categories is None on every record: it adds nothing to the key
    present = [f for f in present if len(pd.Categorical(scores[f"grader_{f}"]).categories)]
    columns = [pd.Categorical(scores[c]) for c in ["score", *(f"grader_{f}" for f in present)]]
    sizes = [len(cat.categories) + 1 for cat in columns]
    key = columns[0].codes.astype(np.int64) + 1
    for cat, size in zip(columns[1:], sizes[1:], strict=True):  # one integer per combination
        key = key * size + (cat.codes.astype(np.int64) + 1)
    combos = math.prod(sizes)
    if combos <= 4 * len(key):  # few combinations: count them instead of hashing
        uniques = np.flatnonzero(np.bincount(key, minlength=combos))
    else:
        uniques = pd.unique(key)
    out: dict[str, dict[str, set[Any]]] = {}
    for found in uniques:
        combo, codes = int(found), []
        for size in reversed(sizes):
            combo, code = divmod(combo, size)
            codes.append(code - 1)
        values = [
            None if c < 0 else cat.categories[c]
            for cat, c in zip(columns, reversed(codes), strict=True)
        ]
        name = str(values[0])
        if name not in names:
            continue
        fields = out.setdefault(name, {f: set() for f in _RECORDED})
        for field, value in zip(present, values[1:], strict=True):
            if value is not None and not pd.isna(value):
                fields[field].add(value)
    return out


def _grader_sets(
    d: ScoreDefinition, recorded: dict[str, dict[str, set[Any]]]
) -> dict[str, set[Any]]:
    sets = {f: {getattr(d.grader, f)} if d.grader else set() for f in _GRADER_FIELDS}
    if d.name in recorded:  # records carry the definition's grader unless one was recorded
        for f in _RECORDED:
            sets[f] = recorded[d.name][f]
    return {f: {v for v in s if v is not None} for f, s in sets.items()}


def epochs_warning(a: RunData, b: RunData) -> list[str]:
    """One sentence when the runs ran their cases a different number of times."""
    if not isinstance(a, RunData) or not isinstance(b, RunData):
        return []  # a run-like object without epochs
    ka, kb = a.results.epochs, b.results.epochs
    if ka == kb:
        return []
    return [
        f"The runs have different epochs ({a.name!r}: {ka}, {b.name!r}: {kb}): each case's "
        "value is reduced over a different number of samples, so the runs are not like for "
        "like (a mean over 5 epochs varies less than one over 1)."
    ]


def sample_warning(a: RunData, b: RunData) -> list[str]:
    """One sentence when the runs' cases were drawn by different `eb.sample` specs."""
    sa = (getattr(a, "options", None) or {}).get("sample")
    sb = (getattr(b, "options", None) or {}).get("sample")
    if not specs_differ(sa, sb):
        return []
    return [
        f"The runs were drawn with different samples ({a.name!r}: {spec_text(sa)}; "
        f"{b.name!r}: {spec_text(sb)}): their cases are different draws, so only the cases "
        "both ran are paired; draw both with the same eb.sample(...) for like for like."
    ]


def _pp(x: float) -> str:
    return f"{x * 100:+.1f}".replace("-", "−")


def stop_notes(a: RunData, b: RunData) -> list[str]:
    """For a run that stopped early (`stop_when=`): its sequential interval, beside the
    fixed-n one of the summary (which assumes the number of cases was fixed in advance)."""
    notes: list[str] = []
    for run in (a, b):
        options = getattr(run, "options", None) or {}
        stopped = options.get("stopped")
        text = stop_text(stopped)
        if text is None or not isinstance(stopped, dict) or stopped.get("low") is None:
            continue
        low, high = float(stopped["low"]), float(stopped["high"])
        level = f"{1 - float(stopped.get('alpha', 0.05)):.0%}"
        against = (options.get("against") or {}).get("name")
        if stopped.get("max_drop") is not None:
            what = f"the delta against {against!r}" if against else "the delta against its base"
            interval = f"[{_pp(low)}, {_pp(high)}] pp"
        else:
            what = "its primary score's mean"
            interval = f"[{low:.3f}, {high:.3f}]"
        notes.append(
            f"Run {run.name!r} {text}: its sequential {level} interval of {what} is "
            f"{interval}, valid however often it was looked at; the summary's fixed-n interval "
            "assumes the number of cases was fixed in advance."
        )
    return notes


def definition_warnings(a: RunData, b: RunData, common: list[str]) -> list[str]:
    """One sentence per common score graded differently, one per score reduced differently,
    one per score defined differently."""
    defs_a = {d.name: d for d in a.definitions}
    defs_b = {d.name: d for d in b.definitions}
    names = set(common)
    rec_a, rec_b = _recorded_graders(a, names), _recorded_graders(b, names)
    warnings: list[str] = []
    for name in common:
        da, db = defs_a[name], defs_b[name]
        ga, gb = _grader_sets(da, rec_a), _grader_sets(db, rec_b)
        diffs = [
            f"{field} {_values(ga[field])} in a, {_values(gb[field])} in b"
            for field in _GRADER_FIELDS
            if ga[field] != gb[field]
        ]
        if diffs:
            warnings.append(f"Score {name!r} is graded differently: {'; '.join(diffs)}.")
        if da.reducer != db.reducer:
            warnings.append(
                f"Score {name!r} is reduced differently over epochs: reducer {da.reducer!r} "
                f"in a, {db.reducer!r} in b, so its means are not comparable."
            )
        changes = []
        if da.label != db.label:
            changes.append(f"label {da.label!r} in a, {db.label!r} in b")
        ja = da.combine.to_json() if da.combine else None
        jb = db.combine.to_json() if db.combine else None
        if ja != jb:
            changes.append(
                f"combine {combine_text(da.combine)} in a, {combine_text(db.combine)} in b"
            )
        if da.errors != db.errors:
            changes.append(f"errors policy {da.errors!r} in a, {db.errors!r} in b")
        if changes:
            warnings.append(f"Score {name!r} is defined differently: {'; '.join(changes)}.")
    return warnings
