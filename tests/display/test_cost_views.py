"""Cost in the views: the headline card, `repr(run)`, `evalbook show`, the comparison card and
text, the case explorer. Each shows usage when known and nothing when not; an unknown cost is
never `$0`; partial knowledge says so; source names and refusal messages from a stored run are
escaped in every view."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import cli
from _page import visible_text
from display_fixtures import case_view

# Units with no public name: the terminal's usage lines (their bounds), a usage no run records
# (a crafted stored run's source names and refusals, built directly), the one spelling of money,
# tokens and seconds.
from evalbook._cli._terminal import usage_lines, usage_source_table
from evalbook._model._tally import Tally
from evalbook._runner._meter import current_meter
from evalbook._util._fmt import (
    format_money,
    format_money_ci,
    format_seconds,
    format_tokens,
    refused_note,
    usage_line,
)

EVIL = "<script>alert(1)</script>\x1b[31m\u202e"


def run_card(run: eb.Run) -> str:
    return run._repr_html_()


def comparison_card(comp: eb.Comparison) -> str:
    return comp._repr_html_()


def _run(usage: Any = None, *, n: int = 4, epochs: int = 1) -> eb.Run:
    """A run whose task calls `usage(q, ctx)` (records usage) for each case `q0`, `q1`, ..."""

    def task(q: str, ctx: Any) -> str:
        if usage is not None:
            usage(q, ctx)
        return q

    data = pd.DataFrame({"q": [f"q{i}" for i in range(n)]})
    return eb.run(
        data,
        task=task,
        scorers=[lambda output: 1.0],
        epochs=epochs,
        store=None,
        progress=False,
    )


def _priced(q: str, ctx: Any) -> None:
    ctx.record_usage(input_tokens=1200, output_tokens=300, cost=0.0123)


def _tokens_only(q: str, ctx: Any) -> None:
    ctx.record_usage(input_tokens=1200, output_tokens=300)


def _partly_priced(q: str, ctx: Any) -> None:
    ctx.record_usage(input_tokens=1200, output_tokens=300, cost=None if q == "q0" else 0.01)


def _evil(run: eb.Run) -> eb.Run:
    """`run` with a stored-run-like usage whose source name and refusal hold markup and
    control characters (a score name cannot, a crafted run's usage JSON can)."""
    bad = Tally(calls=2, input_tokens=10.0, output_tokens=5.0, cost=0.5, invalid=EVIL)
    run._results.usage[0] = {EVIL: bad, "task": Tally(calls=1, cost=0.25)}
    return run


# -- the formatters ---------------------------------------------------------------------------


def test_money_tokens_and_seconds_have_one_spelling() -> None:
    assert [format_money(x) for x in (1.234, 0.01234, 0.5, 0.0, 1234.5, 1e-7)] == [
        "$1.23", "$0.0123", "$0.50", "$0.00", "$1,234.50", "$0.0000001"
    ]  # fmt: skip
    assert format_money(-0.002, signed=True) == "−$0.002"
    assert format_money(0.25, signed=True) == "+$0.25"
    assert format_money_ci(0.011, 0.014) == "[$0.011, $0.014]"
    assert [format_tokens(x) for x in (950, 12_345, 2_100, 999_960, 1.5e9)] == [
        "950", "12.3k", "2.1k", "1M", "1.5B"
    ]  # fmt: skip
    seconds = [format_seconds(x) for x in (2.345, 0.45, 12.4, 0.0)]
    assert seconds == ["2.3 s", "0.45 s", "12 s", "0 s"]
    assert format_seconds(-1.2, signed=True) == "−1.2 s"


@pytest.mark.parametrize("missing", [None, math.nan, pd.NA])
def test_an_unknown_amount_is_a_dash_never_zero(missing: object) -> None:
    assert format_money(missing) == "—" and format_tokens(missing) == "—"
    assert format_seconds(missing) == "—" and format_money_ci(missing, 1.0) == ""


def test_the_usage_line_names_what_is_unknown() -> None:
    row: dict[str, object] = {
        "calls": 3, "cached_calls": 3, "input_tokens": 0.0, "output_tokens": 0.0, "cost": 0.0,
        "cost_per_case": 0.0, "cost_ci_low": math.nan, "cost_ci_high": math.nan,
        "latency_p95_s": math.nan, "n_cost_known": 3, "retries": 2,
    }  # fmt: skip
    assert usage_line(row, ran=3) == (
        "Cost $0.00 · $0.00 per case · 0 tokens in / 0 out · 3 of 3 calls cached · 2 retries"
    )
    unknown = {**row, "cost": math.nan, "n_cost_known": 0, "input_tokens": math.nan}
    line = usage_line(unknown, ran=3)
    assert line.startswith("Cost unknown · — tokens in / 0 out") and "$" not in line
    assert usage_line({**row, "calls": 0}, ran=3) == ""
    assert refused_note([None, None]) == ""


# -- the headline card ------------------------------------------------------------------------


def test_the_headline_card_shows_the_cost_line() -> None:
    text = visible_text(run_card(_run(_priced)))
    assert (
        "Cost $0.0492 · $0.0123 per case [$0.0123, $0.0123] · 4.8k tokens in / 1.2k out · "
        "4 calls · p95 latency" in text
    )


def _outside_code(html: str) -> str:
    """`html` without its `<code>` elements (which a notebook's TeX typesetting skips)."""
    return re.sub(r"<code[^>]*>.*?</code>", "", html, flags=re.S)


def test_dollars_are_kept_from_the_notebooks_tex() -> None:
    # JupyterLab typeset "$0.0706 · $0.00588" as math (seen in the browser): every amount
    # sits in a <code> styled as plain text
    for html in (
        run_card(_evil(_run(_partly_priced))),
        case_view(_run(_priced), 0),
        comparison_card(eb.compare(_run(_costs(0.01)), _run(_costs(0.03)))),
    ):
        assert "$" in visible_text(html) and "$" not in _outside_code(html)


def test_a_run_without_usage_has_no_cost_line() -> None:
    html = run_card(_run())
    assert 'data-evalbook="cost"' not in html and "Cost" not in visible_text(html)


def test_an_unknown_cost_is_never_zero_dollars() -> None:
    text = visible_text(run_card(_run(_tokens_only)))
    assert "Cost unknown · 4.8k tokens in / 1.2k out · 4 calls" in text
    assert "$" not in text


def test_partly_known_cost_says_of_how_many_samples() -> None:
    text = visible_text(run_card(_run(_partly_priced)))
    assert "Cost $0.03 (known for 3 of 4 samples) · $0.01 per case" in text


def test_with_epochs_the_mean_is_per_sample() -> None:
    text = visible_text(run_card(_run(_priced, n=2, epochs=2)))
    assert "$0.0123 per sample" in text and "known for" not in text


def test_the_card_escapes_a_crafted_source_and_refusal() -> None:
    html = run_card(_evil(_run(_priced)))
    assert "<script>" not in html and "\x1b" not in html and "\u202e" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m\\u202e" in html
    text = visible_text(html)
    assert "usage refused in 1 record (amounts unknown): <script>" in text
    assert "usage by source (2)" in text


# -- repr(run) and `evalbook show` ------------------------------------------------------------


def _show(path: Path) -> str:
    shown = cli("show", str(path), cwd=path.parent)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_repr_shows_the_cost_line_only_with_usage() -> None:
    lines = repr(_run(_priced)).splitlines()
    assert lines[1].startswith("  Cost $0.0492 · $0.0123 per case [$0.0123, $0.0123] · 4.8k")
    assert "Cost" not in repr(_run())
    unknown = repr(_run(_tokens_only))
    assert "  Cost unknown · 4.8k tokens in / 1.2k out · 4 calls" in unknown and "$" not in unknown


def test_repr_escapes_a_crafted_refusal() -> None:
    text = repr(_evil(_run(_priced)))
    assert "\x1b" not in text and "\u202e" not in text
    note = "  ! usage refused in 1 record (amounts unknown): <script>alert(1)</script>\\x1b[31m"
    assert note in text


def _stored(tmp_path: Path, usage: Any) -> Path:
    run = eb.run(
        pd.DataFrame({"q": ["a", "b"]}),
        task=lambda q, ctx: usage(ctx) or q,
        scorers=[lambda output: 1.0],
        store=tmp_path,
        progress=False,
    )
    assert run.path is not None
    return Path(run.path)


def test_show_prints_the_cost_line_and_usage_by_source(tmp_path: Path) -> None:
    def usage(ctx: Any) -> None:
        ctx.record_usage(input_tokens=1200, output_tokens=300, cost=0.0123)

    text = _show(_stored(tmp_path, usage))
    lines = text.splitlines()
    assert lines[2].startswith("Cost $0.0246 · $0.0123 per case [$0.0123, $0.0123] · 2.4k tokens")
    assert "usage by source:" in text
    assert re.search(r"^task\s+2\s+2.4k\s+600\s+\$0.0246$", text, re.M)


def test_show_without_usage_prints_no_cost(tmp_path: Path) -> None:
    lines = _show(_stored(tmp_path, lambda ctx: None)).splitlines()
    assert lines[2] == "" and lines[3].startswith("score")  # the headline, then the table
    assert not any(line.startswith(("Cost", "usage")) for line in lines)


def test_show_escapes_a_stored_source_name_and_refusal(tmp_path: Path) -> None:
    def usage(ctx: Any) -> None:
        meter = current_meter()
        assert meter is not None
        meter.record(input_tokens=100, output_tokens=20, source=EVIL)  # as a crafted file could
        ctx.record_usage(input_tokens=EVIL)  # refused: its message quotes the value

    path = _stored(tmp_path, usage)
    text = _show(path)
    assert "\x1b" not in text and "\u202e" not in text
    assert "<script>alert(1)</script>\\x1b[31m\\u202e      2" in text
    assert "Cost unknown · 200 tokens in / 40 out · 4 calls" in text
    assert "task: usage refused: input_tokens must be a finite number >= 0, got '<script>" in text
    html = run_card(eb.load_run(path))
    assert "<script>" not in html and "\x1b" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\x1b[31m\\u202e" in html


# -- the case explorer ------------------------------------------------------------------------


def test_the_case_view_shows_the_samples_usage_by_source() -> None:
    text = visible_text(case_view(_run(_partly_priced), 0))
    assert "usage source calls cached tokens in tokens out cost task 1 1.2k 300 unknown" in text
    text = visible_text(case_view(_run(_partly_priced), 1))
    assert "task 1 1.2k 300 $0.01" in text and "$0.00" not in text


def test_the_case_view_with_epochs_shows_each_epochs_usage() -> None:
    text = visible_text(case_view(_run(_priced, n=1, epochs=3), 0))
    assert text.count("task 1 1.2k 300 $0.0123") == 3


def test_a_case_view_without_usage_has_no_usage_section() -> None:
    html = case_view(_run(), 0)
    assert 'data-evalbook="usage"' not in html and "tokens" not in visible_text(html)


def test_the_case_view_escapes_a_crafted_source_and_refusal() -> None:
    html = case_view(_evil(_run(_priced)), 0)
    assert "<script>" not in html and "\x1b" not in html and "\u202e" not in html
    text = visible_text(html)
    assert "<script>alert(1)</script>\\x1b[31m\\u202e 2 10 5 $0.50 task 1 — — $0.25" in text
    assert "usage refused (amounts unknown): <script>alert(1)</script>\\x1b[31m" in text


def test_the_explorer_lists_tokens_and_cost_only_with_usage() -> None:
    pytest.importorskip("anywidget")

    def listed(run: eb.Run) -> list[str]:
        return [label for label, _ in eb.show(run).explorer.cases.options]

    labels = listed(_run(_partly_priced))
    # the task's outcome in a view's words: "ran" (it says nothing of the output)
    assert labels[0] == "0 · ran · 1 · 1.2k/300 tokens · cost unknown"
    assert labels[1] == "1 · ran · 1 · 1.2k/300 tokens · $0.01"
    plain = listed(_run())
    assert plain[0] == "0 · ran · 1"
    epochs = listed(_run(_priced, n=1, epochs=2))
    assert epochs == ["0 · ■■ 2/2 · 1 · 2.4k/600 tokens · $0.0246"]


# -- the comparison ---------------------------------------------------------------------------


def _costs(cost: float | None) -> Any:
    def usage(q: str, ctx: Any) -> None:
        # per-case costs that differ so the paired deltas have a spread
        ctx.record_usage(input_tokens=100, cost=None if cost is None else cost * (1 + int(q[1:])))

    return usage


def test_the_comparison_card_and_text_show_the_cost_and_latency_deltas() -> None:
    comp = eb.compare(_run(_costs(0.01)), _run(_costs(0.03)))
    # paired deltas 0.02, 0.04, 0.06, 0.08: mean 0.05, s/√4 = 0.01291, t(3) = 3.182
    row = comp.usage.iloc[0]
    assert round(float(row["delta"]), 6) == 0.05
    text = visible_text(comparison_card(comp))
    assert "Cost and latency B − A, paired by case" in text
    assert "cost per case $0.025 → $0.075 +$0.05 [+$0.00891, +$0.0911] · 4 paired" in text
    assert re.search(r"latency [\d.]+ s → [\d.]+ s [+−][\d.]+ s \[.+\] · 4 paired", text)
    line = "  cost per case $0.025 → $0.075  Δ +$0.05 [+$0.00891, +$0.0911] · 4 paired"
    assert line in repr(comp).splitlines()  # the comparison's one text form


def test_the_comparison_has_no_cost_section_without_costs_in_both_runs() -> None:
    plain = eb.compare(_run(), _run())
    assert "Cost and latency" not in visible_text(comparison_card(plain))
    assert "cost per case" not in repr(plain) and "latency" not in repr(plain)
    one_sided = eb.compare(_run(_costs(0.01)), _run(_costs(None)))
    assert "Cost and latency" not in visible_text(comparison_card(one_sided))
    assert "cost per case" not in repr(one_sided)
    assert any("Cost unknown for 4 cases of run b" in w for w in one_sided.warnings)


def test_evalbook_compare_prints_the_cost_deltas(tmp_path: Path) -> None:
    def stored(cost: float, where: Path) -> str:
        run = eb.run(
            pd.DataFrame({"q": ["q0", "q1", "q2"]}),
            task=lambda q, ctx: _costs(cost)(q, ctx) or q,
            scorers=[lambda output: 1.0],
            store=where,
            progress=False,
        )
        return str(run.path)

    a, b = stored(0.01, tmp_path / "a"), stored(0.02, tmp_path / "b")
    compared = cli("compare", a, b, cwd=tmp_path)
    assert compared.returncode == 0, compared.stderr
    lines = compared.stdout.splitlines()
    # paired deltas 0.01, 0.02, 0.03: mean 0.02, s/√3 = 0.005774, t(2) = 4.303
    # the comparison's one text form (its repr): each line indented under the head line
    assert "  cost per case $0.02 → $0.04  Δ +$0.02 [−$0.00484, +$0.0448] · 3 paired" in lines
    assert any(line.startswith("  latency ") and "· 3 paired" in line for line in lines)


# -- bounds and self-containment --------------------------------------------------------------


def _many_sources(run: eb.Run, n: int, name_length: int) -> eb.Run:
    """`run` whose first sample's usage has `n` sources with names `name_length` long."""
    run._results.usage[0] = {
        f"{i:04d}" + "x" * name_length: Tally(calls=1, cost=0.01, invalid="y" * 100_000)
        for i in range(n)
    }
    return run


def test_views_stay_bounded_with_many_long_sources() -> None:
    run = _many_sources(_run(_priced), 300, 100_000)  # 30 MB of names and messages
    html = run_card(run)
    assert len(html) < 200_000  # the run's sources: these 300 and the other samples' task
    assert "… 281 more sources: see run.usage()" in visible_text(html)
    case = case_view(run, 0)
    assert len(case) < 200_000 and "… 280 more sources" in visible_text(case)
    lines = usage_source_table(run)
    assert len(lines) == 2 + 20 + 1 + 20 and max(map(len, lines)) < 400
    assert "… 281 more sources: see run.usage()" in lines
    assert max(map(len, usage_lines(run))) < 400 and len(repr(run)) < 5_000


def test_the_html_with_usage_is_self_contained() -> None:
    html = _evil(_run(_partly_priced))._repr_html_()
    assert 'data-evalbook="cost"' in html
    for needle in ("<script", "<style", "<link", "<img", "src=", "href=", "url(", "@import"):
        assert needle not in html.lower(), needle
    assert "class=" not in html  # every style inline: JupyterLab strips <style> blocks


def test_repr_and_show_say_when_cost_is_partly_known() -> None:
    assert "  Cost $0.03 (known for 3 of 4 samples) · $0.01 per case" in repr(_run(_partly_priced))
