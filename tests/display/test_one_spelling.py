"""One spelling of numbers in every view: %, pp, p-values and CIs come from `_util._fmt`."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
import evalbook.display as display
from _cli_helpers import cli
from _compare_helpers import make_run

# the one spelling of each number and of escaped text: units with no public name
from evalbook._render._style import esc
from evalbook._util._fmt import (
    format_ci,
    format_count,
    format_num,
    format_p,
    format_p_phrase,
    format_pct,
    format_pp,
    format_pp_ci,
)

MISSING = (None, float("nan"), pd.NA, pd.NaT)


def test_shares_differences_p_values_and_intervals() -> None:
    assert [format_pct(x) for x in (0.5, 0.9999, 0.0004, 1.0, 0.0)] == [
        "50%", "99.99%", "0.04%", "100%", "0%"
    ]  # fmt: skip
    assert [format_pp(x) for x in (0.1, -0.025, 0.0, 0.00004, -1.0)] == [
        "+10.0 pp", "−2.5 pp", "0 pp", "+0.004 pp", "−100.0 pp"
    ]  # fmt: skip
    assert format_pp(-0.1, signed=False) == "10.0 pp"
    assert [format_p(x) for x in (0.0321, 0.5, 1.0, 0.0004)] == [
        "0.032",
        "0.500",
        "1.000",
        "<0.001",
    ]
    assert format_p_phrase(0.0001) == "p < 0.001" and format_p_phrase(0.5) == "p = 0.500"
    assert (
        format_ci(0.1, 0.2) == "[10%, 20%]" and format_pp_ci(-0.02, 0.065) == "[−2.0 pp, +6.5 pp]"
    )
    assert format_num(1.0) == "1" and format_num(0.25) == "0.25" and format_count(3.0) == "3"


@pytest.mark.parametrize("missing", MISSING)
def test_a_missing_value_is_a_dash_or_a_blank(missing: object) -> None:
    for formatter in (format_pct, format_pp, format_p, format_num):
        assert formatter(missing) == "—"
    assert format_p_phrase(missing) == "p = —"
    assert format_count(missing) == "" and format_ci(missing, 0.5) == ""
    assert format_pp_ci(0.1, missing) == ""


def test_every_view_of_a_comparison_spells_the_delta_the_same_way(tmp_path: Path) -> None:
    a = make_run({"ok": [1.0, 0.0, 0.0, 1.0]}, name="base")
    b = make_run({"ok": [1.0, 1.0, 1.0, 1.0]}, name="cand")
    comparison = eb.compare(a, b)
    row = comparison.summary.iloc[0]
    delta, ci = format_pp(row["delta"]), format_pp_ci(row["ci_low"], row["ci_high"])
    assert delta == "+50.0 pp" and ci.startswith("[") and " pp]" in ci
    a.save(tmp_path)
    b.save(tmp_path)
    compared = cli("compare", "base", "cand", "--store", str(tmp_path), cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    views = {
        "repr": repr(comparison),  # the comparison's one text form (also eb.show's)
        "html": comparison._repr_html_(),
        "cli": compared.stdout,
    }
    for name, text in views.items():
        assert delta in text and ci in text, name
        assert not re.search(r"\bpts\b|points|[+−-]50%", text), name
    assert format_p(row["p_adjusted"]) in views["repr"] and "Holm" in views["html"]


def test_views_show_control_characters_escaped() -> None:
    assert esc("a\x1b[31mb\x00") == "a\\x1b[31mb\\x00"
    assert esc("line\nnext\ttab <b>") == "line\nnext\ttab &lt;b&gt;"  # newline and tab stay


def test_display_exports_only_show_and_the_old_names_still_import_with_a_warning() -> None:
    # where the old names live now: what each deprecated name must still give
    from evalbook._render import _cases, _compare_html, _run_html

    assert display.__all__ == ["show"]
    homes = {
        _cases: ("CaseFilter", "case_html", "filter_cases"),
        _compare_html: ("comparison_html", "comparison_text"),
        _run_html: (
            "headline_html",
            "headline_only_html",
            "run_html",
            "summary_html",
            "unscored_html",
        ),
    }
    for module, names in homes.items():
        for name in names:
            with pytest.warns(DeprecationWarning, match=f"evalbook.display.{name} is deprecated"):
                value = getattr(display, name)
            assert value is getattr(module, name)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from evalbook.display import show  # the public name: no warning

        assert show is eb.show
    with pytest.raises(AttributeError, match="case_list_html"):
        display.case_list_html  # noqa: B018 - removed: only tests used it
