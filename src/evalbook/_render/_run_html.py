"""Static HTML of a run: headline card, score cards, unscored/error breakdown.

Everything is rendered from the run's tables (`summary()`, `unscored()`, `headline`); nothing
here looks at individual records. Every piece of text that came from user code is escaped.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from .._util._fmt import counts_line, format_count, format_pct, format_pct_ci
from ._cost import cost_html
from ._flaky import flakiness, flakiness_html
from ._protocols import HeadlineLike, RunLike
from ._style import (
    BORDER,
    MUTED,
    OUTCOME_LABELS,
    STATUS_COLORS,
    badge,
    box,
    esc,
    is_missing,
    outcome_badge,
    root,
)

__all__ = ["headline_html", "run_html", "summary_html", "unscored_html"]


def _epochs(row: Any) -> int:
    """A summary row's epochs."""
    return 1 if is_missing(row["epochs"]) else int(row["epochs"])


def reducer_text(row: Any) -> str:
    """The score's reducer (`pass@3`, `mean`) when it says something: with epochs > 1, or a
    reducer other than the mean; else "" (one epoch of a mean is the value itself)."""
    if row is None:
        return ""
    reducer = "" if is_missing(row["reducer"]) else str(row["reducer"])
    return reducer if reducer and (_epochs(row) > 1 or reducer != "mean") else ""


def _reducer_badge(row: Any) -> str:
    reducer = reducer_text(row)
    if not reducer:
        return ""
    return badge(reducer, "same", title="how a case's epochs become the case's value")


# Several scores and none primary: the big number is the share of tasks that passed, not
# one of the scores beside it, so the card says so and says how to choose the score it shows.
NO_PRIMARY_NUDGE = (
    "No primary score: this is the share of tasks that passed, not one of the scores. "
    "Declare the score to lead with: eb.define_score(..., primary=True)."
)


def _headline_inner(h: HeadlineLike, row: Any = None) -> str:
    name = "passed rate (no primary score)" if h.score is None else h.score
    label = "tasks passed" if h.no_primary else h.label
    nudge = (
        f'<div data-evalbook="no-primary" style="{MUTED}; font-size: 12px; margin-top: 4px">'
        f"{esc(NO_PRIMARY_NUDGE)}</div>"
        if h.no_primary
        else ""
    )
    point, ci_text = format_pct_ci(h.value, *(h.ci or (None, None)))
    ci = "" if h.ci is None else f"95% CI {ci_text}"
    badges = "".join(outcome_badge(key, h.counts.get(key, 0)) for key in OUTCOME_LABELS)
    # an early-stopped run (stop_when=): its samples not run are stopped early, not "not run"
    stopped: str | None = getattr(h, "stopped", None)
    early: int = getattr(h, "stopped_early", 0)
    pending = h.n_samples - sum(h.counts.values()) - early
    if pending > 0:
        badges += badge(f"not run {format_count(pending)}", "pending")
    if early > 0:
        badges += badge(f"stopped early {format_count(early)}", "pending")
    size = f"{format_count(h.n_cases)} cases" + (f" × {h.epochs} epochs" if h.epochs > 1 else "")
    if stopped is not None:
        size += f" · {esc(stopped)}"
    counts = (
        f'<div style="{MUTED}; font-size: 12px">{esc(counts_line(row))}</div>'
        if row is not None
        else ""
    )
    return (
        f'<div style="{MUTED}; font-size: 11px; '
        f'letter-spacing: 0.04em; overflow-wrap: anywhere">Headline · {esc(name)}</div>'
        f'<div style="display: flex; align-items: baseline; gap: 10px; flex-wrap: wrap">'
        f'<span style="font-size: 30px; font-weight: 650">{esc(point)}</span>'
        f'<span style="font-size: 15px; font-weight: 600">{esc(label)}</span>'
        f"{_reducer_badge(row)}"
        f'<span style="{MUTED}">{esc(ci)}</span></div>'
        f"<div>completed <b>{esc(format_pct(h.completion))}</b> · {size}</div>"
        f'<div style="margin-top: 4px">{badges}</div>{counts}{nudge}{_outside(h)}'
    )


def _outside(h: HeadlineLike) -> str:
    """How many samples failed outside the model, and the warning above 10 % (origin.md)."""
    note = h.outside_model
    if note is None:
        return ""
    alarm = h.infra_alarm
    text = note if alarm is None else f"⚠ {alarm}"
    return (
        f'<div data-evalbook="outside-model" style="{MUTED}; font-size: 12px; '
        f'margin-top: 4px">{esc(text)}</div>'
    )


def headline_html(h: HeadlineLike, summary: pd.DataFrame | None = None, cost: str = "") -> str:
    """The headline card: label, value with CI, completion, counts by outcome, n cases, and
    `cost` (already-escaped HTML: the run's cost line, `_cost.py`) when given.

    Example:
        >>> from evalbook._model._scoring_rule import Headline
        >>> "91%" in headline_html(Headline("pass", "Pass", 0.91, (0.6, 0.98), 1.0, {}, 12))
        True
    """
    row = None
    if summary is not None and h.score is not None:
        match = summary[summary["score"].astype(str) == h.score]
        if len(match):
            row = match.iloc[0]
    inner = _headline_inner(h, row) + cost
    return box(inner, kind="headline", extra="min-width: 260px; flex: 1 1 320px")


def _score_card(row: Any) -> str:
    label, name = str(row["label"]), str(row["score"])
    tags = ""
    if bool(row["primary"]):
        tags += badge("primary", "scored")
    if bool(row["derived"]):
        tags += badge("derived", "same")
    tags += _reducer_badge(row)
    sub = f'<div style="{MUTED}; font-size: 11px">{esc(name)}</div>' if label != name else ""
    mean, ci = format_pct_ci(row["mean"], row["ci_low"], row["ci_high"])
    inner = (
        f'<div style="font-weight: 600">{esc(label)} {tags}</div>{sub}'
        f'<div><span style="font-size: 20px; font-weight: 600">{esc(mean)}'
        "</span> "
        f'<span style="{MUTED}">{esc(ci)}</span></div>'
        f'<div style="{MUTED}; font-size: 12px">{esc(counts_line(row))}</div>'
    )
    return box(inner, kind="score", extra="min-width: 190px; flex: 0 1 230px; padding: 8px 12px")


def score_cards_html(summary: pd.DataFrame, skip: str | None = None) -> str:
    """A small card per score (mean, CI, counts), except the one named `skip`."""
    cards = [_score_card(row) for _, row in summary.iterrows() if str(row["score"]) != skip]
    return "".join(cards)


def _bar(share: float, color: str) -> str:
    width = max(0.0, min(1.0, share)) * 100
    return (
        f'<div style="flex: 1 1 120px; min-width: 60px; height: 8px; border-radius: 4px; '
        f'background: rgba(127, 127, 127, 0.18)"><div style="width: {width:.1f}%; height: 8px; '
        f'border-radius: 4px; background: {color}"></div></div>'
    )


# Reasons listed per score in the breakdown (the most frequent; the rest are counted in one
# line): reasons can be free text, and 200 distinct ones made a 180 MB card.
MAX_REASONS = 20


def unscored_html(unscored: pd.DataFrame, summary: pd.DataFrame) -> str:
    """Per score: each unscored reason and error code with its count and share of cases.

    At most `MAX_REASONS` reasons per score, each cut to `SHORT_LIMIT` characters; the table
    (`run.unscored()`) has them all.
    """
    if unscored.empty:
        return (
            f'<div style="{MUTED}">Every record was scored: no unscored reasons, no errors.</div>'
        )
    labels = {str(r["score"]): str(r["label"]) for _, r in summary.iterrows()}
    # the table counts records, one per sample: a share is of the score's samples
    epochs = {str(r["score"]): _epochs(r) for _, r in summary.iterrows()}
    n_samples = {
        str(r["score"]): int(r["n_cases"]) * epochs[str(r["score"])] for _, r in summary.iterrows()
    }
    blocks = []
    for score, group in unscored.groupby(unscored["score"].astype(str), sort=False):
        n = n_samples.get(str(score), 0)
        unit = "samples" if epochs.get(str(score), 1) > 1 else "cases"
        rows = []
        for _, r in group.head(MAX_REASONS).iterrows():  # the most frequent first
            status = str(r["status"])
            share = int(r["n"]) / n if n else 0.0
            rows.append(
                f'<div style="display: flex; align-items: center; gap: 10px; margin: 2px 0">'
                f'<span style="flex: 0 0 72px">{badge(status, status)}</span>'
                f'<span style="flex: 0 1 240px; overflow-wrap: anywhere">{esc(r["reason"])}</span>'
                f'<span style="flex: 0 0 42px; text-align: right; font-weight: 600">{int(r["n"])}'
                f"</span>"
                f'<span style="flex: 0 0 52px; text-align: right; {MUTED}">'
                f"{esc(format_pct(share))}</span>"
                f"{_bar(share, STATUS_COLORS.get(status, '#6b7280'))}</div>"
            )
        if len(group) > MAX_REASONS:
            rest = group.iloc[MAX_REASONS:]
            rows.append(
                f'<div style="{MUTED}; font-size: 12px">… {len(rest)} more reasons '
                f"({int(rest['n'].sum())} records): see run.unscored()</div>"
            )
        label = labels.get(str(score), str(score))
        blocks.append(
            f'<div data-evalbook="unscored-score" style="margin: 6px 0 10px 0">'
            f'<div style="font-weight: 600">{esc(label)} '
            f'<span style="{MUTED}; font-weight: 400; font-size: 12px">{esc(score)} · '
            f"{n} {unit}</span></div>{''.join(rows)}</div>"
        )
    return "".join(blocks)


def summary_html(summary: pd.DataFrame) -> str:
    """The summary table as a grid of `<div>`s: one row per score with every count."""
    # the reducer column only when one score's reducer says something (`reducer_text`)
    reducers = [reducer_text(r) for _, r in summary.iterrows()]
    shown = any(reducers)
    heads = ["score", "mean", "95% CI", "counted", "unscored", "errors", "excluded", "zeroed"]
    heads[1:1] = ["reducer"] if shown else []
    cols = f"minmax(160px, 2fr) repeat({len(heads) - 1}, minmax(56px, 1fr))"
    cell = "padding: 3px 6px; border-bottom: " + BORDER
    out = [f'<div style="{cell}; font-weight: 600; {MUTED}">{h}</div>' for h in heads]
    for (_, r), reducer in zip(summary.iterrows(), reducers, strict=True):
        label = esc(r["label"])
        name = esc(r["score"])
        mean, ci = format_pct_ci(r["mean"], r["ci_low"], r["ci_high"])
        values = [
            f"{label}<br><span style='{MUTED}; font-size: 11px'>{name}</span>",
            *([esc(reducer) or "—"] if shown else []),
            esc(mean),
            esc(ci) or "—",
            *(format_count(r[k]) for k in ("counted", "unscored", "errors", "excluded", "zeroed")),
        ]
        out.extend(f'<div style="{cell}">{v}</div>' for v in values)
    return (
        f'<div data-evalbook="summary" style="display: grid; grid-template-columns: {cols}; '
        f'overflow-x: auto">{"".join(out)}</div>'
    )


def _section(title: str, inner: str) -> str:
    return (
        f'<div style="margin-top: 12px"><div style="font-weight: 600; margin-bottom: 4px">'
        f"{esc(title)}</div>{inner}</div>"
    )


def run_header_html(run: RunLike) -> str:
    """`Run NAME · 12 cases · id …` with the run's folder when it is stored."""
    path = f" · {esc(run.path)}" if run.path is not None else ""
    h = run.headline  # its counts: `run.cases` has a row per sample, not per case
    size = f"{format_count(h.n_cases)} cases" + (f" × {h.epochs} epochs" if h.epochs > 1 else "")
    return (
        # a long name wraps inside the card rather than running past it
        f'<div style="margin-bottom: 8px; overflow-wrap: anywhere">'
        f'<span style="font-weight: 650; font-size: 15px">{esc(run.name)}</span> '
        f'<span style="{MUTED}">· {size} · run {esc(run.id)}{path}</span></div>'
    )


def run_cards_html(run: RunLike) -> str:
    """Headline card followed by a small card per other score, wrapping on narrow screens."""
    summary = run.summary()
    h = run.headline
    headline = headline_html(h, summary, cost_html(run))
    return (
        f'<div style="display: flex; flex-wrap: wrap; gap: 10px; align-items: stretch">'
        f"{headline}{score_cards_html(summary, skip=h.score)}</div>"
    )


def consistency_html(run: RunLike) -> str:
    """With epochs > 1 and a score: how many cases are always / sometimes / never right
    (`_flaky.py`), for the headline's score; else ""."""
    if run.headline.epochs < 2 or not run.definitions:
        return ""
    return _section("Consistency over epochs", flakiness_html(flakiness(run)))


def run_html(run: RunLike) -> str:
    """The full static view of a run: header, cards, consistency over epochs (with epochs),
    unscored/error breakdown."""
    summary = run.summary()
    breakdown = unscored_html(run.unscored(), summary)
    body = (
        run_header_html(run)
        + run_cards_html(run)
        + consistency_html(run)
        + _section("Unscored reasons and errors", breakdown)
    )
    return root(body, "run")


def headline_only_html(h: HeadlineLike) -> str:
    """The headline card alone (the repr of a `Headline`)."""
    return root(headline_html(h), "headline-view")
