"""`%eval` / `%%eval` in a real (terminal-less) IPython shell."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


@pytest.fixture()
def ns(ip: Any, tmp_path: Path) -> dict[str, Any]:
    ip.user_ns["df"] = pd.DataFrame(
        {"q": ["a", "b", "c"], "expected": ["A", "B", "x"], "not an identifier": [1, 2, 3]}
    )
    ip.run_cell(
        "import evalbook as eb\n"
        "@eb.scorer\n"
        "def exact(output, expected):\n"
        "    return float(output == expected)\n"
    )
    ip.user_ns["store"] = str(tmp_path / "runs")
    return dict(ip.user_ns)


def cell(ip: Any, line: str, body: str) -> Any:
    return ip.run_cell_magic("eval", line, body)


def test_usage_is_in_the_docstring(ip: Any) -> None:
    doc = ip.find_line_magic("eval").__doc__
    for text in ("%eval runs [STORE]", "%eval compare A B", "--scorers", "--as VAR", "words"):
        assert text in doc
    assert ip.find_cell_magic("eval") is not None


def test_cell_magic_runs_the_body_as_the_task(ip: Any, ns: dict[str, Any], tmp_path: Path) -> None:
    run = cell(ip, f"df --scorers exact --store {tmp_path} --as r1", "q.upper()")
    assert isinstance(run, eb.Run) and ip.user_ns["r1"] is run
    assert run.cases["output"].tolist() == ["A", "B", "C"]
    assert run.headline.value == pytest.approx(2 / 3)
    assert run.name == "df"
    assert run.path is not None and Path(run.path).parent == tmp_path


def test_output_variable_wins_and_row_ctx_case_id_are_bound(
    ip: Any, ns: dict[str, Any], tmp_path: Path
) -> None:
    body = (
        "if q == 'c':\n"
        "    ctx.fail('no c')\n"
        "output = f\"{case_id}:{row['not an identifier']}:{q}\"\n"
        "'ignored'\n"
    )
    run = cell(ip, f"df --store {tmp_path} --name custom", body)
    assert run.name == "custom"
    assert run.cases["output"].tolist()[:2] == ["0:1:a", "1:2:b"]
    assert run.cases["outcome"].astype(str).tolist() == ["passed", "passed", "failed"]


def test_variables_are_not_expanded(ip: Any, ns: dict[str, Any], tmp_path: Path) -> None:
    ip.user_ns["who"] = "exact"  # were `$who` expanded, the scorer `exact` would be found
    result = ip.run_cell(f"%%eval df --scorers $who --store {tmp_path}\nq\n")
    assert isinstance(result.error_in_exec, UsageError)
    assert "no variable named '$who'" in str(result.error_in_exec)


def test_options_reach_eb_run(ip: Any, ns: dict[str, Any], tmp_path: Path) -> None:
    body = "if q == 'b':\n    raise RuntimeError('flaky')\nq"
    run = cell(ip, f"df --store {tmp_path} --timeout 30 --attempts 2 --concurrency 1", body)
    assert run.options["attempts"] == 2 and run.options["concurrency"] == 1
    assert run.options["timeout"] == 30.0
    assert run.cases["outcome"].astype(str).tolist() == ["passed", "errored", "passed"]
    assert run.cases["attempts"].tolist() == [1, 2, 1]


def test_await_in_the_body_makes_an_async_task(ip: Any, ns: dict[str, Any], tmp_path: Path) -> None:
    # `await` outside an async function would not compile; the task runs on the run's loop
    body = "import asyncio\nawait asyncio.sleep(0)\nasyncio.current_task() is not None and q * 2"
    run = cell(ip, f"df --store {tmp_path}", body)
    assert run.cases["outcome"].astype(str).tolist() == ["passed"] * 3
    assert run.cases["output"].tolist() == ["aa", "bb", "cc"]


@pytest.mark.parametrize(
    ("line", "body", "message"),
    [
        ("df --scorers nope", "q", "no variable named 'nope'"),
        ("df", "x = 1", "assign the case's output"),
        ("df", "q +", "%%eval cell: invalid syntax"),
        ("missing", "q", "DATA must name a DataFrame"),
        ("exact", "q", "is a Scorer, not a pandas DataFrame"),
        ("df --as 1x", "q", "not a valid variable name"),
        ("df other", "q", "usage: %%eval DATA"),
        ("df --score x", "q", "only for %eval compare"),
        ("df --concurrency many", "q", "invalid int value"),
        ("df --scores no.such.score", "q", "no.such.score"),
    ],
)
def test_cell_mistakes_are_usage_errors(
    ip: Any, ns: dict[str, Any], tmp_path: Path, line: str, body: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        cell(ip, f"{line} --store {tmp_path}", body)
    assert not any(tmp_path.iterdir())  # refused before any case ran


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "needs a subcommand"),
        ("bogus", "unknown subcommand 'bogus'"),
        ("show", "usage: %eval show RUN"),
        ("compare a", "usage: %eval compare A B"),
        ("runs a b", "usage: %eval runs"),
        ("export r", "usage: %eval export RUN PATH"),
        ("show nothing", "no run named 'nothing'"),
        ("show df", "no run named 'df' (df is a DataFrame, not a Run)"),
        ("show r1 --scorers x", "--scorers: only for the %%eval cell magic"),
        ("export df x.csv --table nope", "invalid choice"),
    ],
)
def test_line_mistakes_are_usage_errors(
    ip: Any, ns: dict[str, Any], line: str, message: str
) -> None:
    with pytest.raises(UsageError, match=re.escape(message)):
        ip.run_line_magic("eval", line)


def test_a_usage_error_prints_one_line_without_traceback(
    ip: Any, ns: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    result = ip.run_cell("%eval bogus")
    assert isinstance(result.error_in_exec, UsageError)
    out = capsys.readouterr()
    text = out.out + out.err
    assert "unknown subcommand" in text and "Traceback" not in text


def test_store_subcommands(ip: Any, ns: dict[str, Any], tmp_path: Path) -> None:
    store = tmp_path / "store"
    first = cell(ip, f"df --scorers exact --store {store} --name base --as base", "q.upper()")
    second = cell(ip, f"df --scorers exact --store {store} --name cand --as cand_run", "q")

    table = ip.run_line_magic("eval", f"runs {store}")
    assert isinstance(table, pd.DataFrame) and sorted(table["name"]) == ["base", "cand"]

    by_variable = ip.run_line_magic("eval", "show base")
    assert by_variable.run is first
    by_name = ip.run_line_magic("eval", f"show cand --store {store}")
    assert by_name.run.id == second.id and by_name.run is not second
    by_path = ip.run_line_magic("eval", f"show {first.path}")
    assert by_path.run.id == first.id

    comp = ip.run_line_magic("eval", f"compare base cand --score exact --store {store}")
    assert isinstance(comp, eb.Comparison)
    assert comp.summary["regressed"].tolist() == [2]
    ip.user_ns["comp"] = comp
    assert ip.run_line_magic("eval", "show comp").comparison is comp
    with pytest.raises(UsageError, match="nope"):
        ip.run_line_magic("eval", f"compare base cand --score nope --store {store}")

    csv = ip.run_line_magic("eval", f"export base {tmp_path / 'out' / 'scores.csv'}")
    assert csv == tmp_path / "out" / "scores.csv"
    assert len(pd.read_csv(csv)) == len(first.scores)
    parquet = ip.run_line_magic("eval", f"export base {tmp_path / 'cases.parquet'} --table cases")
    assert pd.read_parquet(parquet)["output"].tolist() == ["A", "B", "C"]
    with pytest.raises(UsageError, match=re.escape("must end in .csv, .parquet or .pq")):
        ip.run_line_magic("eval", f"export base {tmp_path / 'x.txt'}")


def test_import_evalbook_does_not_import_ipython() -> None:
    import subprocess
    import sys

    code = "import sys, evalbook; print('IPython' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
