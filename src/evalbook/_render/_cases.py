"""The case explorer's logic and HTML: filtering cases from the tables, one case in detail.

With epochs > 1 a case is K samples (docs/repeats.md). The case view then shows, per score,
the case's reduced record (`run.reduced()`) and its epochs as a strip of marks, one per epoch
in epoch order, read off the counted value (`run.scores["counted"]`):

- `■` counted 1 (passed), `□` counted 0, `▣` any other counted value (strictly between 0 and 1);
- not counted: `✕` an error record (the case errored or the scorer failed), `·` no final
  outcome yet (not run), `○` anything else (unscored, or scored and not counted).

After the strip, `c/n`: the sum of the counted values over the n counted epochs (`4/5` for
■■□■■), then each epoch's outcome, output and records. With one epoch the view has no strip.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._util._fmt import format_num
from .._util._text import safe_str
from ._budget import TextBudget
from ._cost import sample_usage_html
from ._protocols import RunLike
from ._style import BORDER, MUTED, badge, box, esc, is_missing, outcome_badge, root
from ._transcript_html import sample_transcript, transcript_budget, transcript_html

__all__ = ["CaseFilter", "case_html", "filter_cases", "input_html", "pre_html", "text_of"]

ALL = "all"
# Epochs a case view shows in full (the rest are counted in one line, and kept in the tables),
# and marks a strip shows: each epoch adds a block of markup, and 1 000 epochs of one case
# would make a card nobody reads.
MAX_EPOCHS = 20
STRIP_LIMIT = 50
MARKS = {"one": "■", "zero": "□", "part": "▣", "error": "✕", "not_run": "·", "other": "○"}


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


def epochs_of(run: RunLike) -> int:
    """Samples per case: `run.cases` has this many rows per case, in epoch order."""
    return max(run.headline.epochs, 1)


def case_count(run: RunLike) -> int:
    """Cases of the run (`run.cases` has one row per sample)."""
    return len(run.cases) // epochs_of(run)


def filter_cases(run: RunLike, f: CaseFilter) -> np.ndarray:
    """Positions (input order) of the cases that match `f`, computed on the tables.

    A case matches when one of its epochs matches every part of `f` (with one epoch: when
    its one sample does), so that a value range finds a flaky case by its failed epochs.
    """
    cases = run.cases
    keep = np.ones(len(cases), dtype=bool)
    if f.outcome != ALL:
        keep &= (cases["outcome"] == f.outcome).to_numpy(dtype=bool, na_value=False)
    if f.score is not None and run.definitions:
        names = [d.name for d in run.definitions]
        if f.score not in names:
            raise ValueError(f"unknown score {f.score!r}; scores are {names}")
        j = names.index(f.score)
        s = len(names)
        rows = run.scores.iloc[j::s]  # input order, then epoch: one record per sample
        if f.status != ALL:
            keep &= (rows["status"] == f.status).to_numpy(dtype=bool, na_value=False)
        if f.low > 0.0 or f.high < 1.0:
            value = rows["value"].to_numpy(dtype=float)
            with np.errstate(invalid="ignore"):
                keep &= (value >= f.low) & (value <= f.high)
    return np.flatnonzero(keep.reshape(-1, epochs_of(run)).any(axis=1))


def _mark(counted: float, status: str | None) -> str:
    if counted == counted:  # a counted value (NaN is not counted)
        return MARKS["one"] if counted == 1 else MARKS["zero"] if counted == 0 else MARKS["part"]
    if status is None:
        return MARKS["not_run"]
    return MARKS["error"] if status == "error" else MARKS["other"]


def epoch_strip(counted: np.ndarray, status: list[str | None]) -> str:
    """One case's epochs of one score as marks, then `c/n` (module docstring).

    Example:
        >>> epoch_strip(np.array([1, 1, 0, 1, 1.0]), ["scored"] * 5)
        '■■□■■ 4/5'
        >>> epoch_strip(np.array([1, np.nan, 0.5]), ["scored", "error", "scored"])
        '■✕▣ 1.5/2'
    """
    marks = "".join(_mark(float(x), st) for x, st in zip(counted, status, strict=True))
    if len(marks) > STRIP_LIMIT:
        marks = f"{marks[:STRIP_LIMIT]}… (+{len(marks) - STRIP_LIMIT})"
    has = counted[~np.isnan(counted)]
    return f"{marks} {format_num(float(has.sum()))}/{has.size}"


def case_strips(run: RunLike, score: str, positions: Sequence[int] | np.ndarray) -> list[str]:
    """The epoch strip of `score` for each case at `positions` (`epoch_strip`)."""
    names = [d.name for d in run.definitions]
    j, s, k = names.index(score), len(names), epochs_of(run)
    rows = run.scores.iloc[j::s]  # one record per sample: case, then epoch
    counted = rows["counted"].to_numpy(dtype=float).reshape(-1, k)
    status = rows["status"].to_numpy(dtype=object).reshape(-1, k)
    return [
        epoch_strip(counted[int(p)], [None if is_missing(x) else str(x) for x in status[int(p)]])
        for p in positions
    ]


def pre_html(text: str, budget: TextBudget, most: int | None = None) -> str:
    return (
        f'<div style="white-space: pre-wrap; overflow-wrap: anywhere; font-family: ui-monospace, '
        f"SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; padding: 6px 8px; "
        f'border: {BORDER}; border-radius: 6px; max-height: 480px; overflow-y: auto">'
        f"{budget.esc(text, most)}</div>"
    )


def _long(x: Any, budget: TextBudget) -> str:
    """A value that may be long (a message, a rationale, metadata), shortened and escaped."""
    return "" if is_missing(x) else budget.esc(safe_str(x))


def text_of(x: Any) -> str:
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


def input_html(run: RunLike, pos: int, budget: TextBudget) -> str:
    data = run.data
    if not isinstance(data, pd.DataFrame) or pos >= len(data):
        return ""
    row = data.iloc[pos]
    items = "".join(
        f'<div style="display: flex; gap: 8px; margin: 1px 0">'
        f'<span style="flex: 0 0 120px; {MUTED}; overflow-wrap: anywhere">{esc(col)}</span>'
        f'<span style="flex: 1 1 auto; white-space: pre-wrap; overflow-wrap: anywhere">'
        f"{budget.esc(text_of(val))}</span></div>"
        for col, val in row.items()
    )
    return items


def _record_html(r: Any, label: str, budget: TextBudget) -> str:
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


def _rows_of(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of a frame of a few rows (one case's samples or records), column by column.

    Not `iterrows`: a row of columns of different types is made by finding their common type,
    and for a categorical column that hashes all its categories (`run.scores`' case ids: a
    million of them, 0.3 s for the first case a view shows).
    """
    columns = {c: frame[c].tolist() for c in frame.columns}
    return [
        dict(zip(columns, values, strict=True)) for values in zip(*columns.values(), strict=True)
    ]


def case_html(run: RunLike, pos: int, *, whole: bool = False) -> str:
    """One case in full: outcome, input columns, output, error, every score with rationale.

    `pos` is the case's position in input order. With epochs > 1: per score the reduced
    record and the epoch strip, then each epoch's outcome, output and records. Long texts
    show their start and a `<details>` with up to `TEXT_LIMIT` characters (`whole`: up to
    `WHOLE_LIMIT`).
    """
    k = epochs_of(run)
    if k > 1:
        return _epochs_case_html(run, pos, k, whole)
    cases = run.cases
    c = cases.iloc[pos]
    outcome = "pending" if is_missing(c["outcome"]) else str(c["outcome"])
    labels = {d.name: d.display_label() for d in run.definitions}
    s = len(run.definitions)
    records = run.scores.iloc[pos * s : (pos + 1) * s]
    # what the budget is spent on first: the output, the error, the scores, then the input
    budget = TextBudget(whole)
    output = text_of(c["output"])
    output_html = pre_html(output, budget) if output else f'<div style="{MUTED}">(no output)</div>'
    error = ""
    if not is_missing(c["error_type"]):
        error = (
            f'<div style="margin-top: 4px"><span style="{MUTED}">error: </span>'
            f"<b>{esc(c['error_type'])}</b> {_long(c['error_message'], budget)}</div>"
        )
    scores = "".join(
        _record_html(r, labels.get(str(r["score"]), ""), budget) for r in _rows_of(records)
    )
    inputs = input_html(run, pos, budget)
    head = (
        f'<div style="font-weight: 650; font-size: 14px">{esc(c["case_id"])} '
        f"{outcome_badge(outcome)}"
        f'<span style="{MUTED}; font-size: 12px">attempts {int(c["attempts"])}</span></div>'
    )
    scores = f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">scores</div>' + scores
    transcript = sample_transcript(run, str(c["case_id"]), int(c["epoch"]))
    if transcript is not None:  # the transcript, the score records beside it
        scores = _beside(transcript_html(transcript, whole=whole), scores)
    body = (
        head
        + error
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">input</div>'
        + inputs
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">output</div>'
        + output_html
        + scores
        + sample_usage_html(run.usage(), c["case_id"], int(c["epoch"]))
    )
    return root(box(body, kind="case"), "case-view")


def _beside(transcript: str, records: str) -> str:
    """A transcript and the score records beside it (under it when the view is narrow)."""
    return (
        f'<div style="display: flex; gap: 12px; flex-wrap: wrap; align-items: flex-start">'
        f'<div style="flex: 2 1 460px; min-width: 0; margin-top: 6px">{transcript}</div>'
        f'<div style="flex: 1 1 260px; min-width: 0">{records}</div></div>'
    )


def _reduced_html(r: Any, label: str, reducer: str, strip: str) -> str:
    """A score's reduced record of one case: status and value, the reducer, the strip."""
    status = "pending" if is_missing(r["status"]) else str(r["status"])
    value = "" if is_missing(r["value"]) else format_num(r["value"])
    sd = "" if is_missing(r["sd"]) else f"sd {format_num(r['sd'])}"
    reason = "" if is_missing(r["reason"]) else f" · {esc(r['reason'])}"
    return (
        f'<div data-evalbook="reduced" style="border-top: {BORDER}; padding: 5px 0">'
        f'<div><span style="font-weight: 600">{esc(label)}</span> '
        f'<span style="{MUTED}; font-size: 11px">{esc(r["score"])}</span> '
        f"{badge(reducer, 'same')}{badge(status + (' ' + value if value else ''), status)}"
        f'<span style="{MUTED}; font-size: 12px">{esc(sd)}{reason}</span></div>'
        f'<div data-evalbook="strip" style="font-family: ui-monospace, SFMono-Regular, Menlo, '
        f'Consolas, monospace; font-size: 14px; letter-spacing: 0.08em">{esc(strip)}</div></div>'
    )


def _epochs_case_html(run: RunLike, pos: int, k: int, whole: bool) -> str:
    """One case of a run with `k` epochs (`case_html`)."""
    definitions = run.definitions
    s = len(definitions)
    samples = run.cases.iloc[pos * k : (pos + 1) * k]
    records = run.scores.iloc[pos * k * s : (pos + 1) * k * s]
    reduced = run.reduced().iloc[pos * s : (pos + 1) * s]  # case order, then definitions
    shown = min(k, MAX_EPOCHS)
    # the budget is spent as in a one-epoch view (outputs, errors, scores, input), each shown
    # epoch's output getting an equal part of half of it, so every epoch shows some output
    budget = TextBudget(whole)
    most = budget.total // (2 * shown)
    outputs = []
    for c in _rows_of(samples.head(shown)):
        text = text_of(c["output"])
        none = f'<div style="{MUTED}">(no output)</div>'
        outputs.append(pre_html(text, budget, most) if text else none)
    errors = [
        ""
        if is_missing(c["error_type"])
        else (
            f'<div style="margin-top: 2px"><span style="{MUTED}">error: </span>'
            f"<b>{esc(c['error_type'])}</b> {_long(c['error_message'], budget)}</div>"
        )
        for c in _rows_of(samples.head(shown))
    ]
    labels = {d.name: d.display_label() for d in definitions}
    per_epoch = [
        "".join(
            _record_html(r, labels.get(str(r["score"]), ""), budget)
            for r in _rows_of(records.iloc[e * s : (e + 1) * s])
        )
        for e in range(shown)
    ]
    inputs = input_html(run, pos, budget)
    scores = "".join(
        _reduced_html(r, labels.get(d.name, ""), d.reducer, case_strips(run, d.name, [pos])[0])
        for d, r in zip(definitions, _rows_of(reduced), strict=True)
    )
    outcomes = samples["outcome"].astype(object).where(samples["outcome"].notna(), "pending")
    badges = "".join(
        outcome_badge(str(o), int(n)) for o, n in outcomes.value_counts(sort=False).items()
    )
    usage = run.usage()
    epochs = []
    # the epochs' transcripts share one budget: the first epoch's shows open, the others
    # behind their summary line
    words = transcript_budget(whole)
    for e, c in enumerate(_rows_of(samples.head(shown))):
        outcome = "pending" if is_missing(c["outcome"]) else str(c["outcome"])
        transcript = sample_transcript(run, str(c["case_id"]), int(c["epoch"]))
        if transcript is not None:
            opened = " open" if e == 0 else ""
            per_epoch[e] = _beside(
                f'<details{opened}><summary style="cursor: pointer; {MUTED}; font-size: 12px">'
                f"transcript of epoch {int(c['epoch'])}</summary>"
                f"{transcript_html(transcript, budget=words)}</details>",
                per_epoch[e],
            )
        epochs.append(
            f'<div data-evalbook="epoch" style="border-top: {BORDER}; margin-top: 6px; '
            f'padding-top: 4px"><div><span style="font-weight: 600">epoch {int(c["epoch"])}'
            f"</span> {outcome_badge(outcome)}"
            f'<span style="{MUTED}; font-size: 12px">attempts {int(c["attempts"])}</span></div>'
            f"{errors[e]}{outputs[e]}{per_epoch[e]}"
            f"{sample_usage_html(usage, c['case_id'], int(c['epoch']))}</div>"
        )
    if k > shown:
        epochs.append(
            f'<div style="{MUTED}; font-size: 12px; margin-top: 4px">… {k - shown} more '
            "epochs: see run.cases and run.scores</div>"
        )
    head = (
        f'<div style="font-weight: 650; font-size: 14px">{esc(samples["case_id"].iloc[0])} '
        f'{badges}<span style="{MUTED}; font-size: 12px">{k} epochs</span></div>'
    )
    body = (
        head
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">input</div>'
        + inputs
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">scores over {k} epochs '
        + f"({esc(_legend())})</div>"
        + scores
        + f'<div style="margin-top: 6px; {MUTED}; font-size: 12px">epochs</div>'
        + "".join(epochs)
    )
    return root(box(body, kind="case"), "case-view")


def _legend() -> str:
    m = MARKS
    return (
        f"{m['one']} 1 · {m['zero']} 0 · {m['part']} between · {m['error']} error · "
        f"{m['other']} not counted · {m['not_run']} not run"
    )
