"""How runs and comparisons look in a notebook: static HTML, widgets, plots.

`show` is the one public name. The static HTML needs nothing beyond pandas; widgets
(ipywidgets) and plots (plotly) are imported only when asked for, so `import evalbook` stays
light.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["show"]

# Names this package exported up to 0.1.0, and the private module that holds each now. They
# stay importable (with a DeprecationWarning) for one release.
_DEPRECATED = {
    "CaseFilter": "._cases",
    "case_html": "._cases",
    "filter_cases": "._cases",
    "comparison_html": "._compare_html",
    "comparison_text": "._compare_html",
    "headline_html": "._html",
    "headline_only_html": "._html",
    "run_html": "._html",
    "summary_html": "._html",
    "unscored_html": "._html",
}


def __getattr__(name: str) -> Any:
    """The names exported up to 0.1.0, with a DeprecationWarning (removed in the next release)."""
    module = _DEPRECATED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"evalbook.display.{name} is deprecated and will be removed in the next release; "
        "use eb.show(obj), or the object's own HTML repr",
        DeprecationWarning,
        stacklevel=2,
    )
    value: Any = getattr(importlib.import_module(module, __name__), name)
    return value


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
        # ipywidgets is optional (the notebook extra): imported only when a widget is asked for
        from ._widgets import show as _show
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'eb.show needs ipywidgets: pip install "evalbook[notebook]" (or pip install ipywidgets)'
        ) from exc
    return _show(obj)
