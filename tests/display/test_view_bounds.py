"""Every view of a run with 1 MB texts is bounded; the tables keep every character.

Bounds (_render/_cases.py, _render/_run_html.py, _render/_style.py): a case view shows at most
`TEXT_LIMIT` (10,000) characters of one value and `CASE_TEXT_LIMIT` (30,000) of all its values;
a name, label, case id or reason at most `SHORT_LIMIT` (1,000); the unscored breakdown at most
`MAX_REASONS` (20) reasons per score. Before: a 1 MB reason made a 1 MB card, 200 such reasons
a 180 MB run view, and one pair of a comparison's case view was 2 MB.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import cli
from display_fixtures import case_views

CASE_TEXT_LIMIT = 30_000  # characters of all the values a case view shows
MB = "y" * 1_000_000
KB = 1000
S, U = eb.define_score("s"), eb.define_score("u")


def _run(n: int, name: str, flip: int = 0) -> eb.Run:
    """`n` cases; the first 40 hold 1 MB texts everywhere (pandas copies each into the
    tables, so 200 such cases would make the test slow, not the views)."""

    def text(k: int) -> str:
        return MB if k < 40 else "short"

    @eb.scorer(S, U)
    def scorer(output: str, case_id: str) -> dict[str, Any]:
        k = int(case_id)
        unique = MB + case_id if k < 30 else "short reason"  # 30 distinct 1 MB reasons
        metadata = {"m": MB} if k < 10 else None
        return {
            "s": eb.Score(float((k + flip) % 2), rationale=text(k), metadata=metadata),
            "u": eb.Unscored(unique),
        }

    def task(q: str, case_id: str) -> str:
        if int(case_id) % 10 == 9:
            raise RuntimeError(text(int(case_id)))
        return text(int(case_id))

    df = pd.DataFrame({"q": [text(k) for k in range(n)], "target": [text(k) for k in range(n)]})
    return eb.run(df, task=task, scorers=[scorer], name=name, store=None, progress=False)


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


@pytest.fixture(scope="module")
def run() -> eb.Run:
    return _run(40, "a")


def test_every_run_view_is_bounded_and_the_tables_keep_the_text(
    run: eb.Run, record_property: Callable[[str, object], None], tmp_path: Path
) -> None:
    views = {
        "run html": (run._repr_html_(), 100 * KB),
        "headline html": (run.headline._repr_html_(), 10 * KB),
        "repr": (repr(run), 2 * KB),
    }
    cases = case_views(run, (0, 9))  # the case explorer's detail of cases 0 and 9
    views.update({f"case {i}": (html, 60 * KB) for i, html in zip((0, 9), cases, strict=True)})
    shown = cli("show", str(_run(40, "a").save(tmp_path)), cwd=tmp_path)  # the same run, stored
    assert shown.returncode == 0, shown.stderr
    views["evalbook show"] = (shown.stdout, 20 * KB)
    sizes = {view: _size(text) for view, (text, _) in views.items()}
    figure = ", ".join(f"{view} {size / KB:.0f} KB" for view, size in sizes.items())
    print(figure)
    record_property("view_sizes", figure)
    for view, (_, bound) in views.items():
        assert sizes[view] < bound, f"{view}: {sizes[view]} bytes"
    assert sizes["case 9"] > CASE_TEXT_LIMIT  # the view still shows text, up to its budget
    assert "… (" in views["case 0"][0] and "more characters)" in views["case 0"][0]
    assert "more reasons" in views["run html"][0]
    assert run.cases["output"][0] == MB and run.cases["error_message"][9] == MB
    assert run.scores["rationale"][0] == MB and run.scores["reason"][1] == MB + "0"


def test_the_widgets_are_bounded(run: eb.Run) -> None:
    pytest.importorskip("anywidget")
    view = eb.show(run)
    assert _size(view._static_html) < 100 * KB
    assert all(_size(child.value) < 100 * KB for child in view.tabs.children[:3])
    view.explorer.cases.value = 9
    assert 0 < _size(view.explorer.detail.value) < 60 * KB


def test_a_comparison_case_view_of_200_cases_is_under_200_kb(
    record_property: Callable[[str, object], None],
) -> None:
    pytest.importorskip("anywidget")
    comp = eb.compare(_run(200, "a"), _run(200, "b", flip=1), score="s")
    assert _size(comp._repr_html_()) < 100 * KB
    view = eb.show(comp)
    view.change.value = "all"
    sizes = []
    for number in range(view.pager.page.n_pages):  # every page of pairs
        view.pager.value = number
        for _, i in view.cases.options:
            view.cases.value = i
            sizes.append(_size(view.detail.value))
    figure = (
        f"comparison case view of 200 cases: largest pair {max(sizes) / KB:.0f} KB, "
        f"all {len(sizes)} pairs {sum(sizes) / KB:.0f} KB"
    )
    print(figure)
    record_property("comparison_case_view", figure)
    assert len(sizes) == 180 and max(sizes) < 200 * KB  # 20 cases errored in both runs
    assert comp.regressions()["output_a"].map(len).max() == len(MB)  # the table: all of it
