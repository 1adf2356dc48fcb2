"""Issue 20's plots: distribution bins that show 1.0, forest, consistency, cost-vs-score Pareto."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

import evalbook as eb


def _binary_run(ones: int, zeros: int, *, name: str = "binary") -> eb.Run:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(ones + zeros)]})
    hit = eb.scorer("hit")(lambda output: 1.0 if int(output[1:]) < ones else 0.0)
    return eb.run(data, task=lambda q: q, scorers=[hit], name=name, store=None, progress=False)


def _bars(trace: Any, values: list[float]) -> dict[tuple[float, float], int]:
    """What each drawn bar holds: plotly's bins are [start + k·size, start + (k+1)·size)."""
    start, size = float(trace.xbins.start), float(trace.xbins.size)
    bars: dict[tuple[float, float], int] = {}
    for v in values:
        k = math.floor((v - start) / size + 1e-9)
        lo = round(start + k * size, 9)
        bars[(lo, round(lo + size, 9))] = bars.get((lo, round(lo + size, 9)), 0) + 1
    return bars


def _export_html(fig: Any) -> str:
    bundle = fig._repr_mimebundle_()
    assert "application/vnd.plotly.v1+json" in bundle
    html: str = bundle["text/html"]
    # plotly.js embedded once (the export shows the chart offline), never a script from a CDN
    assert not re.search(r"<script[^>]*\ssrc=", html)
    assert "cdn.plot.ly" not in html and "cdn.jsdelivr" not in html
    assert html.count("Plotly.newPlot") == 1 and len(html) > 1_000_000
    return html


def test_distribution_shows_every_value_of_one() -> None:
    run = _binary_run(ones=5, zeros=3)
    (trace,) = run.plot.distribution().data
    values = list(trace.x)
    assert sorted(values) == [0.0] * 3 + [1.0] * 5
    lo_axis, hi_axis = run.plot.distribution().layout.xaxis.range
    bars = _bars(trace, values)
    assert sorted(bars.values()) == [3, 5]
    for (lo, hi), n in bars.items():
        # each bar lies whole inside the axis and inside the bins plotly draws
        assert lo_axis <= lo and hi <= hi_axis, (lo, hi, n)
        assert hi <= float(trace.xbins.end) + 1e-9
    one = next(n for (lo, hi), n in bars.items() if lo <= 1.0 < hi)
    assert one == 5
