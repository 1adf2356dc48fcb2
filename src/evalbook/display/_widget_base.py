"""What every interactive view shares (ipywidgets; imported lazily, only by `eb.show`).

`Static` is a VBox whose display bundle also carries static HTML and a text summary, so that
a notebook opened without a kernel (nbconvert, GitHub, a viewer without widget support) still
shows the results; the rest are the views' common controls and constants.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from .._render._cases import ALL
from .._render._style import MUTED, outcome_label

__all__ = [
    "LABEL_LIMIT",
    "LIVE_NOTE",
    "NONE",
    "OUTCOMES",
    "STATUSES",
    "WIDGET_VIEW",
    "Static",
    "html_output",
    "list_output",
    "whole_toggle",
]

LABEL_LIMIT = 160  # characters of a list entry (a case id can be any text)
# (label, value): the view's word for an outcome ("ran"), the tables' value ("passed")
OUTCOMES = [(ALL, ALL), *((outcome_label(o), o) for o in ("passed", "failed", "errored", "timed_out"))]
STATUSES = [ALL, "scored", "unscored", "error"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LIVE_NOTE = "(interactive view: run the notebook with widgets to use it; static view above)"
NONE = "(none)"


def html_output(value: str) -> Any:
    return w.HTML(value=value)


class Static(w.VBox):  # type: ignore[misc]
    """A VBox whose display bundle also holds static HTML and a text summary."""

    _static_html: str = ""
    _static_text: str = ""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = dict(super()._repr_mimebundle_(**kwargs) or {})
        data["text/html"] = self._static_html
        data["text/plain"] = self._static_text
        return data

    def _ipython_display_(self) -> None:
        """Publish the static view and the live widget as two outputs (docs/notebooks.md).

        A notebook executed by nbconvert saves the widgets' state, and nbconvert then exports a
        widget output as the widget alone (drawn by a script from a CDN, so blank offline) and
        never falls back to the bundle's text/html. The static view therefore goes first in an
        output of its own whose widget view names no model: JupyterLab and Notebook hide such a
        view, nbconvert and GitHub skip it and show the HTML. The live output keeps only a line
        of text for viewers without widgets, so the static view is not shown twice.
        """
        # display hook: IPython is only needed (and present) when a frontend displays the view
        from IPython import display as ipython_display

        display: Any = ipython_display.display  # untyped in IPython
        view = dict(super()._repr_mimebundle_() or {})
        live = view.get(WIDGET_VIEW, {})
        placeholder = {**live, "model_id": ""}
        static = {WIDGET_VIEW: placeholder, "text/html": self._static_html}
        display({**static, "text/plain": self._static_text}, raw=True)
        display({WIDGET_VIEW: live, "text/plain": LIVE_NOTE}, raw=True)


def whole_toggle() -> Any:
    """The expand control of a case view: long texts shown whole (up to `WHOLE_LIMIT`)."""
    return w.ToggleButton(
        value=False,
        description="whole texts",
        tooltip="show long outputs, inputs and rationales whole, not their start",
        layout=w.Layout(width="120px"),
    )


def list_output(view: Any, options: list[tuple[str, int]], count: str, empty: str) -> None:
    """Fill a view's case list (`count` above it, `empty` in the detail when it is empty)."""
    view.count.value = f'<span style="{MUTED}">{count}</span>'
    view.cases.options = options
    view.cases.value = options[0][1] if options else None
    if not options:
        view.detail.value = f'<div style="{MUTED}">{empty}</div>'
