"""The leaderboard card of `eb.show([runs])` (docs/notebooks.md, Leaderboards): the board's
rows with each run's cost per sample, as HTML and as text. The view that holds it, with the
cost-vs-score scatter, is `display/_board.py`'s `BoardView`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from .._util._fmt import format_money, format_pct, format_pct_ci
from .._util._text import visible
from ._cost import amounts
from ._protocols import RunLike
from ._style import BORDER, MUTED, box, esc, root, shorten

__all__ = ["MAX_BOARD_ROWS", "board_card_html", "board_text", "cost_cell", "rank_range"]

# Rows the card lists: the runs of a sweep may be many, and each row is markup
MAX_BOARD_ROWS = 100
_NAME_LIMIT = 120  # characters of a run's name in a row (the board keeps it whole)
_COLUMNS = [
    "tier",
    "ranks",
    "run",
    "score",
    "mean",
    "95% CI",
    "completion",
    "ran",  # the `passed_rate` column: the share of tasks that returned (not a score)
    "cost / sample",
]


def rank_range(row: pd.Series) -> str:
    """The ranks a run could hold (`2–5`, or `3`), never a bare position among tied runs; `—`
    for a run without a value.

    Example:
        >>> rank_range(pd.Series({"rank_low": 2, "rank_high": 5})), rank_range(
        ...     pd.Series({"rank_low": 3, "rank_high": 3}))
        ('2–5', '3')
    """
    low, high = row["rank_low"], row["rank_high"]
    if pd.isna(low) or pd.isna(high):
        return "—"
    return str(int(low)) if low == high else f"{int(low)}–{int(high)}"


def _tier(row: pd.Series) -> str:
    return "—" if pd.isna(row["tier"]) else str(int(row["tier"]))


def cost_cell(run: RunLike) -> str:
    """The run's cost per sample, or what is known of it (never $0 for an unknown cost)."""
    usage = run.usage_summary().iloc[0]
    known, n = int(usage["n_cost_known"]), run.headline.n_samples
    cost = float(usage["cost_per_case"])
    if known == n and n > 0 and math.isfinite(cost):
        return format_money(cost)
    return f"unknown ({known} of {n} priced)" if known else "unknown"


def board_card_html(board: pd.DataFrame, costs: Sequence[str], note: str = "") -> str:
    """The board (`eb.leaderboard(runs)`) as a card, `costs[i]` beside row i: escaped text,
    inline styles, the board's note and `note` (why there is no scatter) under it."""
    # a grid of <div>s, not a <table>: a notebook's table styles (stripes, a row lit on
    # hover) would restyle it, and inline styles are all a card has (docs/notebooks.md)
    cell = f"padding: 2px 8px; border-top: {BORDER}"
    num = f"{cell}; text-align: right; white-space: nowrap"
    out = [
        f'<div style="padding: 2px 8px; {MUTED}; font-size: 11.5px; '
        f'text-align: {"left" if c in ("run", "score") else "right"}">{esc(c)}</div>'
        for c in _COLUMNS
    ]
    shown = board.head(MAX_BOARD_ROWS)
    for (_, r), cost in zip(shown.iterrows(), costs, strict=False):
        score = r["label"] if r["score"] is not None else "passed rate"
        mean, ci = format_pct_ci(r["mean"], r["ci_low"], r["ci_high"])
        out += [
            f'<div style="{num}; font-weight: 600">{esc(_tier(r))}</div>',
            f'<div style="{num}">{esc(rank_range(r))}</div>',
            f'<div style="{cell}; overflow-wrap: anywhere">'
            f"{amounts(esc(r['name'], _NAME_LIMIT))}</div>",
            f'<div style="{cell}; overflow-wrap: anywhere">'
            f"{amounts(esc(score, _NAME_LIMIT))}</div>",
            f'<div style="{num}; font-weight: 600">{esc(mean)}</div>',
            f'<div style="{num}; {MUTED}">{esc(ci)}</div>',
            f'<div style="{num}">{esc(format_pct(r["completion"]))}</div>',
            f'<div style="{num}">{esc(format_pct(r["passed_rate"]))}</div>',
            f'<div style="{num}">{amounts(esc(cost))}</div>',
        ]
    more = len(board) - len(shown)
    notes = [_TIERS, str(board.attrs.get("note") or ""), note] if len(board) > 1 else [note]
    if more:
        notes.append(f"… {more} more runs: see eb.leaderboard(runs)")
    note_html = "".join(
        f'<div data-evalbook="leaderboard-note" style="{MUTED}; font-size: 12px; '
        f'margin-top: 4px">{amounts(esc(n, 4000))}</div>'
        for n in notes
        if n
    )
    title = (
        f'<div style="font-weight: 600; margin-bottom: 4px">Leaderboard '
        f'<span style="{MUTED}; font-weight: 400; font-size: 12px">{_runs(len(board))}, '
        f"{_order(board)}</span></div>"
    )
    tracks = "auto auto minmax(80px, max-content) minmax(80px, max-content) repeat(5, auto)"
    table = (
        f'<div style="overflow-x: auto"><div style="display: inline-grid; '
        f'grid-template-columns: {tracks}; font-size: 12.5px">{"".join(out)}</div></div>'
    )
    return root(box(title + table + note_html, kind="leaderboard"), "board")


# what the tier and ranks columns mean, under every board of two or more runs
_TIERS = (
    "Tier: runs not separable from the tier's best run (paired tests on their shared cases, "
    "Holm-adjusted, 95 %); ranks: the ranks each run could hold."
)


def _order(board: pd.DataFrame) -> str:
    """How the rows are ordered: best first, or (no shared score) not ranked."""
    ranked = len(board) and board["rank"].notna().any()
    return "best first" if ranked else "not ranked (the runs share no score)"


def board_text(
    board: pd.DataFrame, costs: Sequence[str], note: str = "", fallback: str | None = None
) -> str:
    """The board as text (the view's text/plain form and repr), with the scatter's `fallback`
    text when there is a scatter."""
    lines = [f"Leaderboard · {_runs(len(board))}, {_order(board)}"]
    for (_, r), cost in zip(board.iterrows(), costs, strict=False):
        score = r["label"] if r["score"] is not None else "passed rate"
        mean, ci = format_pct_ci(r["mean"], r["ci_low"], r["ci_high"])
        lines.append(
            f"  tier {_tier(r)} · ranks {rank_range(r)} · "
            f"{shorten(visible(str(r['name'])), _NAME_LIMIT)} · "
            f"{shorten(visible(str(score)), _NAME_LIMIT)} {mean}"
            f"{' ' + ci if ci else ''} · completion {format_pct(r['completion'])} · "
            f"cost/sample {cost}"
        )
    for line in (_TIERS if len(board) > 1 else None, board.attrs.get("note"), note):
        if line:
            lines.append(visible(str(line)))
    if fallback is not None:
        lines.append(fallback)
    return "\n".join(lines)


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"
