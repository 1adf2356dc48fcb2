"""How runs and comparisons look in a notebook: widgets and `eb.show`.

`show` is the one public name: a run's or a comparison's widget, or, for a list of runs, the
leaderboard view (the board and cost against score). The static HTML and the figures they
show are `evalbook._render`'s (the cards need nothing beyond pandas); the widget (anywidget) and
plots (plotly) are imported only when asked for, so `import evalbook` stays light.
"""

from __future__ import annotations

import importlib
from typing import Any

from .._util._warn import warn
from ._board import board_view

__all__ = ["show"]

# Names this package exported up to 0.1.0, and the private module that holds each now. They
# stay importable (with a DeprecationWarning) for one release.
_DEPRECATED = {
    "CaseFilter": "evalbook._render._cases",
    "case_html": "evalbook._render._cases",
    "filter_cases": "evalbook._render._cases",
    "comparison_html": "evalbook._render._compare_html",
    "comparison_text": "evalbook._render._compare_html",
    "headline_html": "evalbook._render._run_html",
    "headline_only_html": "evalbook._render._run_html",
    "run_html": "evalbook._render._run_html",
    "summary_html": "evalbook._render._run_html",
    "unscored_html": "evalbook._render._run_html",
}


def __getattr__(name: str) -> Any:
    """The names exported up to 0.1.0, with a DeprecationWarning (removed in the next release)."""
    module = _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warn(
        f"evalbook.display.{name} is deprecated and will be removed in the next release; "
        "use eb.show(obj), or the object's own HTML repr",
        DeprecationWarning,
    )
    value: Any = getattr(importlib.import_module(module, __name__), name)
    return value


def show(obj: Any) -> Any:
    """Render an interactive view of a `Run`, a `Comparison` or a list of runs; return it.

    A run or a comparison is shown as one anywidget with tabs (a run: Headline, Scores,
    Unscored reasons, Cases, Case table; a comparison: Summary, Cases, Warnings), live in
    JupyterLab and marimo (and any front end that runs anywidgets). Its display bundle also
    carries static HTML and a text summary, so the result still shows where no kernel runs
    (nbconvert, GitHub).

    A list (or tuple) of runs is shown as the leaderboard view: `eb.leaderboard(runs)` as a
    card with each run's cost per sample, then the cost-vs-score scatter with its Pareto front
    (runs whose cost is not known for every sample are named in a note, never placed at $0).
    It is static HTML and a plotly figure, no widget (docs/notebooks.md).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": ["a"]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> view = eb.show(run)
        >>> view.tabs.titles
        ('Headline', 'Scores', 'Unscored reasons', 'Cases', 'Case table')
        >>> print(eb.show([run]).text().splitlines()[0])
        Leaderboard · 1 run, best first
    """
    if isinstance(obj, (list, tuple)):
        return board_view(obj)  # plotly (optional) is imported when its figure is built
    try:
        # anywidget is optional (the notebook extra): imported only when a widget is asked for
        from ._widgets import show as _show
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'eb.show needs anywidget: pip install "evalbook[notebook]" (or pip install anywidget)'
        ) from exc
    return _show(obj)
