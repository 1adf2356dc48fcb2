"""The case explorer's logic and HTML: filtering cases from the tables, one case in detail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._util._fmt import format_num
from ._style import BORDER, MUTED, badge, box, esc, is_missing, root, shorten

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["CaseFilter", "case_html", "filter_cases"]

ALL = "all"
# Longest text a case view shows of one value (an output, an input cell); the run's tables
# keep the whole text. A view of a 10 MB output would freeze the notebook's page.
TEXT_LIMIT = 20_000


@dataclass(frozen=True)
class CaseFilter:
    """What the explorer shows: outcome, one score's status and value range.

    `low`/`high` bound the recorded value of `score`; records without a value pass only when
    the range is the full [0, 1].
    """

    outcome: str = ALL
    score: str | None = None
    status: str = ALL
    low: float = 0.0
    high: float = 1.0


def filter_cases(run: RunData, f: CaseFilter) -> np.ndarray:
    """Positions (input order) of the cases that match `f`, computed on the tables."""
    cases = run.cases
    keep = np.ones(len(cases), dtype=bool)
    if f.outcome != ALL:
        keep &= (cases["outcome"].astype(str) == f.outcome).to_numpy()
    if f.score is not None and run.definitions:
        names = [d.name for d in run.definitions]
        if f.score not in names:
            raise ValueError(f"unknown score {f.score!r}; scores are {names}")
        j = names.index(f.score)
        s = len(names)
        rows = run.scores.iloc[j::s]  # input order, one record per case
        status = rows["status"].astype(str).to_numpy()
        value = rows["value"].to_numpy(dtype=float)
        if f.status != ALL:
            keep &= status == f.status
        if f.low > 0.0 or f.high < 1.0:
            with np.errstate(invalid="ignore"):
                keep &= (value >= f.low) & (value <= f.high)
    return np.flatnonzero(keep)


def _pre(text: str) -> str:
    return (
        f'<div style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, '
        f"SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; padding: 6px 8px; "
        f'border: {BORDER}; border-radius: 6px; max-height: 240px; overflow-y: auto">'
        f"{esc(shorten(text, TEXT_LIMIT))}</div>"
    )


def _long(x: Any) -> str:
    """A value that may be long (a message, a rationale, metadata), shortened and escaped."""
    return "" if is_missing(x) else esc(shorten(str(x), TEXT_LIMIT))


def _text_of(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, list | dict | tuple):
        try:
            return json.dumps(x, ensure_ascii=False, indent=1, default=repr)
        except (TypeError, ValueError):
            return repr(x)
    return "" if is_missing(x) else str(x)


def _input_html(run: RunData, pos: int) -> str:
    data = run.data
    if not isinstance(data, pd.DataFrame) or pos >= len(data):
        return ""
    row = data.iloc[pos]
    items = "".join(
        f'<div style="display: flex; gap: 8px; margin: 1px 0">'
        f'<span style="flex: 0 0 120px; {MUTED}; overflow-wrap: anywhere">{esc(col)}</span>'
        f'<span style="flex: 1 1 auto; white-space: pre-wrap; overflow-wrap: anywhere">'
        f"{esc(shorten(_text_of(val), TEXT_LIMIT))}</span></div>"
        for col, val in row.items()
    )
    return items


def _record_html(r: Any, label: str) -> str:
    status = str(r["status"])
    value = "" if is_missing(r["value"]) else format_num(r["value"])
    counted = "not counted" if is_missing(r["counted"]) else f"counted {format_num(r['counted'])}"
    head = (
        f'<div><span style="font-weight: 600">{esc(label)}</span> '
        f'<span style="{MUTED}; font-size: 11px">{esc(r["score"])}</span> '
        f"{badge(status + (' ' + value if value else ''), status)}"
        f'<span style="{MUTED}; font-size: 12px">{esc(counted)}</span></div>'
    )
    parts = [head]
    if not is_missing(r["reason"]):
        msg = "" if is_missing(r["message"]) else f" — {_long(r['message'])}"
        parts.append(f'<div style="font-size: 12px">{esc(r["reason"])}{msg}</div>')
    if not is_missing(r["rationale"]) and str(r["rationale"]):
        parts.append(
            f'<div style="font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere">'
            f'<span style="{MUTED}">rationale: </span>{_long(r["rationale"])}</div>'
        )
    grader = [
        str(r[k]) for k in ("grader_kind", "grader_id", "grader_model") if not is_missing(r[k])
    ]
    extra = []
    if grader:
        extra.append(f"grader {' / '.join(grader)}")
    if bool(r["derived"]):
        extra.append("derived")
    if extra:
        parts.append(f'<div style="{MUTED}; font-size: 11.5px">{esc(" · ".join(extra))}</div>')
    if not is_missing(r["metadata"]):
        parts.append(
            f'<div style="{MUTED}; font-size: 11.5px; overflow-wrap: anywhere; '
            f'font-family: ui-monospace, Menlo, Consolas, monospace">'
            f"metadata {_long(r['metadata'])}</div>"
        )
    return (
        f'<div data-evalbook="record" style="border-top: {BORDER}; padding: 5px 0">'
        f"{''.join(parts)}</div>"
    )


def case_html(run: RunData, pos: int) -> str:
    """One case in full: outcome, input columns, output, error, every score with rationale."""
    cases = run.cases
    c = cases.iloc[pos]
    outcome = "pending" if is_missing(c["outcome"]) else str(c["outcome"])
    labels = {d.name: d.display_label() for d in run.definitions}
    s = len(run.definitions)
    records = run.scores.iloc[pos * s : (pos + 1) * s]
    error = ""
    if not is_missing(c["error_type"]):
        error = (
            f'<div style="margin-top: 4px"><span style="{MUTED}">error: </span>'
            f"<b>{esc(c['error_type'])}</b> {_long(c['error_message'])}</div>"
        )
    head = (
        f'<div style="font-weight: 650; font-size: 14px">{esc(c["case_id"])} '
        f"{badge(outcome.replace('_', ' '), outcome)}"
        f'<span style="{MUTED}; font-size: 12px">attempts {int(c["attempts"])}</span></div>'
    )
    body = (
        head
        + error
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">input</div>'
        + _input_html(run, pos)
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">output</div>'
        + (
            _pre(_text_of(c["output"]))
            if _text_of(c["output"])
            else f'<div style="{MUTED}">(no output)</div>'
        )
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">scores</div>'
        + "".join(_record_html(r, labels.get(str(r["score"]), "")) for _, r in records.iterrows())
    )
    return root(box(body, kind="case"), "case-view")
