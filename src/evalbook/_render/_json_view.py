"""A run or a comparison as JSON-ready data, for CI scripts.

`evalbook show RUN --format json` and `evalbook compare A B --format json` print it
(docs/cli.md): the run's headline and summary (or the comparison's summary, warnings,
change counts and worst regressions) and the check's verdict. Missing numbers are `null`;
long text (an output) is shortened as in every view; the lists that grow with the run
(reasons, regressions) hold at most `MAX_LISTED` entries and say how many there are.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from .._util._text import safe_str
from ._compare_html import comparison_names
from ._markdown import VerdictLike
from ._protocols import ComparisonLike, HeadlineLike, RunLike
from ._style import SHORT_LIMIT, is_missing, shorten

__all__ = ["FORMAT", "MAX_LISTED", "comparison_json", "run_json", "verdict_json"]

MAX_LISTED = 100
FORMAT = "evalbook.summary/1"  # the `format` key: its name and version


def _records(frame: pd.DataFrame, limit: int | None = None) -> list[dict[str, Any]]:
    """Rows as JSON objects (NaN as null; numpy and categorical values as plain ones)."""
    if limit is not None:
        frame = frame.head(limit)
    frame = frame.copy()
    frame.columns = [str(c) for c in frame.columns]
    for column in frame.columns:
        dtype = frame[column].dtype
        if dtype.kind == "O" or pd.api.types.is_string_dtype(dtype):  # outputs: any size
            frame[column] = frame[column].astype(object).map(_short)
    out: list[dict[str, Any]] = json.loads(
        frame.to_json(orient="records", date_format="iso", double_precision=15)
    )
    return out


def _short(x: Any) -> Any:
    """Text shortened (JSON's own escaping keeps control characters harmless)."""
    if x is None or isinstance(x, bool | int | float) or is_missing(x):
        return None if is_missing(x) else x
    return shorten(safe_str(x), SHORT_LIMIT)


def _headline(h: HeadlineLike) -> dict[str, Any]:
    return {
        "score": h.score,
        "label": h.label,
        "value": h.value,
        "ci": None if h.ci is None else list(h.ci),
        "completion": h.completion,
        "n_cases": h.n_cases,
        "epochs": h.epochs,
        "counts": dict(h.counts),
        "text": h.text,
    }


def _run(run: RunLike) -> dict[str, Any]:
    return {
        "name": run.name,
        "id": run.id,
        "path": None if run.path is None else str(run.path),
        "headline": _headline(run.headline),
    }


def verdict_json(verdict: VerdictLike | None) -> dict[str, Any] | None:
    """The check as JSON: passed, its report's lines and each condition (when it has them)."""
    if verdict is None:
        return None
    checks = [
        {"flag": c.flag, "holds": bool(c.holds), "text": c.text, "details": list(c.details)}
        for c in getattr(verdict, "checks", ())
    ]
    return {"passed": bool(verdict.passed), "report": list(verdict.lines), "checks": checks}


def run_json(run: RunLike, verdict: VerdictLike | None = None) -> dict[str, Any]:
    """A run as JSON-ready data: `format, kind, run, summary, unscored, verdict`.

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": [1, 2]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False, name="r")
        >>> data = run_json(run)
        >>> data["kind"], data["summary"][0]["mean"]
        ('run', 1.0)
    """
    unscored = run.unscored()
    return {
        "format": FORMAT,
        "kind": "run",
        "run": _run(run),
        "summary": _records(run.summary()),
        "unscored": _records(unscored, MAX_LISTED),
        "n_unscored_reasons": len(unscored),
        "verdict": verdict_json(verdict),
    }


def comparison_json(
    comp: ComparisonLike,
    verdict: VerdictLike | None = None,
    *,
    regressions: pd.DataFrame | None = None,
) -> dict[str, Any]:
    """A comparison as JSON-ready data: `format, kind, a, b, comparison, verdict`, the
    comparison holding its `summary`, `warnings`, `changes` (cases by change), `n_regressions`
    and the worst `regressions` (at most `MAX_LISTED`)."""
    cases = comp.cases
    if regressions is None:
        regressions = cases[cases["change"].astype(str) == "regressed"].sort_values(
            "delta", kind="stable"
        )
    changes = cases["change"].astype(str).value_counts(sort=False) if len(cases) else None
    name_a, name_b = comparison_names(comp)
    sides = {}
    for side, name in (("a", name_a), ("b", name_b)):
        run = getattr(comp, side, None)
        sides[side] = _run(run) if run is not None else {"name": name}
    return {
        "format": FORMAT,
        "kind": "comparison",
        **sides,
        "comparison": {
            "summary": _records(comp.summary),
            "warnings": [shorten(safe_str(w), SHORT_LIMIT) for w in comp.warnings],
            "changes": {} if changes is None else {str(k): int(v) for k, v in changes.items()},
            "n_regressions": len(regressions),
            "regressions": _records(regressions, MAX_LISTED),
        },
        "verdict": verdict_json(verdict),
    }
