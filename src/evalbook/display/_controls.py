"""The controls of `eb.show`'s views: Python state, drawn as HTML the view's front end sends back.

Each control holds its value in the kernel and draws itself as a `<select>`, `<input>` or
`<button>` carrying `data-eb-action` (its name); `_static/view.js` sends `{action, value}` on a
click or change, and the view hands the value to the control's handler (`handlers`). Setting
`.value` from Python (the tests, or another control) runs the same observers, once per change.
Every label is escaped here; a `<select>`'s options are sent as their positions, never as their
values, so no value (None, False, a column label with markup) needs a spelling in HTML.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from typing import Any

from .._render._paging import Page, page_of
from .._render._style import MUTED, esc

__all__ = [
    "CONTROL_STYLE",
    "Button",
    "Choice",
    "Control",
    "Field",
    "HTMLBox",
    "Number",
    "Pager",
    "Range",
    "Tabs",
    "Text",
    "Toggle",
]

Handler = Callable[[str], None]
Observer = Callable[[Any], None]

# One look for every control, light or dark: the theme's text colour, a translucent border
CONTROL_STYLE = (
    "font: inherit; font-size: 12px; color: inherit; background: transparent; "
    "border: 1px solid rgba(127, 127, 127, 0.5); border-radius: 3px; padding: 2px 6px; "
    "margin: 0; box-sizing: border-box"
)
_LABEL_STYLE = (
    "display: inline-flex; align-items: center; gap: 4px; margin: 2px 12px 2px 0; font-size: 12px"
)
LABEL_ESC = 400  # characters of an option's or a button's text (the callers shorten first)


def _label(description: str, inner: str) -> str:
    words = f'<span style="{MUTED}">{esc(description, 80)}</span>' if description else ""
    return f'<label style="{_LABEL_STYLE}">{words}{inner}</label>'


class HTMLBox:
    """A piece of a view that is HTML only (a count, a case's detail): `.value` is its HTML."""

    def __init__(self, value: str = "") -> None:
        self.value = value

    def html(self) -> str:
        return self.value


class Control(abc.ABC):
    """A named control: `value`, observers run on each change, `handlers` for the front end."""

    def __init__(self, name: str, value: Any) -> None:
        self.name = name
        self._value = value
        self._observers: list[Observer] = []

    @property
    def value(self) -> Any:
        return self._value

    @value.setter
    def value(self, new: Any) -> None:
        old, self._value = self._value, self._coerce(new)
        if self._value != old or type(self._value) is not type(old):
            for observer in list(self._observers):
                observer({"name": "value", "old": old, "new": self._value})

    def _coerce(self, new: Any) -> Any:
        return new

    def notify(self) -> None:
        """Run the observers as if the value had changed (the same value, new meaning)."""
        for observer in list(self._observers):
            observer({"name": "value", "old": self._value, "new": self._value})

    def observe(self, observer: Observer) -> None:
        """Call `observer` (with a change dict: name, old, new) after each change of value."""
        self._observers.append(observer)

    @abc.abstractmethod
    def handlers(self) -> dict[str, Handler]:
        """The actions this control answers, by name."""

    @abc.abstractmethod
    def html(self) -> str:
        """The control as the front end shows it (escaped)."""


class Field(Control):
    """A control that answers one action, its name, with the value the front end sends."""

    @abc.abstractmethod
    def receive(self, value: str) -> None:
        """A value sent by the front end."""

    def handlers(self) -> dict[str, Handler]:
        return {self.name: self.receive}


class Choice(Field):
    """A dropdown (or, with `rows`, a list): `options` are values or (label, value) pairs.

    Like a dropdown, it is never blank: setting `options` keeps the value when it is still
    offered, else picks the first option (None when there is none).
    """

    def __init__(
        self,
        name: str,
        options: Sequence[Any],
        value: Any = None,
        *,
        description: str = "",
        rows: int = 0,
        width: str = "",
    ) -> None:
        self.description, self.rows, self.width = description, rows, width
        self._options: tuple[Any, ...] = tuple(options)
        super().__init__(name, None)
        values = self.values
        self._value = value if value in values else (values[0] if values else None)

    @property
    def options(self) -> tuple[Any, ...]:
        return self._options

    @options.setter
    def options(self, options: Sequence[Any]) -> None:
        self._options = tuple(options)
        values = self.values
        keep = any(v == self._value and type(v) is type(self._value) for v in values)
        self.value = self._value if keep else (values[0] if values else None)

    @property
    def pairs(self) -> list[tuple[str, Any]]:
        """(label, value) of each option."""
        return [o if isinstance(o, tuple) else (str(o), o) for o in self._options]

    @property
    def values(self) -> list[Any]:
        return [v for _, v in self.pairs]

    @property
    def label(self) -> str:
        """The label of the chosen option ("" when there is none)."""
        return next((label for label, v in self.pairs if self._same(v)), "")

    def _same(self, v: Any) -> bool:
        return bool(v == self._value and type(v) is type(self._value))

    def _coerce(self, new: Any) -> Any:
        if self._options and not any(v == new for v in self.values):
            raise ValueError(f"{self.name}: {new!r} is not one of its options")
        return new

    def receive(self, value: str) -> None:
        # the front end sends an option's position (a stale one, after the options changed,
        # is ignored)
        try:
            i = int(value)
        except ValueError:
            return
        pairs = self.pairs
        if 0 <= i < len(pairs):
            self.value = pairs[i][1]

    def html(self) -> str:
        options = "".join(
            f'<option value="{i}"{" selected" if self._same(v) else ""}>{esc(label, LABEL_ESC)}'
            "</option>"
            for i, (label, v) in enumerate(self.pairs)
        )
        # a list is as tall as its entries, up to `rows` (then it scrolls)
        size = f' size="{min(self.rows, max(len(self._options), 2))}"' if self.rows else ""
        # a list keeps its scroll position across the view's redraws (view.js)
        size += f' data-eb-scroll="{esc(self.name)}"' if self.rows else ""
        width = f"; width: {self.width}" if self.width else ""
        select = (
            f'<select data-eb-action="{esc(self.name)}"{size} '
            f'aria-label="{esc(self.description or self.name, 80)}" '
            f'style="{CONTROL_STYLE}{width}">{options}</select>'
        )
        if self.rows:
            return select
        return _label(self.description, select)


class Range(Control):
    """A value range (low, high) within [`low`, `high`], as two number fields."""

    def __init__(
        self, name: str, value: tuple[float, float] = (0.0, 1.0), *, step: float = 0.05,
        description: str = "value", bounds: tuple[float, float] = (0.0, 1.0),
    ) -> None:  # fmt: skip
        self.step, self.description, self.bounds = step, description, bounds
        super().__init__(name, self._coerce(value))

    def _coerce(self, new: Any) -> tuple[float, float]:
        lo, hi = self.bounds
        low, high = (min(max(float(x), lo), hi) for x in new)
        return (min(low, high), max(low, high))

    def handlers(self) -> dict[str, Handler]:
        return {f"{self.name}.low": self._low, f"{self.name}.high": self._high}

    def _low(self, value: str) -> None:
        try:
            self.value = (float(value), self.value[1])
        except ValueError:
            return

    def _high(self, value: str) -> None:
        try:
            self.value = (self.value[0], float(value))
        except ValueError:
            return

    def html(self) -> str:
        lo, hi = self.bounds
        fields = []
        for part, x in zip(("low", "high"), self.value, strict=True):
            fields.append(
                f'<input type="number" data-eb-action="{esc(self.name)}.{part}" '
                f'aria-label="{esc(self.description, 80)} {part}" min="{lo:g}" max="{hi:g}" '
                f'step="{self.step:g}" value="{x:.2f}" style="{CONTROL_STYLE}; width: 64px">'
            )
        return _label(self.description, f"{fields[0]}<span>–</span>{fields[1]}")


class Toggle(Field):
    """A checkbox: `value` True or False."""

    def __init__(self, name: str, value: bool = False, *, description: str, tooltip: str = ""):
        self.description, self.tooltip = description, tooltip
        super().__init__(name, bool(value))

    def _coerce(self, new: Any) -> bool:
        return bool(new)

    def receive(self, value: str) -> None:
        self.value = value.lower() in ("true", "1", "on")

    def html(self) -> str:
        checked = " checked" if self.value else ""
        tip = f' title="{esc(self.tooltip)}"' if self.tooltip else ""
        return (
            f'<label{tip} style="{_LABEL_STYLE}"><input type="checkbox" '
            f'data-eb-action="{esc(self.name)}"{checked} style="margin: 0">'
            f"<span>{esc(self.description, 80)}</span></label>"
        )


class Text(Field):
    """A search box: the front end sends its text after a pause in typing."""

    def __init__(self, name: str, value: str = "", *, description: str = "", placeholder: str = ""):
        self.description, self.placeholder = description, placeholder
        super().__init__(name, str(value))

    def _coerce(self, new: Any) -> str:
        return str(new)

    def receive(self, value: str) -> None:
        self.value = value

    def html(self) -> str:
        return _label(
            self.description,
            f'<input type="search" data-eb-action="{esc(self.name)}" value="{esc(self.value)}" '
            f'placeholder="{esc(self.placeholder, 80)}" '
            f'aria-label="{esc(self.description or self.placeholder, 80)}" '
            f'style="{CONTROL_STYLE}; width: 200px">',
        )


class Number(Field):
    """A number field within `bounds` (a value out of them is clipped)."""

    def __init__(
        self, name: str, value: float, *, bounds: tuple[float, float], step: float = 0.01,
        description: str = "",
    ) -> None:  # fmt: skip
        self.bounds, self.step, self.description = bounds, step, description
        super().__init__(name, self._coerce(value))

    def _coerce(self, new: Any) -> float:
        lo, hi = self.bounds
        return min(max(float(new), lo), hi)

    def receive(self, value: str) -> None:
        try:
            self.value = float(value)
        except ValueError:
            return

    def html(self) -> str:
        lo, hi = self.bounds
        return _label(
            self.description,
            f'<input type="number" data-eb-action="{esc(self.name)}" min="{lo:g}" max="{hi:g}" '
            f'step="{self.step:g}" value="{self.value:g}" style="{CONTROL_STYLE}; width: 90px">',
        )


class Button(Field):
    """A button: `click()` (or the front end's click) runs its callbacks."""

    def __init__(
        self, name: str, description: str, *, tooltip: str = "", style: str = "",
        disabled: bool = False,
    ) -> None:  # fmt: skip
        self.description, self.tooltip, self.style, self.disabled = (
            description, tooltip, style, disabled,
        )  # fmt: skip
        self._clicks: list[Callable[[], object]] = []
        super().__init__(name, None)

    def on_click(self, callback: Callable[[], object]) -> None:
        self._clicks.append(callback)

    def click(self) -> None:
        if self.disabled:
            return
        for callback in list(self._clicks):
            callback()

    def receive(self, value: str) -> None:
        self.click()

    def html(self) -> str:
        tip = f' title="{esc(self.tooltip)}"' if self.tooltip else ""
        disabled = " disabled" if self.disabled else ""
        return (
            f'<button data-eb-action="{esc(self.name)}"{tip}{disabled} '
            f'style="{CONTROL_STYLE}; cursor: pointer{"; " + self.style if self.style else ""}">'
            f"{esc(self.description, LABEL_ESC)}</button>"
        )


class Pager(Field):
    """Which page of a long list is shown (`value`: its 0-based number); first, previous, a
    page number to jump to, next, last; `page` says which rows and `Page.label` the words."""

    def __init__(self, name: str, size: int, total: int = 0) -> None:
        self.size, self.total = size, total
        super().__init__(name, 0)

    def _coerce(self, new: Any) -> int:
        return page_of(self.total, int(new), self.size).number

    @property
    def page(self) -> Page:
        return page_of(self.total, self.value, self.size)

    def reset(self, total: int) -> None:
        """A new list of `total` rows: back to its first page (observers not run)."""
        self.total, self._value = total, 0

    def receive(self, value: str) -> None:
        page = self.page
        steps = {"first": 0, "prev": page.number - 1, "next": page.number + 1,
                 "last": page.n_pages - 1}  # fmt: skip
        if value in steps:
            self.value = steps[value]
            return
        try:
            self.value = int(value) - 1  # the page number a reader typed (1-based)
        except ValueError:
            return

    def html(self) -> str:
        page = self.page
        name = esc(self.name)
        first, last = page.number == 0, page.number == page.n_pages - 1

        def button(value: str, text: str, title: str, off: bool) -> str:
            disabled = " disabled" if off else ""
            return (
                f'<button data-eb-action="{name}" data-eb-value="{value}" title="{title}"'
                f'{disabled} style="{CONTROL_STYLE}; cursor: pointer">{text}</button>'
            )

        jump = (
            f'<input type="number" data-eb-action="{name}" aria-label="page number" min="1" '
            f'max="{page.n_pages}" value="{page.number + 1}" '
            f'style="{CONTROL_STYLE}; width: 70px">'
        )
        return (
            f'<div data-evalbook="pager" style="display: flex; flex-wrap: wrap; gap: 4px; '
            f'align-items: center; margin: 4px 0">'
            f"{button('first', '« first', 'first page', first)}"
            f"{button('prev', '‹ previous', 'previous page', first)}{jump}"
            f"{button('next', 'next ›', 'next page', last)}"
            f"{button('last', 'last »', 'last page', last)}"
            f'<span style="{MUTED}; font-size: 12px; margin-left: 6px">{esc(page.label)}</span>'
            "</div>"
        )


class Tabs(Field):
    """The tab bar: `value` (also `selected_index`) is the shown tab's position."""

    def __init__(self, name: str, titles: Sequence[str], children: Sequence[Any]) -> None:
        self.titles, self.children = tuple(titles), tuple(children)
        super().__init__(name, 0)

    def _coerce(self, new: Any) -> int:
        i = int(new)
        if not 0 <= i < len(self.titles):
            raise ValueError(f"no tab {i}: there are {len(self.titles)}")
        return i

    @property
    def selected_index(self) -> int:
        return int(self.value)

    @selected_index.setter
    def selected_index(self, i: int) -> None:
        self.value = i

    def get_title(self, i: int) -> str:
        return self.titles[i]

    def receive(self, value: str) -> None:
        try:
            self.value = int(value)
        except ValueError:
            return

    def html(self) -> str:
        tabs = []
        for i, title in enumerate(self.titles):
            on = i == self.value
            line = "currentColor" if on else "transparent"
            tabs.append(
                f'<button role="tab" aria-selected="{"true" if on else "false"}" '
                f'data-eb-action="{esc(self.name)}" data-eb-value="{i}" style="font: inherit; '
                f"font-size: 13px; color: inherit; background: transparent; border: 0; "
                f"border-bottom: 2px solid {line}; padding: 4px 10px; margin: 0; cursor: pointer; "
                f'{"font-weight: 600" if on else "opacity: 0.75"}">{esc(title, 120)}</button>'
            )
        return (
            '<div role="tablist" data-evalbook="tabs" style="display: flex; flex-wrap: wrap; '
            'border-bottom: 1px solid rgba(127, 127, 127, 0.35); margin: 4px 0 8px">'
            f"{''.join(tabs)}</div>"
        )
