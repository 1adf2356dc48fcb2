"""Issue 20: the CLI and the magics agree, and a comparison has one text form everywhere.

`repr(comparison)`, the widget's `text/plain` and `evalbook compare` print the same lines
(docs/cli.md, `evalbook compare A B`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from tests._cli_helpers import in_process

import evalbook as eb

# the tables a run exports (docs/cli.md, `evalbook export`; docs/notebooks.md, `%eval export`)
TABLES = ["scores", "cases", "summary", "unscored", "wide", "usage", "usage_summary"]
HOSTILE = "x\x1b[31m\u202e"


def _pair(store: Path) -> tuple[eb.Run, eb.Run]:
    df = pd.DataFrame({"q": [f"q{i}" for i in range(12)], "kind": ["a", HOSTILE] * 6})
    ok = eb.define_score("ok", label="Right", primary=True)
    base = eb.scorer(ok)(lambda q: float(int(q[1:]) % 3 > 0))
    a = eb.run(df, task=lambda q: q, scorers=[base], name="a", store=store, progress=False)
    b = eb.run(df, task=lambda q: q, scorers=[eb.scorer(ok)(lambda q: 1.0)], name="b",
               store=store, progress=False)  # fmt: skip
    return a, b


@pytest.mark.parametrize("by", [None, "kind"])
def test_repr_widget_text_and_cli_print_the_same_comparison(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], by: str | None
) -> None:
    a, b = _pair(tmp_path)
    comparison = eb.compare(a, b, by=by)
    text = repr(comparison)
    assert len(text.splitlines()) == 1 + len(comparison.summary)
    widgets = pytest.importorskip("anywidget")
    assert widgets is not None
    bundle = eb.show(comparison)._repr_mimebundle_()
    assert bundle["text/plain"] == text
    args = ["compare", "a", "b", "--store", str(tmp_path), "--top", "0"]
    code, out, err = in_process(capsys, *args, *(["--by", by] if by else []))
    assert code == 0, err
    lines = out.splitlines()
    start = lines.index(text.splitlines()[0])
    assert "\n".join(lines[start : start + len(text.splitlines())]) == text
    assert "\x1b" not in out and "\u202e" not in out


# -- the magics ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip() -> Any:
    globalipapp = pytest.importorskip("IPython.testing.globalipapp")
    shell = globalipapp.start_ipython() or globalipapp.get_ipython()
    shell.run_line_magic("load_ext", "evalbook")
    return shell


def test_the_help_labels_cell_magic_options_with_two_percent_signs(ip: Any) -> None:
    doc = ip.find_line_magic("eval").__doc__
    options = doc[doc.index("options:") :]
    labelled = [line for line in options.splitlines() if "eval:" in line]
    assert len(labelled) == 9  # --scorers ... --as: the cell magic's own options
    assert all("%%eval: " in line for line in labelled), labelled


def test_every_table_exports_alike_from_the_cli_and_the_magic(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, _ = _pair(tmp_path / "runs")
    code, usage, _ = in_process(capsys, "export", "--help")
    assert code == 0
    (choices,) = set(re.findall(r"--table \{([^}]*)\}", usage))  # argparse's {a,b,...}
    cli_tables = choices.split(",")
    magic = ip.find_line_magic("eval").__self__.eval
    magic_tables = next(
        x.choices
        for x in magic.parser._actions
        if x.dest == "table"  # type: ignore[attr-defined]
    )
    assert cli_tables == list(magic_tables) == TABLES
    ip.user_ns["a"] = a
    for table in TABLES:
        for suffix in (".csv", ".pq"):
            by_cli, by_magic = tmp_path / f"cli-{table}{suffix}", tmp_path / f"ip-{table}{suffix}"
            args = ["export", str(a.path), str(by_cli), "--table", table]
            code, _, err = in_process(capsys, *args)
            assert code == 0, err
            assert ip.run_line_magic("eval", f"export a {by_magic} --table {table}") == by_magic
            assert by_cli.read_bytes() == by_magic.read_bytes() or suffix == ".pq"
            read = pd.read_csv if suffix == ".csv" else pd.read_parquet
            pd.testing.assert_frame_equal(read(by_cli), read(by_magic))


def test_the_cell_magic_reads_a_pq_file_as_parquet(ip: Any, tmp_path: Path) -> None:
    data = tmp_path / "cases.pq"
    pd.DataFrame({"q": ["a", "b"]}).to_parquet(data)
    run = ip.run_cell_magic("eval", f"{data} --store {tmp_path / 'runs'}", "q.upper()")
    assert run.cases["output"].tolist() == ["A", "B"]


@pytest.mark.parametrize(
    ("cli", "magic"),
    [
        ("compare a b --score nope", "compare a b --score nope"),
        ("compare a b --score ,", "compare a b --score ,"),
        ("compare a b --by ,", "compare a b --by ,"),
        ("show a --by ,", "show a --by ,"),
        ("compare a b --by nope", "compare a b --by nope"),
        ("show zzz", "show zzz"),
        ("export a out.xlsx", "export a out.xlsx"),
    ],
)
def test_the_same_mistake_reads_the_same_in_the_cli_and_the_magic(
    ip: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str], cli: str, magic: str
) -> None:
    store = tmp_path / "runs"
    _pair(store)
    code, out, err = in_process(capsys, *cli.split(), "--store", str(store))
    assert code == 2 and out == "" and len(err.splitlines()) == 1, err
    said = err.strip().split(": error: ", 1)[1]
    for name in ("a", "b"):
        ip.user_ns.pop(name, None)  # RUN names the stored runs, as in the CLI
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("eval", f"{magic} --store {store}")
    assert str(caught.value) == said
