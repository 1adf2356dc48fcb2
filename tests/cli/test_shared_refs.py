"""The CLI and the magics find runs and export tables alike: RUN is a variable (magics), a run
folder, or a run name or id in a store, the latest run of a name wins (docs/cli.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb
from _cli_helpers import in_process, main
from _compare_helpers import make_run

TABLES = ["scores", "cases", "summary", "unscored", "wide", "usage", "usage_summary"]


@pytest.fixture()
def made(tmp_path: Path) -> dict[str, eb.Run]:
    """A store with two runs named `qa` (the later one, `qa`, has 3 cases) and one named
    `other`; the stored runs by role."""
    folder = tmp_path / "runs"
    first = make_run({"ok": [1.0, 0.0]}, name="qa")
    first.save(folder)
    latest = make_run({"ok": [1.0, 1.0, 0.0]}, name="qa")
    latest.save(folder)
    other = make_run({"ok": [1.0]}, name="other")
    other.save(folder)
    return {"first": first, "qa": latest, "other": other}


@pytest.fixture()
def store(made: dict[str, eb.Run], tmp_path: Path) -> Path:
    return tmp_path / "runs"


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


def _shown(capsys: pytest.CaptureFixture[str], ref: str, store: Path | str) -> str:
    """The title line of `evalbook show REF --store STORE` (`name · N cases · id ID`)."""
    code, out, err = in_process(capsys, "show", ref, "--store", str(store))
    assert code == 0, err
    return out.splitlines()[0]


def _error(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """The one line `evalbook ARGS` prints on stderr, after `error: ` (exit 2, no output)."""
    code, out, err = in_process(capsys, *args)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (out, err)
    return err.strip().split(": error: ", 1)[1]


def test_a_run_by_name_id_folder_or_variable(
    ip: Any, made: dict[str, eb.Run], store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = made["qa"]
    title = f"qa · 3 cases · id {latest.id}"  # the latest run of that name wins
    assert _shown(capsys, "qa", store) == title
    assert _shown(capsys, latest.id, store) == title
    assert _shown(capsys, str(latest.path), "nowhere") == title
    assert _shown(capsys, Path(str(latest.path)).name, store) == title
    mine = make_run({"ok": [0.5]}, name="mine")
    ip.user_ns["mine"] = mine
    assert ip.run_line_magic("eval", f"show mine --store {store}").run is mine
    ip.user_ns["qa"] = "a string, not a run"
    try:
        assert ip.run_line_magic("eval", f"show qa --store {store}").run.id == latest.id
    finally:
        del ip.user_ns["qa"]


def test_what_cannot_be_found_says_why_in_one_line(
    ip: Any, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = _error(capsys, "show", "nope", "--store", str(store))
    assert said.startswith("no run named 'nope' in the store ") and said.endswith("other, qa)")
    said = _error(capsys, "show", "qa", "--store", str(tmp_path / "missing"))
    assert "there is no run store at" in said
    ip.user_ns["x"] = 1
    with pytest.raises(UsageError, match=r"\(x is a int, not a Run\)"):
        ip.run_line_magic("eval", f"show x --store {store}")
    (tmp_path / "empty").mkdir()
    said = _error(capsys, "show", str(tmp_path / "empty"), "--store", str(store))
    assert "cannot read the run at" in said


@pytest.mark.parametrize("table", TABLES)
@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".pq"])
def test_export_writes_every_table_in_both_formats(
    made: dict[str, eb.Run],
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    table: str,
    suffix: str,
) -> None:
    path = tmp_path / "out" / f"t{suffix}"
    code, out, err = in_process(capsys, "export", "qa", str(path), "--table", table,
                                "--store", str(store))  # fmt: skip
    assert code == 0, err
    run = eb.load_run(made["qa"].path)  # the run `qa` names
    expected = {"scores": run.scores, "cases": run.cases, "summary": run.summary(),
                "unscored": run.unscored(), "wide": run.wide(), "usage": run.usage(),
                "usage_summary": run.usage_summary()}[table]  # fmt: skip
    back = pd.read_csv(path) if suffix == ".csv" else pd.read_parquet(path)
    assert out == f"wrote {table} ({len(expected)} rows) to {path}\n"
    assert len(back) == len(expected)
    assert list(back.columns) == [str(c) for c in expected.columns]


def test_export_refuses_unknown_extensions_and_tables(
    ip: Any, store: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    at = ["--store", str(store)]
    said = _error(capsys, "export", "qa", str(tmp_path / "t.xlsx"), *at)
    assert "must end in .csv, .parquet or .pq" in said
    said = _error(capsys, "export", "qa", str(tmp_path / "t.csv"), "--table", "nope", *at)
    assert "--table" in said and "'nope'" in said
    with pytest.raises(UsageError, match="'nope'"):
        ip.run_line_magic("eval", f"export qa {tmp_path / 't.csv'} --table nope {' '.join(at)}")
    (tmp_path / "file").write_text("")
    said = _error(capsys, "export", "qa", str(tmp_path / "file" / "t.csv"), *at)
    assert "cannot write" in said  # a file where a folder must go
    assert not (tmp_path / "t.xlsx").exists() and not (tmp_path / "t.csv").exists()


def test_cli_and_magics_resolve_and_export_alike(
    ip: Any,
    made: dict[str, eb.Run],
    store: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for table in ("unscored", "wide"):
        assert main(["export", "qa", str(tmp_path / f"cli-{table}.csv"), "--table", table,
                     "--store", str(store)]) == 0  # fmt: skip
        path = ip.run_line_magic(
            "eval", f"export qa {tmp_path / f'magic-{table}.csv'} --table {table} --store {store}"
        )
        assert path.read_bytes() == (tmp_path / f"cli-{table}.csv").read_bytes()
    view = ip.run_line_magic("eval", f"show qa --store {store}")
    assert view.run.id == made["qa"].id
    capsys.readouterr()
    # the same mistake: one line from the CLI, a UsageError with the same message in IPython
    assert main(["show", "nope", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("eval", f"show nope --store {store}")
    assert str(caught.value) in err
    assert isinstance(eb.load_run(made["other"].path), eb.Run)


def test_a_ref_that_is_a_name_and_another_runs_id_is_refused(
    made: dict[str, eb.Run], store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not the named run picked silently over the run with that id (or the other way)."""
    other = made["other"]
    make_run({"ok": [0.0]}, name=other.id).save(store)  # a run named like other's id
    said = _error(capsys, "show", other.id, "--store", str(store))
    assert f"'{other.id}' is both a run name" in said and "pass the run's" in said
    # the folder is unambiguous
    assert _shown(capsys, str(other.path), store) == f"other · 1 case · id {other.id}"
