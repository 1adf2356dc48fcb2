"""Text in views: HTML escaped, control characters shown escaped, long text shortened (the
tables keep every character)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import cli
from display_fixtures import case_view

TEXT_LIMIT = 10_000  # characters of one value in a case view
LONG = "x" * (TEXT_LIMIT + 5)
ODD = "<b>bold</b>\x1b[31mred\x00"


def _run() -> eb.Run:
    data = pd.DataFrame({"id": ["long", "odd"], "q": [LONG, ODD]})

    @eb.scorer("s")
    def s(output: str) -> eb.Score:
        return eb.Score(1.0, rationale=output, metadata={"echo": output})

    return eb.run(data, task=lambda q: q, scorers=[s], name=ODD, store=None, progress=False)


def test_long_text_is_shortened_in_the_case_view_and_kept_in_the_tables() -> None:
    run = _run()
    assert run.cases["output"][0] == LONG and run.scores["rationale"][0] == LONG
    html = case_view(run, 0)
    assert "x" * TEXT_LIMIT + "… (5 more characters)" in html
    assert "x" * (TEXT_LIMIT + 1) not in html  # input, output, rationale: each cut


def test_control_characters_and_markup_are_shown_escaped(tmp_path: Path) -> None:
    run = _run()
    html = case_view(run, 1)
    assert "&lt;b&gt;bold&lt;/b&gt;\\x1b[31mred\\x00" in html
    assert "\x1b" not in html and "\x00" not in html and "<b>bold" not in html
    # the terminal: `evalbook run` prints the run (named ODD) as `evalbook show` does
    (tmp_path / "evals.py").write_text(
        textwrap.dedent(
            f"""
            import pandas as pd
            import evalbook as eb

            ODD = {ODD!r}
            data = pd.DataFrame({{"id": ["odd"], "q": [ODD]}})
            s = eb.scorer("s")(lambda output: eb.Score(1.0, rationale=output))
            odd = eb.Eval(data, task=lambda q: q, scorers=[s], name=ODD)
            """
        )
    )
    done = cli("run", "evals.py", "--no-store", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "<b>bold</b>\\x1b[31mred\\x00" in done.stdout and "\x1b" not in done.stdout


def test_widget_list_entries_are_short() -> None:
    pytest.importorskip("anywidget")
    run = eb.run(pd.DataFrame({"id": ["i" * 1000]}), task=lambda id: id,
                 scorers=[lambda output: 1.0], store=None, progress=False)  # fmt: skip
    labels = [label for label, _ in eb.show(run).explorer.cases.options]
    assert len(labels) == 1 and len(labels[0]) < 200 and labels[0].startswith("iii")
