"""`evalbook show A B C --pool`: the pooled table in the terminal (docs/cli.md, docs/interop.md).

`show` keeps its one-run form and messages; several runs without `--pool` are one clear
error; names, labels and notes show escaped.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from tests._cli_helpers import assert_user_error, cli, in_process

import evalbook as eb


def _store(name: str, hits: int, n: int, *, primary: str = "x", label: str | None = None) -> eb.Run:
    frame = pd.DataFrame({"hit": [1.0] * hits + [0.0] * (n - hits)})
    frame["topic"] = ["u", "v"] * (n // 2) + ["u"] * (n % 2)
    main = eb.define_score(primary, label=label, primary=True)
    return eb.run(
        frame,
        scorers=[eb.scorer(main)(lambda hit: hit), eb.scorer("ok")(lambda hit: 1.0 - hit)],
        output_column="hit",
        name=name,
        progress=False,
    )


def test_show_pool_prints_the_pooled_table_weighted_by_counted_cases(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _store("a", 80, 90)
    _store("b", 2, 10)
    code, out, err = in_process(capsys, "show", "a", "b", "--pool")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "pooled · 2 runs · 100 cases"
    row = next(line for line in lines if line.startswith("ok "))
    assert row.split()[:3] == ["ok", "ok", "18%"]  # (10 + 8) / 100, not (11% + 80%) / 2
    assert row.split()[-2:] == ["100", "2"]
    assert any(line.startswith("a ") and " 90 " in line for line in lines)  # the runs listed


def test_the_note_and_each_runs_headline_show_when_primary_scores_differ(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _store("a", 80, 90, primary="x")
    _store("b", 2, 10, primary="y")
    _, out, _ = in_process(capsys, "show", "a", "b", "--pool")
    assert "Primary scores differ (x, y)" in out
    assert "  a: x 89% · completed 100%" in out
    assert "  b: y 20% · completed 100%" in out
    _store("c", 1, 2, primary="x")
    _, same, _ = in_process(capsys, "show", "a", "c", "--pool")
    assert "Primary scores differ" not in same and "completed" not in same


def test_pool_by_a_column_gives_a_row_per_slice_and_score(
    capsys: pytest.CaptureFixture[str],
) -> None:
    a, b = _store("a", 80, 90), _store("b", 2, 10)
    code, out, _ = in_process(capsys, "show", "a", "b", "--pool", "--by", "topic")
    assert code == 0
    lines = out.splitlines()
    start = lines.index("topic  score  label  mean      95% CI  counted  runs")
    assert set(lines[start + 1]) == {"-", " "}  # the rule under the header
    rows = [re.split(r"\s{2,}", line.strip()) for line in lines[start + 2 : start + 6]]
    assert lines[start + 6] == ""  # 2 slices x 2 scores, then the table ends
    want = eb.pool([a, b], by="topic")
    assert rows == [
        [
            r.topic,
            r.score,
            r.label,
            f"{r.mean:.0%}",
            f"[{r.ci_low:.0%}, {r.ci_high:.0%}]",
            str(r.counted),
            str(r.n_runs),
        ]
        for r in want.itertuples()
    ]


def test_show_of_one_run_is_unchanged_and_several_without_pool_are_an_error(
    tmp_path: Path,
) -> None:
    _store("a", 80, 90)
    _store("b", 2, 10)
    one = cli("show", "a", cwd=tmp_path)
    assert one.returncode == 0 and one.stdout.splitlines()[1] == "x 89% · completed 100%"
    assert "pooled" not in one.stdout
    assert_user_error(cli("show", "a", "b", cwd=tmp_path), "show takes one RUN, not 2", "--pool")


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["a", "nope", "--pool"], ["nope"]),
        (["a", "b", "--pool", "--by", "missing"], ["by='missing'", "run 'a'"]),
        (["a", "--pool", "--cluster", "topic"], ["--cluster does not apply with --pool"]),
    ],
)
def test_bad_pool_usage_is_one_line_and_exit_2(
    tmp_path: Path, args: list[str], fragments: list[str]
) -> None:
    _store("a", 80, 90)
    _store("b", 2, 10)
    assert_user_error(cli("show", *args, cwd=tmp_path), *fragments)


H = "\x1b[2J\u202e<b>x</b>\nline"


def test_names_labels_and_notes_show_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    a = _store("a", 3, 4, primary="x", label=H)
    b = _store("b", 1, 4, primary="y")
    code, out, _ = in_process(capsys, "show", str(a.path), str(b.path), "--pool")
    assert code == 0
    assert "\x1b" not in out and "\u202e" not in out
    assert "\\x1b[2J" in out and "line" in out


def test_one_run_pools_too(tmp_path: Path) -> None:
    _store("a", 80, 90)
    proc = cli("show", "a", "--pool", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("pooled · 1 run · 90 cases")
