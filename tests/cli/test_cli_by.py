"""`--by COL` and `--cluster COL` in `evalbook show` / `evalbook compare` and in `%eval show` /
`%eval compare`: one row per (slice, score), small slices flagged, escaped."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from tests._cli_helpers import in_process

import evalbook as eb

N = 60
HOSTILE = "x\x1b[31m\u202e"


# How the terminal spells a share and a difference of shares (docs/cli.md): written out here,
# so that a change of spelling fails. Enough for this data (no share within 0.5 % of 0 or 1).
def format_pct(x: float) -> str:
    return f"{x * 100:.0f}%"


def format_ci(low: float, high: float) -> str:
    return f"[{format_pct(low)}, {format_pct(high)}]"


def format_pp(x: float, *, signed: bool = True) -> str:
    if x == 0:
        return "0 pp"
    sign = ("+" if x > 0 else "\u2212") if signed else ""  # U+2212, the minus sign
    return f"{sign}{abs(x) * 100:.1f} pp"


def format_pp_ci(low: float, high: float) -> str:
    return f"[{format_pp(low)}, {format_pp(high)}]"


def _data() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "id": [f"q{i}" for i in range(N)],
            "cat": ["math"] * 25 + ["code"] * 30 + [HOSTILE] * 5,
            "passage": [f"p{i // 4}" for i in range(N)],
            "v": [float(i % 3 > 0) for i in range(N)],
        }
    )


def _runs(store: Path | None) -> tuple[eb.Run, eb.Run]:
    df = _data()
    ok = eb.define_score("ok", label="Right", primary=True)
    a = eb.run(df, task=lambda v: v, scorers=[eb.scorer(ok)(lambda v: v)], name="a",
               store=store, progress=False)  # fmt: skip
    fixed = eb.scorer(ok)(lambda v, id: 1.0 if id < "q3" or id.endswith("1") else v)
    b = eb.run(df, task=lambda v: v, scorers=[fixed], name="b", store=store, progress=False)
    return a, b


@pytest.fixture()
def stored(tmp_path: Path) -> tuple[eb.Run, eb.Run]:
    return _runs(tmp_path / "runs")


def _table(out: str, first: str) -> list[list[str]]:
    """The rows of the table whose header starts with `first`, split on runs of 2+ spaces."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = []
    for line in lines[start + 2 :]:
        if not line.strip() or line.startswith(("sliced", "small:", "intervals")):
            break
        rows.append([c.strip() for c in line.split("  ") if c.strip()])
    return rows


def test_show_by_prints_one_row_per_slice_and_flags_small_ones(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str]
) -> None:
    run = stored[0]
    code, out, err = in_process(capsys, "show", "a", "--by", "cat")
    assert code == 0, err
    expected = run.summary(by="cat")
    rows = _table(out, "cat ")
    assert [r[0].strip() for r in rows] == ["math", "code", "x\\x1b[31m\\u202e"]
    for row, (_, want) in zip(rows, expected.iterrows(), strict=True):
        assert format_ci(want["ci_low"], want["ci_high"]) in row
        assert (row[-1].strip() == "small") is (int(want["n_clusters"]) < 10)
    assert [r[-1].strip() for r in rows].count("small") == 1  # the 5-case slice
    assert "sliced by cat: 3 slices" in out
    assert "small: fewer than 10 counted cases in the slice" in out
    assert "\x1b" not in out and "\u202e" not in out


def test_show_by_several_columns_and_cluster(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str]
) -> None:
    run = stored[0]
    code, out, _ = in_process(capsys, "show", "a", "--by", "cat", "--cluster", "passage")
    assert code == 0
    want = run.summary(by="cat", cluster="passage")
    rows = _table(out, "cat ")
    header = next(line for line in out.splitlines() if line.startswith("cat "))
    assert "clusters" in header
    assert [int(r[-2]) for r in rows] == want["n_clusters"].tolist()  # 7, 8, 2 passages
    assert all(r[-1].strip() == "small" for r in rows)  # every slice has < 10 clusters
    assert "intervals clustered by passage" in out
    code, out, _ = in_process(capsys, "show", "a", "--by", "cat,passage")
    # passage p6 holds math and code cases, p13 code and the last slice's: 7 + 8 + 2 slices
    assert len(run.summary(by=["cat", "passage"])) == 17
    assert code == 0 and "sliced by cat, passage: 17 slices" in out


def test_show_cluster_alone_keeps_one_row_per_score(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = in_process(capsys, "show", "a", "--cluster", "passage")
    want = stored[0].summary(cluster="passage").iloc[0]
    rows = _table(out, "score ")
    assert code == 0 and len(rows) == 1
    assert format_ci(want["ci_low"], want["ci_high"]) in rows[0] and rows[0][-1].strip() == "15"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "a", "--by", "nope"], "nope"),
        (["show", "a", "--cluster", "nope"], "nope"),
        (["show", "a", "--by", ","], "--by ','"),
    ],
)
def test_unknown_columns_are_usage_errors_before_any_output(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = in_process(capsys, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and message in err


needs_compare_by = pytest.mark.skipif(
    "by" not in inspect.signature(eb.compare).parameters,
    reason="eb.compare(by=) is not in this tree yet",
)


@needs_compare_by
def test_compare_by_prints_holm_across_every_row_and_flags_small_slices(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = stored
    code, out, err = in_process(capsys, "compare", "a", "b", "--by", "cat", "--top", "0")
    assert code == 0, err
    want = eb.compare(a, b, by="cat").summary
    rows = [line for line in out.splitlines() if line.startswith("  cat=")]
    assert len(rows) == 3
    for row, (_, r) in zip(rows, want.iterrows(), strict=True):
        assert format_pp(r["delta"]) in row
        assert format_pp_ci(r["ci_low"], r["ci_high"]) in row
        # the mde shows when there is one ("could detect"); every delta equal: none
        assert (f"could detect ±{format_pp(r['mde'], signed=False)}" in row) is (r["mde"] > 0)
        assert f"Holm {r['p_adjusted']:.3f}" in row
        assert row.endswith(" · small slice") is bool(r["small"])
    assert [bool(s) for s in want["small"]] == [False, False, True]
    assert "small: fewer than 10 paired cases in the slice" in out
    assert "\x1b" not in out and "x\\x1b[31m\\u202e" in out


@needs_compare_by
def test_compare_cluster_shows_the_clusters_and_the_clustered_test(
    stored: tuple[eb.Run, eb.Run], capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = stored
    code, out, _ = in_process(capsys, "compare", "a", "b", "--cluster", "passage", "--top", "0")
    want = eb.compare(a, b, cluster="passage").summary.iloc[0]
    rows = [line for line in out.splitlines() if line.startswith("  ok: ")]
    assert code == 0 and len(rows) == 1
    assert format_pp_ci(want["ci_low"], want["ci_high"]) in rows[0]
    assert " · 15 clusters" in rows[0] and int(want["n_clusters"]) == 15
    assert "clustered t" in rows[0]
    code, _, err = in_process(capsys, "compare", "a", "b", "--by", "nope")
    assert code == 2 and "nope" in err


# -- magics -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip() -> Any:
    from IPython import get_ipython
    from IPython.testing.globalipapp import start_ipython

    shell = start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "evalbook")
    return shell


def test_magic_show_by_returns_the_sliced_summary_with_small(ip: Any) -> None:
    a, _ = _runs(None)
    ip.user_ns["ra"] = a
    table = ip.run_line_magic("eval", "show ra --by cat")
    want = a.summary(by="cat")
    pd.testing.assert_frame_equal(table.drop(columns="small"), want)
    assert table["small"].tolist() == [False, False, True]
    clustered = ip.run_line_magic("eval", "show ra --by cat --cluster passage")
    assert clustered["n_clusters"].tolist() == [7, 8, 2] and clustered["small"].all()


def test_magic_by_errors_are_usage_errors(ip: Any) -> None:
    from IPython.core.error import UsageError

    a, _ = _runs(None)
    ip.user_ns["ra"] = a
    with pytest.raises(UsageError, match="nope"):
        ip.run_line_magic("eval", "show ra --by nope")
    with pytest.raises(UsageError, match="--by: only for %eval show and %eval compare"):
        ip.run_line_magic("eval", "runs --by cat")


@needs_compare_by
def test_magic_compare_by_returns_the_sliced_comparison(ip: Any) -> None:
    a, b = _runs(None)
    ip.user_ns["ra"], ip.user_ns["rb"] = a, b
    comp = ip.run_line_magic("eval", "compare ra rb --by cat --cluster passage")
    want = eb.compare(a, b, by="cat", cluster="passage")
    pd.testing.assert_frame_equal(comp.summary, want.summary)
    assert "small slice" in comp._repr_html_()
