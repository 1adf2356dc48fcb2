"""An HTML page read as its reader reads it: the visible text, and the plotly figures it draws.

Tests compare what is shown, never how a serializer spelled it. Between library versions the
same figure's JSON writes `·` as `\\u00b7` (plotly's json engine) or raw (orjson), `<` `>` `/` as
`\\u003c` `\\u003e` `\\u002f`, and numbers as lists or as base64 typed arrays; nbconvert, pandas
and `html.escape` each choose their own entities. So a page is parsed here: its text with the
entities decoded and the scripts left out (a browser without JavaScript), and the arguments of
each `Plotly.newPlot(...)` call decoded with `json` (what plotly.js draws).
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import numpy as np

# Tags that show something without JavaScript.
_MEDIA = {"img", "svg", "video", "canvas", "iframe"}
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
_NEW_PLOT = "Plotly.newPlot("


def _squeezed(chunks: list[str]) -> str:
    return re.sub(r"\s+", " ", "".join(chunks)).strip()


def _decoded(value: Any) -> Any:
    """JSON from plotly with its typed arrays (`{"dtype": "f8", "bdata": ...}`) as lists."""
    if isinstance(value, dict):
        if {"dtype", "bdata"} <= set(value) <= {"dtype", "bdata", "shape"}:
            # plotly writes numpy's bytes as they are in memory: little-endian on every CI machine
            dtype = np.dtype(value["dtype"]).newbyteorder("<")
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=dtype)
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.tolist()
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


@dataclass
class Figure:
    """One `Plotly.newPlot(div_id, data, layout, config)` call, its arguments decoded."""

    div_id: str
    data: list[dict[str, Any]]
    layout: dict[str, Any]
    config: dict[str, Any]

    @property
    def title(self) -> str:
        title = self.layout.get("title", "")
        return str(title.get("text", "") if isinstance(title, dict) else title)


def figures_in(script: str) -> list[Figure]:
    """Every `Plotly.newPlot(...)` call in a script's text (a call whose arguments are not JSON
    fails the test: the chart would not be what the page says)."""
    found: list[Figure] = []
    decoder = json.JSONDecoder()
    start = script.find(_NEW_PLOT)
    while start >= 0:
        pos, args = start + len(_NEW_PLOT), []
        for _ in range(4):  # div id, data, layout, config
            while pos < len(script) and script[pos] in " \t\r\n,":
                pos += 1
            try:
                value, pos = decoder.raw_decode(script, pos)
            except json.JSONDecodeError as exc:
                raise AssertionError(f"Plotly.newPlot argument is not JSON: {exc}") from exc
            args.append(_decoded(value))
        found.append(Figure(*args))
        start = script.find(_NEW_PLOT, pos)
    return found


@dataclass
class Output:
    """One exported output area (nbconvert): its visible text, media, figures, markers."""

    cell: int
    media: int = 0
    widget: bool = False  # a widget placeholder: blank without the widget manager
    plot: bool = False  # a plotly figure: drawn by plotly.js
    classes: str = ""
    figures: list[Figure] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # its data-evalbook values, in order
    chunks: list[str] = field(default_factory=list, repr=False)

    @property
    def text(self) -> str:
        return _squeezed(self.chunks)


@dataclass
class Page(HTMLParser):
    """A page (or a display bundle's HTML) as a browser without JavaScript shows it.

    `text` is the visible text (a tag separates words, whitespace squeezed, entities decoded);
    `figures` the plotly calls of its scripts; `outputs` the output areas of an nbconvert page.
    """

    outputs: list[Output] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)  # every data-evalbook value, in order
    script_sources: list[str] = field(default_factory=list)  # every <script src=...>
    plotly_bundles: int = 0  # scripts that are plotly.js itself, inlined
    _chunks: list[str] = field(default_factory=list, repr=False)
    _stack: list[tuple[str, bool, bool]] = field(default_factory=list, repr=False)
    _script: list[str] | None = field(default=None, repr=False)
    _cell: int = -1
    _current: Output | None = None

    def __post_init__(self) -> None:
        super().__init__(convert_charrefs=True)

    @classmethod
    def of(cls, html: str) -> Page:
        page = cls()
        page.feed(html)
        page.close()
        return page

    @property
    def text(self) -> str:
        return _squeezed(self._chunks)

    @property
    def remote_scripts(self) -> list[str]:
        return [s for s in self.script_sources if s.startswith(("http:", "https:", "//"))]

    @property
    def inline_plotly(self) -> bool:
        return self.plotly_bundles > 0

    def _visible(self, data: str) -> None:
        if any(hidden for _, _, hidden in self._stack):
            return
        self._chunks.append(data)
        if self._current is not None:
            self._current.chunks.append(data)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        classes = a.get("class", "").split()
        if tag == "script" and "src" in a:
            self.script_sources.append(a["src"])
        if "data-evalbook" in a:
            self.marks.append(a["data-evalbook"])
            if self._current is not None:
                self._current.marks.append(a["data-evalbook"])
        self._visible(" ")  # a tag separates words
        if tag in _VOID:
            if tag in _MEDIA and self._current is not None:
                self._current.media += 1
            return
        if "jp-CodeCell" in classes:
            self._cell += 1
        opens_output = self._current is None and "jp-OutputArea-output" in classes
        if opens_output:
            self._current = Output(cell=self._cell, classes=a["class"])
        hidden = tag in {"script", "style"} or "display:none" in a.get("style", "").replace(" ", "")
        self._stack.append((tag, opens_output, hidden))
        if tag == "script":
            self._script = []
        if self._current is not None:
            if tag in _MEDIA:
                self._current.media += 1
            if "jupyter-widgets" in classes:
                self._current.widget = True
            if "plotly-graph-div" in classes:
                self._current.plot = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self._script is not None:
            self._read_script("".join(self._script))
            self._script = None
        if tag in _VOID:
            return
        while self._stack:
            name, opened_output, _hidden = self._stack.pop()
            if opened_output and self._current is not None:
                self.outputs.append(self._current)
                self._current = None
            if name == tag:
                break
        self._visible(" ")

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)  # read whole at </script>: the parser may split it
        self._visible(data)

    def _read_script(self, script: str) -> None:
        if "plotly.js v" in script[:2000] and len(script) > 100_000:
            self.plotly_bundles += 1  # the bundle itself, not a loader (nor a call to it)
            return
        figures = figures_in(script)
        self.figures += figures
        if self._current is not None:
            self._current.figures += figures


def visible_text(html: str) -> str:
    """The text a browser without JavaScript shows for `html` (entities decoded)."""
    return Page.of(html).text
