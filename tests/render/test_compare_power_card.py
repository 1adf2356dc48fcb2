"""The comparison card's power: the mde next to the delta ("could detect ±6.1 pp"), the
"underpowered" flag, slices and their `small` flag; escaped, inline styles only. The card is
`comparison._repr_html_()` and the text `repr(comparison)` (or the static HTML and text of
`eb.show(comparison)` for a comparison given by its documented attributes)."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest
from tests import _power_ref as ref

import evalbook as eb
from _page import visible_text
from display_fixtures import FakeComparison, demo_run

# eb.compare(by=) and the mde column come with issue 17's comparison (another helper's part)
pytestmark = pytest.mark.skipif(
    "by" not in inspect.signature(eb.compare).parameters,
    reason="eb.compare(by=) and the mde column are not in this tree yet",
)


def comparison_html(comp: eb.Comparison) -> str:
    return comp._repr_html_()


def comparison_text(comp: eb.Comparison) -> str:
    return repr(comp)


def _runs(
    a: list[float], b: list[float], topic: list[str] | None = None, label: str = "Right"
) -> tuple[eb.Run, eb.Run]:
    n = len(a)
    df = pd.DataFrame({"id": [f"c{i}" for i in range(n)], "i": range(n)})
    if topic is not None:
        df["topic"] = topic
    ok = eb.define_score("ok", label=label, primary=True)

    def one(values: list[float], name: str) -> eb.Run:
        scorer = eb.scorer(ok)(lambda i: values[i])
        return eb.run(df, task=lambda i: i, scorers=[scorer], name=name, store=None, progress=False)

    return one(a, "old"), one(b, "new")


def test_the_mde_sits_next_to_the_delta_and_is_the_power_formula() -> None:
    a = [float(i % 2) for i in range(40)]
    b = [1.0 - v if i < 6 else v for i, v in enumerate(a)]  # 3 fixed, 3 broken: delta 0
    comp = eb.compare(*_runs(a, b))
    row = comp.summary.iloc[0]
    expected = ref.mcnemar_mde(40, 6 / 40)  # the exact McNemar test's, 6 of 40 discordant
    assert row["mde"] == pytest.approx(expected, rel=1e-6)
    html = comparison_html(comp)
    assert expected > 0.01  # shown in pp with one decimal
    shown = f"could detect ±{expected * 100:.1f} pp"
    assert shown in visible_text(html) and shown in comparison_text(comp)
    # the CI straddles 0 and the mde exceeds |delta| = 0: underpowered, in the card and the text
    assert row["ci_low"] < 0 < row["ci_high"]
    assert ">underpowered<" in html and "underpowered" in comparison_text(comp)


def test_a_clear_difference_is_not_underpowered() -> None:
    a = [0.0] * 30 + [1.0] * 10
    b = [1.0] * 40  # 30 fixed: the CI is well above 0
    comp = eb.compare(*_runs(a, b))
    assert comp.summary.iloc[0]["ci_low"] > 0
    html = comparison_html(comp)
    assert "could detect ±" in visible_text(html)
    assert "underpowered" not in html and "underpowered" not in comparison_text(comp)


@pytest.mark.parametrize(
    ("lo", "hi", "delta", "mde", "expected"),
    [
        (-0.1, 0.1, 0.0, 0.2, True),  # straddles 0, mde > |delta|
        (-0.1, 0.3, 0.1, 0.05, False),  # straddles 0, mde < |delta|
        (0.01, 0.3, 0.15, 0.2, False),  # excludes 0
        (-0.3, -0.01, -0.15, 0.2, False),  # excludes 0
        (-0.1, 0.1, 0.0, float("nan"), False),  # no mde
    ],
)
def test_the_underpowered_rule(
    lo: float, hi: float, delta: float, mde: float, expected: bool
) -> None:
    def shown(mde: float | None) -> tuple[str, str]:
        """The card and text of a comparison whose one score has this CI, delta and mde
        (no `mde` column when None: a comparison made before the power)."""
        run = demo_run()
        comp = FakeComparison(run, run)
        row = {**comp.summary.iloc[0].to_dict(), "ci_low": lo, "ci_high": hi, "delta": delta}
        comp.summary = pd.DataFrame([row if mde is None else {**row, "mde": mde}])
        bundle = eb.show(comp)._repr_mimebundle_()
        return bundle["text/html"], bundle["text/plain"]

    pytest.importorskip("anywidget")
    html, text = shown(mde)
    assert (">underpowered<" in html) is expected and ("underpowered" in text) is expected
    assert ("could detect ±" in visible_text(html)) is (mde == mde)  # NaN: no mde shown
    html, text = shown(None)
    assert "underpowered" not in html and "underpowered" not in text
    assert "could detect" not in html and "could detect" not in text


def test_slices_are_titled_flagged_small_and_escaped() -> None:
    hostile = "<script>alert(1)</script>\x1b[31m"
    topic = ["big"] * 30 + [hostile] * 6
    a = [float(i % 3 > 0) for i in range(36)]
    b = [1.0] * 36
    comp = eb.compare(*_runs(a, b, topic, label="Ri<b>ght"), by="topic")
    assert comp.summary["small"].tolist() == [False, True]
    html = comparison_html(comp)
    assert "<script>" not in html and "\x1b" not in html and "<b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m" in html
    assert "topic = big" in visible_text(html)
    assert html.count(">small slice<") == 1
    assert "by topic" in visible_text(html)
    text = comparison_text(comp)
    assert "\x1b" not in text and "topic=big · ok:" in text and "small slice" in text


def test_the_card_has_inline_styles_only_and_shows_in_exported_html() -> None:
    a = [float(i % 2) for i in range(20)]
    comp = eb.compare(*_runs(a, list(reversed(a))))
    bundle = comp._repr_html_()  # what nbconvert writes into an exported notebook
    assert "could detect ±" in visible_text(bundle)
    assert "<style" not in bundle and "<script" not in bundle and "class=" not in bundle
    assert 'data-evalbook="mde" style="' in bundle


def test_a_slice_column_named_by_a_number_is_titled() -> None:
    a = [float(i % 2) for i in range(24)]
    old, new = _runs(a, [1.0] * 24)
    for run in (old, new):
        run.data[7] = ["x"] * 12 + ["y"] * 12  # a data column labelled by a number
    comp = eb.compare(old, new, by=7)
    html = comparison_html(comp)
    text = visible_text(html)
    assert "7 = x" in text and "7 = y" in text and "by 7" in text
