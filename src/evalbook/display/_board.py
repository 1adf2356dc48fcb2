"""`eb.show([run_a, run_b, ...])`: the leaderboard view (docs/notebooks.md, Leaderboards).

The view is `eb.leaderboard(runs)` as a card (every name escaped, inline styles, the board's
note under it, each run's cost per sample beside its score) and, below it, the cost-vs-score
scatter with its Pareto front (`_render/_pareto_plot.py`); the card's HTML and text are
`_render/_board_html.py`'s. It is not a widget: both parts
are static, so it shows the same in JupyterLab, nbconvert HTML and on GitHub. In a notebook it
publishes two outputs, the card and then the figure (whose bundle embeds plotly.js, never a
CDN); its own bundle, for any other viewer, is the card and the figure's HTML in one.

A run whose cost is not known for every sample is named in a note, never placed at $0. When the
runs' headline scores differ (the board then ranks by passed cases) or no run's cost is fully
known, there is no scatter and the card says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from .._compare._leaderboard import board_order, leaderboard
from .._model._run_data import RunData
from .._render._board_html import board_card_html, board_text, cost_cell
from .._render._figure import fallback_text
from .._render._pareto_plot import pareto_figure

__all__ = ["BoardView", "board_view"]


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
        # the board's rows are ranked: the cost follows its run by position in `runs`
        self.costs = [cost_cell(runs[i]) for i in board_order(self.board)]

    def card_html(self) -> str:
        """The board as a card: escaped text, inline styles, its note and the scatter's."""
        return board_card_html(self.board, self.costs, self.note)

    def text(self) -> str:
        """The view as text (its text/plain form and repr)."""
        fallback = None if self.figure is None else fallback_text(self.figure)
        return board_text(self.board, self.costs, self.note, fallback)

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
