"""Every chart carries the numbers it draws (read without JavaScript), and a notebook's kernel
embeds plotly.js once (issue 35 items 4, 5, 8)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _page import Page

pytest.importorskip("plotly")


def _runs() -> tuple[eb.Run, eb.Run, eb.Run]:
    data = pd.DataFrame({"q": [f"q{i}" for i in range(12)], "kind": ["a", "b"] * 6})
    hit = eb.scorer(eb.define_score("hit", primary=True))
    part = eb.scorer(eb.define_score("part"))

    def task(q: str, ctx: Any) -> str:
        ctx.record_usage(input_tokens=10, output_tokens=2, cost=0.001 * (1 + int(q[1:]) % 2))
        return q

    def score_a(output: str) -> Any:
        i = int(output[1:])
        return eb.Unscored("no answer") if i == 11 else float(i % 2)

    a = eb.run(data, task=task, scorers=[hit(score_a), part(lambda output: 0.5)], name="a",
               store=None, progress=False)  # fmt: skip
    b = eb.run(data, task=task, scorers=[hit(lambda output: float(int(output[1:]) < 9)),
               part(lambda output: 1.0)], name="b", store=None, progress=False)  # fmt: skip
    empty = eb.run(data, task=task, scorers=[hit(lambda output: eb.Unscored("skipped"))],
                   name="empty", store=None, progress=False)  # fmt: skip
    return a, b, empty


@pytest.fixture(scope="module")
def runs() -> tuple[eb.Run, eb.Run, eb.Run]:
    return _runs()


def _no_js(fig: Any) -> str:
    """What a viewer without JavaScript reads of the figure's HTML (scripts not run)."""
    return Page.of(fig._repr_mimebundle_()["text/html"]).text


def test_each_chart_reads_its_numbers_without_javascript(runs: tuple[eb.Run, ...]) -> None:
    a, b, _ = runs
    comp = eb.compare(a, b, by="kind")
    texts = {
        "unscored": _no_js(a.plot.unscored()),
        "distribution": _no_js(a.plot.distribution()),
        "deltas": _no_js(comp.plot.deltas()),
        "forest": _no_js(comp.plot.forest()),
    }
    assert "scored 11 12" in texts["unscored"] and "unscored: no answer 1 0" in texts["unscored"]
    # hit: 0.00 six times, 1.00 five times (case 11 unscored); part: 0.50 twelve times
    assert "hit 0.00: 6 · 1.00: 5" in texts["distribution"]
    assert "part 0.50: 12" in texts["distribution"]
    for kind in ("deltas", "forest"):
        text = texts[kind]
        rows = comp.summary[comp.summary["delta"].notna()]
        assert text.count(" pp [") == len(rows) == 2, (kind, text)  # a row's delta and CI each
        assert "kind=a · hit" in text


def test_the_pareto_numbers_name_each_run_with_its_cost_and_score(
    runs: tuple[eb.Run, ...],
) -> None:
    a, b, _ = runs
    view = eb.show([a, b])
    published: list[dict[str, Any]] = []
    import IPython.display

    old = IPython.display.display
    IPython.display.display = lambda bundle, raw=False: published.append(bundle)  # type: ignore[assignment]
    try:
        view._ipython_display_()
    finally:
        IPython.display.display = old
    text = Page.of(published[-1]["text/html"]).text
    assert "'a' (cost known" not in text
    assert "a $0.0015" in text and "b $0.0015" in text


def test_a_run_without_recorded_values_says_so(runs: tuple[eb.Run, ...]) -> None:
    fig = runs[2].plot.distribution()
    assert [x.text for x in fig.layout.annotations] == ["no recorded values"]  # in the figure
    assert "no recorded values: hit" in _no_js(fig)  # and in its numbers


def test_the_distribution_draws_one_panel_per_score(runs: tuple[eb.Run, ...]) -> None:
    fig = runs[0].plot.distribution()
    assert [t.xaxis for t in fig.data] == ["x", "x2"]  # two panels: no bar behind another
    assert fig.layout.xaxis.domain != fig.layout.yaxis2.domain


def test_the_unscored_plot_colours_errors_red_and_unscored_amber() -> None:
    data = pd.DataFrame({"q": [0, 1, 2, 3]})
    ok = eb.scorer(eb.define_score("ok", primary=True))

    def task(q: int) -> int:
        if q == 0:
            raise ValueError("boom")
        return q

    run = eb.run(data, task=task, scorers=[ok(lambda output: eb.Unscored("why") if output == 1
                 else 1.0)], store=None, progress=False)  # fmt: skip
    colours = {t.name.split(":")[0]: t.marker.color for t in run.plot.unscored().data[1:]}
    assert colours == {
        "error": eb_colours()["error"],
        "unscored": eb_colours()["unscored"],
    }


def eb_colours() -> dict[str, str]:
    from evalbook._render._style import STATUS_COLORS

    return STATUS_COLORS


class _FakeKernel:
    def __init__(self) -> None:
        self.cell: str | None = "cell-1"
        self.code: str | None = None

    def get_parent(self) -> dict[str, Any]:
        content = {"code": self.code} if self.code is not None else {}
        return {"metadata": {"cellId": self.cell} if self.cell else {}, "content": content}


class _FakeKernelShell:
    """What `_figure.py` asks of a kernel's shell: its kernel (the cell being run) and the
    execution count."""

    def __init__(self) -> None:
        self.kernel = _FakeKernel()
        self.execution_count = 1

    def run(self, cell: str | None) -> None:
        self.kernel.cell, self.execution_count = cell, self.execution_count + 1


def test_plotly_js_is_embedded_once_per_kernel(
    runs: tuple[eb.Run, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    import IPython

    a = runs[0]

    def bundles() -> int:
        return Page.of(a.plot.unscored()._repr_mimebundle_()["text/html"]).plotly_bundles

    assert [bundles(), bundles()] == [1, 1]  # no kernel: each HTML a page of its own
    shell = _FakeKernelShell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    html = [a.plot.unscored()._repr_mimebundle_()["text/html"] for _ in range(3)]
    pages = [Page.of(h) for h in html]
    assert [p.plotly_bundles for p in pages] == [1, 0, 0]  # one cell showing three figures
    assert all(len(p.figures) == 1 for p in pages)  # each still draws its own chart
    assert len(html[1]) < 100_000 < 1_000_000 < len(html[0])
    shell.run("cell-2")
    assert bundles() == 0  # a later cell
    shell.run("cell-1")  # the cell that carried it runs again: its outputs are replaced
    assert [bundles(), bundles()] == [1, 0]
    shell.run(None)  # a frontend that sends neither cell id nor code: once
    assert bundles() == 0
    shell = _FakeKernelShell()  # a new kernel
    assert bundles() == 1

    def nbclient_runs(code: str) -> None:  # nbclient sends no cell id: the cell's code
        shell.run(None)
        shell.kernel.code = code

    shell = _FakeKernelShell()  # a new kernel, run by nbclient
    nbclient_runs("run.plot.unscored()")
    assert bundles() == 1
    nbclient_runs("run.plot.distribution()")
    assert bundles() == 0
    nbclient_runs("run.plot.unscored()")  # the cell that carried it, run again
    assert [bundles(), bundles()] == [1, 0]
