"""The case explorer's logic and HTML: filtering cases from the tables, one case in detail."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._util._fmt import format_num
from .._util._text import safe_str
from ._style import BORDER, MUTED, badge, box, esc, is_missing, root

if TYPE_CHECKING:
    from .._model._run_data import RunData

__all__ = ["CASE_TEXT_LIMIT", "TEXT_LIMIT", "CaseFilter", "case_html", "filter_cases"]

ALL = "all"
# Longest text a case view shows of one value (an output, an input cell, a rationale), and of
# all of them together; the run's tables keep the whole text. A case view is one card a
# reader scrolls through, and a comparison shows two side by side: 30 000 characters each
# keep that pair under 200 KB of HTML for plain text (markup escapes can triple it), where a
# case with a 1 MB output, reason, rationale and error once made a 2 MB view.
TEXT_LIMIT = 10_000
CASE_TEXT_LIMIT = 30_000


class _Budget:
    """The characters of user text one case view may still show (`CASE_TEXT_LIMIT` in all)."""

    def __init__(self, total: int = CASE_TEXT_LIMIT) -> None:
        self.left = total

    def esc(self, text: str) -> str:
        """`text` escaped and cut to what is left of the budget (at most `TEXT_LIMIT`)."""
        limit = min(TEXT_LIMIT, self.left)
        self.left -= min(len(text), limit)
        return esc(text, limit)


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


def _pre(text: str, budget: _Budget) -> str:
    return (
        f'<div style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, '
        f"SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; padding: 6px 8px; "
        f'border: {BORDER}; border-radius: 6px; max-height: 240px; overflow-y: auto">'
        f"{budget.esc(text)}</div>"
    )


def _long(x: Any, budget: _Budget) -> str:
    """A value that may be long (a message, a rationale, metadata), shortened and escaped."""
    return "" if is_missing(x) else budget.esc(safe_str(x))


def _text_of(x: Any) -> str:
    """A value's text: a str as it is, a container as JSON, anything else by `safe_str`.

    Types are read by `type()`, never `isinstance`: a user's object in the data may have a
    `__class__` that raises.
    """
    kind = type(x)
    if issubclass(kind, str):
        return str.__str__(x)
    if issubclass(kind, list | dict | tuple):
        try:
            return json.dumps(x, ensure_ascii=False, indent=1, default=safe_str)
        except Exception:  # a container that holds itself, keys json cannot take, ...
            return safe_str(x)
    return "" if is_missing(x) else safe_str(x)


def _input_html(run: RunData, pos: int, budget: _Budget) -> str:
    data = run.data
    if not isinstance(data, pd.DataFrame) or pos >= len(data):
        return ""
    row = data.iloc[pos]
    items = "".join(
        f'<div style="display: flex; gap: 8px; margin: 1px 0">'
        f'<span style="flex: 0 0 120px; {MUTED}; overflow-wrap: anywhere">{esc(col)}</span>'
        f'<span style="flex: 1 1 auto; white-space: pre-wrap; overflow-wrap: anywhere">'
        f"{budget.esc(_text_of(val))}</span></div>"
        for col, val in row.items()
    )
    return items


def _record_html(r: Any, label: str, budget: _Budget) -> str:
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
        msg = "" if is_missing(r["message"]) else f" — {_long(r['message'], budget)}"
        parts.append(f'<div style="font-size: 12px">{esc(r["reason"])}{msg}</div>')
    if not is_missing(r["rationale"]) and str(r["rationale"]):
        parts.append(
            f'<div style="font-size: 12px; white-space: pre-wrap; overflow-wrap: anywhere">'
            f'<span style="{MUTED}">rationale: </span>{_long(r["rationale"], budget)}</div>'
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
            f"metadata {_long(r['metadata'], budget)}</div>"
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
    # what the budget is spent on first: the output, the error, the scores, then the input
    budget = _Budget()
    output = _text_of(c["output"])
    output_html = _pre(output, budget) if output else f'<div style="{MUTED}">(no output)</div>'
    error = ""
    if not is_missing(c["error_type"]):
        error = (
            f'<div style="margin-top: 4px"><span style="{MUTED}">error: </span>'
            f"<b>{esc(c['error_type'])}</b> {_long(c['error_message'], budget)}</div>"
        )
    scores = "".join(
        _record_html(r, labels.get(str(r["score"]), ""), budget) for _, r in records.iterrows()
    )
    inputs = _input_html(run, pos, budget)
    head = (
        f'<div style="font-weight: 650; font-size: 14px">{esc(c["case_id"])} '
        f"{badge(outcome.replace('_', ' '), outcome)}"
        f'<span style="{MUTED}; font-size: 12px">attempts {int(c["attempts"])}</span></div>'
    )
    body = (
        head
        + error
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">input</div>'
        + inputs
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">output</div>'
        + output_html
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">scores</div>'
        + scores
    )
    return root(box(body, kind="case"), "case-view")
