"""How runs and comparisons look in a notebook: static HTML, widgets, plots.

The static HTML needs nothing beyond pandas; widgets (ipywidgets) and plots (plotly) are
imported only when asked for, so `import evalbook` stays light.
"""

from __future__ import annotations

from typing import Any

from ._cases import CaseFilter, case_html, filter_cases
from ._compare_html import comparison_html, comparison_text
from ._html import headline_html, headline_only_html, run_html, summary_html, unscored_html

__all__ = [
    "CaseFilter",
    "case_html",
    "comparison_html",
    "comparison_text",
    "filter_cases",
    "headline_html",
    "headline_only_html",
    "run_html",
    "show",
    "summary_html",
    "unscored_html",
]


def show(obj: Any) -> Any:
    """Render an interactive view of a `Run` or `Comparison` and return the widget.

    The widget has tabs (a run: Headline, Scores, Unscored reasons, Cases; a comparison:
    Summary, Cases, Warnings). Its display bundle also carries static HTML and a text summary,
    so the result still shows where widgets don't (nbconvert, GitHub, no kernel).

    Example:
        >>> import pandas as pd, evalbook as eb
        >>> run = eb.run(pd.DataFrame({"x": ["a"]}), task=lambda x: x,
        ...              scorers=[lambda output: 1.0], store=None, progress=False)
        >>> view = eb.show(run)
        >>> [view.tabs.get_title(i) for i in range(4)]
        ['Headline', 'Scores', 'Unscored reasons', 'Cases']
    """
    try:
        from ._widgets import show as _show
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'eb.show needs ipywidgets: pip install "evalbook[notebook]" (or pip install ipywidgets)'
        ) from exc
    return _show(obj)
