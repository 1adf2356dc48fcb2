"""What every interactive view shares: one anywidget, its message protocol, its static fallback.

`View` is an `anywidget.AnyWidget` whose front end is `_static/view.js` (a plain ES module in
the wheel; no JS build). The kernel renders all the HTML: the front end sends `{action:
"hello"}` when it is drawn and `{action, value}` on each click or change; the view hands the
value to the control named by `action` and answers with `{html}` (a custom message, never a
synced trait, so a notebook saved with its widget state holds no copy of the view: restored
without a kernel it draws nothing, and the static HTML is the one view; docs/notebooks.md).
`View.act(action, value)` does what a message does, for tests and for Python callers.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import anywidget

from .._render._cases import ALL
from .._render._style import MUTED, esc, outcome_label
from ._controls import Choice, Control, HTMLBox, Tabs, Toggle

__all__ = [
    "LABEL_LIMIT",
    "LIVE_NOTE",
    "NONE",
    "OUTCOMES",
    "STATUSES",
    "WIDGET_VIEW",
    "Actions",
    "Lazy",
    "Pane",
    "View",
    "list_output",
    "whole_toggle",
]

LABEL_LIMIT = 160  # characters of a list entry (a case id can be any text)
# (label, value): the view's word for an outcome ("ran"), the tables' value ("passed")
OUTCOMES = [
    (ALL, ALL),
    *((outcome_label(o), o) for o in ("passed", "failed", "errored", "timed_out")),
]
STATUSES = [ALL, "scored", "unscored", "error"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
LIVE_NOTE = "(interactive view: run the notebook with a kernel to use it; static view above)"
NONE = "(none)"
_ESM = Path(__file__).with_name("_static") / "view.js"
C = TypeVar("C", bound=Control)
P = TypeVar("P", bound="Pane | HTMLBox")


class Actions:
    """The front-end actions of a group of controls: `add` names a control's actions, `act_on`
    one without a control (a row's "open"); `View.connect` routes them."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.handlers: dict[str, Any] = {}

    def add(self, control: C) -> C:
        self.handlers.update(control.handlers())
        return control

    def act_on(self, action: str, handler: Any) -> None:
        """Answer `action` (a front-end message without a control, e.g. a row's "open")."""
        self.handlers[action] = handler


class Pane(Actions, abc.ABC):
    """A tab of a view: its actions and the HTML it shows."""

    @abc.abstractmethod
    def html(self) -> str:
        """The pane as the front end shows it."""

    @property
    def value(self) -> str:
        """The pane's HTML as now shown."""
        return self.html()


class Lazy(Generic[P]):
    """A tab made the first time it is shown or acted on (`View.connect` routes its actions
    then): what a run's Cases and Case table tabs cost on a million samples is paid by the
    reader who opens them, not by every `eb.show`."""

    def __init__(self, prefix: str, make: Callable[[], P]) -> None:
        self.prefix = prefix
        self._make = make
        self._made: P | None = None

    @property
    def made(self) -> bool:
        """Whether the tab has been made."""
        return self._made is not None

    @property
    def pane(self) -> P:
        """The tab, made on first use."""
        if self._made is None:
            self._made = self._make()
        return self._made

    def html(self) -> str:
        return self.pane.html()

    @property
    def value(self) -> str:
        """The tab's HTML as now shown."""
        return self.html()


class View(anywidget.AnyWidget):
    """The one widget of `eb.show`: tabs of panes, drawn by the kernel, sent on request."""

    _esm = _ESM.read_text(encoding="utf-8")

    _static_html: str = ""
    _static_text: str = ""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.handlers: dict[str, Any] = {}
        self._lazy: dict[str, Lazy[Any]] = {}  # by prefix: the tabs not made yet
        self.sent = 0  # HTML messages sent (a test's view of the protocol)
        self.on_msg(self._on_msg)

    def connect(self, tabs: Tabs | None, panes: list[Any]) -> None:
        """Route the tab bar's and each pane's actions to them (a `Lazy` tab's once made)."""
        self.tabs = tabs
        if tabs is not None:
            self.handlers.update(tabs.handlers())
        for pane in panes:
            if isinstance(pane, Lazy):
                self._lazy[pane.prefix] = pane
            else:
                self.handlers.update(pane.handlers)

    def made(self, lazy: Lazy[P]) -> P:
        """A lazy tab's pane, made now if it was not, its actions routed."""
        pane = lazy.pane
        if self._lazy.pop(lazy.prefix, None) is not None:
            self.handlers.update(getattr(pane, "handlers", {}))
        return pane

    def header_html(self) -> str:
        return ""

    def html(self) -> str:
        """The view as the front end shows it: its header, the tab bar and the shown tab."""
        body = ""
        if self.tabs is not None:
            pane = self.tabs.children[self.tabs.selected_index]
            if isinstance(pane, Lazy):
                pane = self.made(pane)
            body = self.tabs.html() + pane.html()
        return (
            f'<div data-evalbook="view" style="color: inherit; max-width: 100%">'
            f"{self.header_html()}{body}</div>"
        )

    def act(self, action: str, value: Any = "") -> str:
        """Do what the front end's `{action, value}` message does; return the new HTML.

        Raises:
            KeyError: When no control of the view answers `action` ("hello" needs none).
        """
        if action != "hello":
            if action not in self.handlers:  # a tab not made yet: its actions are its prefix's
                lazy = self._lazy.get(action.split(".", 1)[0])
                if lazy is not None:
                    self.made(lazy)
            self.handlers[action]("" if value is None else str(value))
        return self.html()

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        action, value = str(content.get("action", "")), content.get("value", "")
        try:
            html = self.act(action, value)
        except KeyError:
            html = self.html()  # a stale or unknown action: the view as it is
        except Exception as exc:  # a failing refresh must show, not vanish in the kernel log
            note = f"could not do {action!r}: {type(exc).__name__}: {exc}"
            html = f'<div style="color: #dc2626">{esc(note)}</div>' + self.html()
        self.sent += 1
        self.send({"html": html})

    def _widget_bundle(self) -> dict[str, Any]:
        bundle: Any = anywidget.AnyWidget._repr_mimebundle_(self)
        if isinstance(bundle, tuple):  # anywidget returns (data, metadata)
            bundle = bundle[0]
        return dict(bundle or {})

    # a dict, not anywidget's (data, metadata): IPython takes either, and nbconvert's fallback
    # and the tests read the static HTML from it
    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:  # type: ignore[override]
        data = self._widget_bundle()
        data["text/html"] = self._static_html
        data["text/plain"] = self._static_text
        return data

    def _ipython_display_(self) -> None:
        """Publish the static view and the live widget as two outputs (docs/notebooks.md).

        nbconvert exports a widget output as the widget alone (drawn by a script from a CDN)
        and never falls back to the bundle's text/html. The static view therefore goes first
        in an output of its own whose widget view names no model: JupyterLab and Notebook hide
        such a view, nbconvert and GitHub skip it and show the HTML. The live output keeps
        only a line of text; its widget state holds no HTML (it is sent by message), so an
        exported page shows each view once, online or not.
        """
        # display hook: IPython is only needed (and present) when a frontend displays the view
        from IPython import display as ipython_display

        display: Any = ipython_display.display  # untyped in IPython
        live = self._widget_bundle().get(WIDGET_VIEW, {})
        placeholder = {**live, "model_id": ""}
        static = {WIDGET_VIEW: placeholder, "text/html": self._static_html}
        display({**static, "text/plain": self._static_text}, raw=True)
        display({WIDGET_VIEW: live, "text/plain": LIVE_NOTE}, raw=True)


def whole_toggle(name: str) -> Toggle:
    """The expand control of a case view: long texts shown whole (up to `WHOLE_LIMIT`)."""
    return Toggle(
        name,
        description="whole texts",
        tooltip="show long outputs, inputs and rationales whole, not their start",
    )


def list_output(
    cases: Choice, count_box: HTMLBox, detail: HTMLBox, options: list[tuple[str, int]],
    count: str, empty: str,
) -> None:  # fmt: skip
    """Fill a view's case list (`count` above it, `empty` in the detail when it is empty)."""
    count_box.value = f'<span style="{MUTED}">{count}</span>'
    cases.options = options
    if options:
        first = options[0][1]
        if cases.value != first:
            cases.value = first
        else:  # the same position, another list: show it again
            cases.notify()
    else:
        detail.value = f'<div style="{MUTED}">{empty}</div>'
