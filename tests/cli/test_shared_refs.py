"""The CLI and the magics find runs and export tables through one path (`_api._refs`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb
from _compare_helpers import make_run
from evalbook._api._refs import TABLES, RefError, export_table, resolve_run
from evalbook._cli._main import main


@pytest.fixture()
def store(tmp_path: Path) -> Path:
    """A store with two runs named `qa` (the later one has 3 cases) and one named `other`."""
    folder = tmp_path / "runs"
    make_run({"ok": [1.0, 0.0]}, name="qa").save(folder)
    make_run({"ok": [1.0, 1.0, 0.0]}, name="qa").save(folder)
    make_run({"ok": [1.0]}, name="other").save(folder)
    return folder


def test_a_run_by_name_id_folder_or_variable(store: Path) -> None:
    latest = resolve_run("qa", store)
    assert len(latest.cases) == 3  # the latest run of that name wins
    assert resolve_run(latest.id, store).id == latest.id
    assert resolve_run(str(latest.path), "nowhere").id == latest.id
    assert resolve_run(Path(str(latest.path)).name, store).id == latest.id
    mine = make_run({"ok": [0.5]}, name="mine")
    assert resolve_run("mine", store, {"mine": mine}) is mine
    assert resolve_run("qa", store, {"qa": "a string, not a run"}).id == latest.id


def test_what_cannot_be_found_says_why_in_one_line(store: Path, tmp_path: Path) -> None:
    with pytest.raises(RefError, match=r"no run named 'nope' in the store .*other, qa\)$"):
        resolve_run("nope", store)
    with pytest.raises(RefError, match="there is no run store at"):
        resolve_run("qa", tmp_path / "missing")
    with pytest.raises(RefError, match=r"\(x is a int, not a Run\)"):
        resolve_run("x", store, {"x": 1})
    (tmp_path / "empty").mkdir()
    with pytest.raises(RefError, match="cannot read the run at"):
        resolve_run(str(tmp_path / "empty"), store)


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq"])
def test_export_writes_every_table_in_both_formats(
    store: Path, tmp_path: Path, table: str, suffix: str
) -> None:
    run = resolve_run("qa", store)
    written = export_table(run, tmp_path / "out" / f"t{suffix}", table)
    expected = {"scores": run.scores, "cases": run.cases, "summary": run.summary(),
                "unscored": run.unscored(), "wide": run.wide(), "usage": run.usage(),
                "usage_summary": run.usage_summary()}[table]  # fmt: skip
    back = pd.read_csv(written.path) if suffix == ".csv" else pd.read_parquet(written.path)
    assert written.table == table and written.rows == len(expected) == len(back)
    assert list(back.columns) == [str(c) for c in expected.columns]


def test_export_refuses_unknown_extensions_and_tables(store: Path, tmp_path: Path) -> None:
    run = resolve_run("qa", store)
    with pytest.raises(RefError, match=r"must end in \.csv, \.parquet or \.pq"):
        export_table(run, tmp_path / "t.xlsx")
    with pytest.raises(RefError, match="unknown table 'nope'"):
        export_table(run, tmp_path / "t.csv", "nope")
    (tmp_path / "file").write_text("")
    with pytest.raises(RefError, match="cannot write"):
        export_table(run, tmp_path / "file" / "t.csv")  # a file where a folder must go
    assert not (tmp_path / "t.xlsx").exists() and not (tmp_path / "t.csv").exists()


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


def test_cli_and_magics_resolve_and_export_alike(
    ip: Any, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for table in ("unscored", "wide"):
        assert main(["export", "qa", str(tmp_path / f"cli-{table}.csv"), "--table", table,
                     "--store", str(store)]) == 0  # fmt: skip
        path = ip.run_line_magic(
            "eval", f"export qa {tmp_path / f'magic-{table}.csv'} --table {table} --store {store}"
        )
        assert path.read_bytes() == (tmp_path / f"cli-{table}.csv").read_bytes()
    view = ip.run_line_magic("eval", f"show qa --store {store}")
    assert view.run.id == resolve_run("qa", store).id
    capsys.readouterr()
    # the same mistake: one line from the CLI, a UsageError with the same message in IPython
    assert main(["show", "nope", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("eval", f"show nope --store {store}")
    assert str(caught.value) in err
    assert isinstance(eb.load_run(resolve_run("other", store).path), eb.Run)


def test_a_ref_that_is_a_name_and_another_runs_id_is_refused(store: Path) -> None:
    """Not the named run picked silently over the run with that id (or the other way)."""
    other = resolve_run("other", store)
    make_run({"ok": [0.0]}, name=other.id).save(store)  # a run named like other's id
    with pytest.raises(RefError, match=rf"'{other.id}' is both a run name .* pass the run's"):
        resolve_run(other.id, store)
    assert resolve_run(str(other.path), store).id == other.id  # the folder is unambiguous
