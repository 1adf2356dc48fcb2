"""The PR-comment Markdown of a run and of a comparison: escaped, and never longer than
60,000 characters whatever the run (docs/cli.md)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalbook as eb
from _report_runs import EVIL, hostile_runs
from evalbook._compare._verdict import verdict
from evalbook._render._markdown import MAX_CHARS, comparison_markdown, md, run_markdown


def test_md_escapes_what_would_break_a_cell_or_the_comment() -> None:
    text = md("a|b <script>`x`\n@team *bold* [link](u) \\ ~x~ \x1b")
    assert "|" not in text.replace("\\|", "")
    assert "<" not in text and "`" not in text and "@" not in text and "\n" not in text
    for c in "*_[]~":
        assert c not in text.replace("\\" + c, "")
    assert "\\x1b" in text  # a control character shown as its escape
    assert md("x" * 500).endswith("(380 more characters)")


def test_hostile_run_and_comparison_markdown_escape_every_field() -> None:
    base, new = hostile_runs()
    comparison = eb.compare(base, new)
    for text in (
        run_markdown(new, verdict(new)),
        comparison_markdown(comparison, verdict(new), regressions=comparison.regressions()),
    ):
        assert "<script" not in text and "`0`" not in text
        assert "&lt;script&gt;alert(&#x27;x&#x27;)" in text or "&lt;script&gt;alert('x')" in text
        # every table row has as many cells as its header: no `|` got through
        for block in text.split("\n\n"):
            rows = [line for line in block.splitlines() if line.startswith("| ")]
            cells = {len(line.replace("\\|", "").split("|")) for line in rows}
            assert len(cells) <= 1, block
    text = comparison_markdown(comparison, verdict(new), regressions=comparison.regressions())
    assert "❌ check failed" in text  # a case errored: the run is incomplete
    assert "defined differently" in text  # the warning
    assert "regressions (13)" in text


def test_markdown_of_a_20000_case_comparison_fits_a_comment() -> None:
    n = 20_000
    frame = pd.DataFrame({"id": [f"case-{i}-{EVIL}" for i in range(n)], "i": range(n)})
    ok = eb.define_score("ok", label=f"{EVIL} | ok", primary=True)

    def make(name: str, worse: bool) -> eb.Run:
        return eb.run(
            frame,
            task=lambda i: f"{EVIL} output {i} " + "|`@" * 200,
            scorers=[eb.scorer(ok)(lambda i: 0.0 if worse and i % 4 else 1.0)],
            name=name,
            store=None,
            progress=False,
        )

    base, new = make("base", False), make("new", True)
    comparison = eb.compare(base, new)
    regressed = comparison.regressions()
    assert len(regressed) == 15_000
    text = comparison_markdown(comparison, verdict(new, base, max_drop=0.01), regressions=regressed)
    assert len(text) <= MAX_CHARS
    assert "_showing 30 of 15,000 regressions_" in text
    print(f"Markdown of a {n:,}-case comparison, 15,000 regressions: {len(text):,} characters")


@dataclass
class FakeComparison:
    """A `ComparisonLike` of any size, without running anything."""

    summary: pd.DataFrame
    cases: pd.DataFrame
    warnings: list[str] = field(default_factory=list)


def _fake(n_rows: int, n_cases: int, n_warnings: int, text: str) -> FakeComparison:
    rng = np.random.default_rng(n_rows * 7 + n_cases)
    delta = rng.uniform(-1, 1, n_rows)
    summary = pd.DataFrame(
        {
            "slice": [f"{text}{i}" for i in range(n_rows)],
            "score": [f"s{i}{text}" for i in range(n_rows)],
            "label": [text * 3] * n_rows,
            "mean_a": 0.5,
            "mean_b": 0.5 + delta / 2,
            "delta": delta,
            "ci_low": delta - 0.1,
            "ci_high": delta + 0.1,
            "p_value": 0.01,
            "p_adjusted": 0.02,
            "n_paired": n_cases,
            "improved": 1,
            "regressed": n_cases,
            "same": 0,
            "test": "paired t",
            "mde": 0.05,
        }
    )
    a = rng.uniform(0, 1, n_cases)
    cases = pd.DataFrame(
        {
            "case_id": [f"{text}{i}" for i in range(n_cases)],
            "score": "s0",
            "a": a,
            "b": a - 0.5,
            "delta": -0.5,
            "change": "regressed",
        }
    )
    return FakeComparison(summary, cases, [text * 50] * n_warnings)


@settings(max_examples=25, deadline=None)
@given(
    n_rows=st.integers(0, 400),
    n_cases=st.integers(0, 5_000),
    n_warnings=st.integers(0, 200),
    text=st.text(min_size=0, max_size=300),
    limit=st.integers(2_000, MAX_CHARS),
)
def test_markdown_never_exceeds_its_limit(
    n_rows: int, n_cases: int, n_warnings: int, text: str, limit: int
) -> None:
    comparison = _fake(n_rows, n_cases, n_warnings, text)
    out = comparison_markdown(comparison, limit=limit)
    assert len(out) <= limit
    assert out.count("<details>") == out.count("</details>")  # cut or not, blocks close
    if n_cases > 30 and "regressions (" in out and "left out" not in out:
        assert f"of {n_cases:,} regressions" in out


@pytest.mark.parametrize("limit", [600, 1_500, 4_000, MAX_CHARS])
def test_run_markdown_is_cut_to_its_limit_and_says_so(limit: int) -> None:
    _, new = hostile_runs()
    text = run_markdown(new, verdict(new), limit=limit)
    assert len(text) <= limit
    assert text.count("<details>") == text.count("</details>")
    if limit < 1_500:
        assert "the rest is left out" in text
