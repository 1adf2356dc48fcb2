"""`eb.show([run_a, run_b, ...])`: the leaderboard view (docs/notebooks.md, Leaderboards).

The view is `eb.leaderboard(runs)` as a card (every name escaped, inline styles, the board's
note under it, each run's cost per sample beside its score) and, below it, the cost-vs-score
scatter with its Pareto front (`_plots_pareto.pareto_figure`). It is not a widget: both parts
are static, so it shows the same in JupyterLab, nbconvert HTML and on GitHub. In a notebook it
publishes two outputs, the card and then the figure (whose bundle embeds plotly.js, never a
CDN); its own bundle, for any other viewer, is the card and the figure's HTML in one.

A run whose cost is not known for every sample is named in a note, never placed at $0. When the
runs' headline scores differ (the board then ranks by passed cases) or no run's cost is fully
known, there is no scatter and the card says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._compare._leaderboard import leaderboard
from .._model._run_data import RunData
from .._render._cost import amounts
from .._render._pareto_plot import pareto_figure
from .._render._style import BORDER, MUTED, box, esc, root, shorten
from .._util._fmt import format_ci, format_money, format_pct
from .._util._text import visible

__all__ = ["MAX_BOARD_ROWS", "BoardView", "board_view"]

# Rows the card lists: the runs of a sweep may be many, and each row is markup
MAX_BOARD_ROWS = 100
_NAME_LIMIT = 120  # characters of a run's name in a row (the board keeps it whole)
_COLUMNS = ["rank", "run", "score", "mean", "95% CI", "completion", "passed", "cost / sample"]


def board_view(runs: Sequence[Any]) -> BoardView:
    """The leaderboard view of `runs` (a list or tuple of runs, as `eb.show` takes them).

    Raises:
        ValueError: When `runs` is empty.
        TypeError: When an item is not a run.
    """
    if not len(runs):
        raise ValueError(
            "eb.show([]) got no runs; pass the runs to rank, e.g. eb.show([run_a, run_b])"
        )
    for i, run in enumerate(runs):
        if not isinstance(run, RunData):
            raise TypeError(
                f"eb.show([...]) takes a list of runs, and item {i} is a {type(run).__name__}; "
                "load a stored run first with eb.load_run(path)"
            )
    return BoardView(list(runs))


def _cost_cell(run: RunData) -> str:
    """The run's cost per sample, or what is known of it (never $0 for an unknown cost)."""
    usage = run.usage_summary().iloc[0]
    known, n = int(usage["n_cost_known"]), run.headline.n_samples
    cost = float(usage["cost_per_case"])
    if known == n and n > 0 and math.isfinite(cost):
        return format_money(cost)
    return f"unknown ({known} of {n} priced)" if known else "unknown"


class BoardView:
    """`eb.show([run_a, run_b, ...])`: the board card, then the cost-vs-score scatter.

    `board` is `eb.leaderboard(runs)`; `figure` the scatter (None when there is none, with the
    reason in `note`).
    """

    def __init__(self, runs: list[RunData]) -> None:
        self.runs = runs
        self.board: pd.DataFrame = leaderboard(runs)
        self.figure: Any = None
        self.note = ""
        if len({run.headline.score for run in runs}) > 1:
            self.note = (
                "No cost-vs-score scatter: the runs' headline scores differ, and one axis "
                "cannot hold two scores; declare the same primary score in every run."
            )
        else:
            figure = pareto_figure(runs)
            placed = len(figure.data[1].x)
            if placed:
                self.figure = figure
            else:
                # the figure's note: "not placed: 'a' (cost known for 0 of 4 samples), ..."
                unplaced = " · ".join(str(a.text) for a in figure.layout.annotations)
                self.note = (
                    "No cost-vs-score scatter: no run has a known cost for every sample "
                    f"(record it with ctx.record_usage, docs/cost.md); {unplaced}"
                )
        costs = {id(run): _cost_cell(run) for run in runs}
        # the board's rows are ranked: the cost follows its run by position in `runs`
        order = _board_order(runs)
        self.costs = [costs[id(runs[i])] for i in order]

    def card_html(self) -> str:
        """The board as a card: escaped text, inline styles, its note and the scatter's."""
        # a grid of <div>s, not a <table>: a notebook's table styles (stripes, a row lit on
        # hover) would restyle it, and inline styles are all a card has (docs/notebooks.md)
        cell = f"padding: 2px 8px; border-top: {BORDER}"
        num = f"{cell}; text-align: right; white-space: nowrap"
        out = [
            f'<div style="padding: 2px 8px; {MUTED}; font-size: 11.5px; '
            f'text-align: {"left" if c in ("run", "score") else "right"}">{esc(c)}</div>'
            for c in _COLUMNS
        ]
        shown = self.board.head(MAX_BOARD_ROWS)
        for (_, r), cost in zip(shown.iterrows(), self.costs, strict=False):
            score = r["label"] if r["score"] is not None else "passed rate"
            out += [
                f'<div style="{num}">{int(r["rank"])}</div>',
                f'<div style="{cell}; overflow-wrap: anywhere">'
                f"{amounts(esc(r['name'], _NAME_LIMIT))}</div>",
                f'<div style="{cell}; overflow-wrap: anywhere">'
                f"{amounts(esc(score, _NAME_LIMIT))}</div>",
                f'<div style="{num}; font-weight: 600">{esc(format_pct(r["mean"]))}</div>',
                f'<div style="{num}; {MUTED}">{esc(format_ci(r["ci_low"], r["ci_high"]))}</div>',
                f'<div style="{num}">{esc(format_pct(r["completion"]))}</div>',
                f'<div style="{num}">{esc(format_pct(r["passed_rate"]))}</div>',
                f'<div style="{num}">{amounts(esc(cost))}</div>',
            ]
        more = len(self.board) - len(shown)
        notes = [str(self.board.attrs.get("note") or ""), self.note]
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
            f'<span style="{MUTED}; font-weight: 400; font-size: 12px">{_runs(len(self.board))}, '
            "best first</span></div>"
        )
        tracks = "auto minmax(80px, max-content) minmax(80px, max-content) repeat(5, auto)"
        table = (
            f'<div style="overflow-x: auto"><div style="display: inline-grid; '
            f'grid-template-columns: {tracks}; font-size: 12.5px">{"".join(out)}</div></div>'
        )
        return root(box(title + table + note_html, kind="leaderboard"), "board")

    def text(self) -> str:
        """The view as text (its text/plain form and repr)."""
        lines = [f"Leaderboard · {_runs(len(self.board))}, best first"]
        for (_, r), cost in zip(self.board.iterrows(), self.costs, strict=False):
            score = r["label"] if r["score"] is not None else "passed rate"
            ci = format_ci(r["ci_low"], r["ci_high"])
            lines.append(
                f"  {int(r['rank'])}. {shorten(visible(str(r['name'])), _NAME_LIMIT)} · "
                f"{shorten(visible(str(score)), _NAME_LIMIT)} {format_pct(r['mean'])}"
                f"{' ' + ci if ci else ''} · completion {format_pct(r['completion'])} · "
                f"cost/sample {cost}"
            )
        for note in (self.board.attrs.get("note"), self.note):
            if note:
                lines.append(visible(str(note)))
        if self.figure is not None:
            lines.append(self.figure._fallback[1])
        return "\n".join(lines)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        html = self.card_html()
        if self.figure is not None:
            html += self.figure._repr_mimebundle_()["text/html"]
        return {"text/html": html, "text/plain": self.text()}

    def _ipython_display_(self) -> None:
        """Two outputs: the card, then the figure with its own bundle (plotly's mimetype for
        JupyterLab, its export-safe HTML for nbconvert), as `run.plot.*()` shows one."""
        # display hook: IPython is only needed (and present) when a frontend displays the view
        from IPython import display as ipython_display

        display: Any = ipython_display.display  # untyped in IPython
        display({"text/html": self.card_html(), "text/plain": self.text()}, raw=True)
        if self.figure is not None:
            display(self.figure._repr_mimebundle_(), raw=True)

    def __repr__(self) -> str:
        return self.text()


def _runs(n: int) -> str:
    return f"{n} run{'' if n == 1 else 's'}"


def _board_order(runs: list[RunData]) -> list[int]:
    """The position in `runs` of each board row: the board of the same runs named by their
    positions (names never change the ranking, and two runs may share one)."""
    return [int(name) for name in leaderboard({str(i): r for i, r in enumerate(runs)})["name"]]
