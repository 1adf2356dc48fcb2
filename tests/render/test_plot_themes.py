"""Plots read on JupyterLab's light and dark themes: no line left to plotly's near-black
defaults (an error bar is #444 unless coloured), and zero lines drawn under the bars (issue 20)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pandas as pd
import pytest

import evalbook as eb

pytest.importorskip("plotly")

# plotly.js's colour for an error bar, a shape's line or an axis line when none is given
PLOTLY_DEFAULT_LINE = "#444"


def _luminance(color: str) -> float:
    """Relative luminance (0 black .. 1 white) of `#rgb`, `#rrggbb`, `rgb()` or `rgba()`."""
    color = color.strip().lower()
    if color.startswith("#"):
        digits = color[1:]
        if len(digits) == 3:
            digits = "".join(c * 2 for c in digits)
        rgb = [int(digits[i : i + 2], 16) for i in (0, 2, 4)]
    else:
        match = re.fullmatch(r"rgba?\(([^)]*)\)", color)
        assert match, f"unparsed colour {color!r}"
        rgb = [int(float(x)) for x in match.group(1).split(",")[:3]]

    def channel(v: int) -> float:
        c = v / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(v) for v in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _colors(node: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every (path, colour) the figure sets itself (its template is plotly's, not ours)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template":
                continue
            where = f"{path}.{key}"
            if key.endswith("color") and isinstance(value, str):
                yield where, value
            elif key.endswith("color") and isinstance(value, list):
                yield from ((where, v) for v in value if isinstance(v, str))
            else:
                yield from _colors(value, where)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _colors(value, f"{path}[{i}]")


def _runs() -> tuple[eb.Run, eb.Run, eb.Run]:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(12)], "kind": ["a", "b"] * 6})

    def task(q: str, ctx: Any) -> str:
        ctx.record_usage(input_tokens=10, output_tokens=2, cost=0.001)
        return q

    hit = eb.scorer(eb.define_score("hit", primary=True))
    a = eb.run(data, task=task, scorers=[hit(lambda output: float(int(output[1:]) % 2))],
               name="a", store=None, progress=False)  # fmt: skip
    b = eb.run(data, task=task, scorers=[hit(lambda output: float(int(output[1:]) < 9))],
               name="b", store=None, progress=False)  # fmt: skip
    # cases 0-3 always right, 4-7 right in epoch 1 only, 8-11 never
    flaky_hit = hit(
        lambda output: float(int(output[1:-1]) < 4 or (int(output[1:-1]) < 8 and output[-1] == "1"))
    )
    flaky = eb.run(data, task=lambda q, epoch: f"{q}{epoch}", epochs=3, name="flaky",
                   scorers=[flaky_hit], store=None, progress=False)  # fmt: skip
    return a, b, flaky


def _figures() -> dict[str, Any]:
    a, b, flaky = _runs()
    pareto = eb.show([a, b]).figure  # the leaderboard view's cost-vs-score scatter
    assert pareto is not None
    return {
        "deltas": eb.compare(a, b).plot.deltas(),
        "forest": eb.compare(a, b, by="kind").plot.forest(),
        "pareto": pareto,
        "flakiness": flaky.plot.flakiness(),
        "consistency": flaky.plot.consistency(),
        "distribution": a.plot.distribution(),
        "unscored": a.plot.unscored(),
    }


@pytest.fixture(scope="module")
def figures() -> dict[str, Any]:
    return _figures()


def test_the_checker_finds_a_near_black_line() -> None:
    assert _luminance(PLOTLY_DEFAULT_LINE) < 0.1 and _luminance("#000") == 0
    assert _luminance("rgba(127,127,127,0.8)") > 0.18 and _luminance("#fff") == 1
    found = dict(_colors({"data": [{"error_x": {"color": "#111"}}], "layout": {"template": {}}}))
    assert found == {".data[0].error_x.color": "#111"}


def test_error_bars_are_coloured_and_no_colour_is_near_black(
    figures: dict[str, Any], record_property: pytest.RecordProperty
) -> None:
    checked = 0
    for name, fig in figures.items():
        for trace in fig.data:
            for bars in ("error_x", "error_y"):
                error = getattr(trace, bars, None)
                if error is not None and error.array is not None:
                    # unset, plotly.js draws it #444: black on a dark notebook
                    assert error.color is not None, f"{name}: {bars} left to plotly's #444"
        for where, color in _colors(fig.to_plotly_json()):
            if color.replace(" ", "").endswith(",0)"):
                continue  # fully transparent (the backgrounds): the theme shows through
            checked += 1
            # mid-tone and translucent greys read on both themes; near-black reads on neither
            assert _luminance(color) > 0.15, f"{name}{where} = {color} (near black)"
    figure = f"plot colours: {checked} checked over {len(figures)} figures, 0 near black"
    print(figure)
    record_property("plot_colours", figure)
    assert checked > 20


def test_zero_lines_and_the_delta_line_are_drawn_below_the_traces(
    figures: dict[str, Any],
) -> None:
    for name, fig in figures.items():
        for axis in (fig.layout.xaxis, fig.layout.yaxis):
            assert axis.zerolinelayer == "below traces", name
        for shape in fig.layout.shapes:
            assert shape.layer == "below", f"{name}: a line over the markers"
    flakiness = figures["flakiness"]
    # a bar sits on 0 %: no zero line stands out of it (0 % is a bin's centre, not a reference;
    # the grid line there is as faint as the others)
    assert any(0.0 in list(t.x) for t in flakiness.data)
    assert flakiness.layout.xaxis.range[0] < 0 < flakiness.layout.xaxis.range[1]
    for name in ("flakiness", "consistency", "distribution"):
        assert figures[name].layout.xaxis.zeroline is False, name
    # bars per category: no grid line through the translucent "scored" bar
    assert figures["unscored"].layout.xaxis.showgrid is False
