"""Every expected user error in `%eval` / `%%eval` is a one-line UsageError, never a traceback,
and says what the CLI says for the same mistake (docs/cli.md)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb
from _cli_helpers import main


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store with a good run, a run of another schema version and a damaged run."""
    root = tmp_path_factory.mktemp("magic-errors") / "runs"
    run = eb.run(
        pd.DataFrame({"q": ["a"]}),
        task=lambda q: q,
        scorers=[lambda output: 1.0],
        store=root,
        name="good",
        progress=False,
    )
    good = Path(str(run.path))
    other = root / "v99"
    shutil.copytree(good, other)
    summary = json.loads((other / "summary.json").read_text())
    summary["schema_version"] = 99
    (other / "summary.json").write_text(json.dumps(summary))
    damaged = root / "damaged"
    shutil.copytree(good, damaged)
    (damaged / "events.jsonl").write_bytes(b"garbage\n")
    (damaged / "summary.json").write_text("{trunc")
    return root


def _cli_error(*argv: str) -> str:
    """What `evalbook ARGV` prints after `error: ` (it must fail with exit 2; the CLI prints
    a warning as a line of its own)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(list(argv)) == 2
    [line] = [x for x in err.getvalue().splitlines() if ": error: " in x]
    return line.split(": error: ", 1)[1]


@contextlib.contextmanager
def _none() -> Any:
    yield


def _magic_error(ip: Any, line: str) -> str:
    with pytest.raises(UsageError) as caught:
        ip.run_line_magic("eval", line)
    text = str(caught.value)
    assert "\n" not in text and "Traceback" not in text
    return text


@pytest.mark.parametrize("where", ["typo", "a-file"])
def test_a_missing_store_reads_as_the_cli_says(ip: Any, store: Path, where: str) -> None:
    target = store.parent / where
    if where == "a-file":
        target.write_text("not a folder")
    assert _magic_error(ip, f"runs {target}") == _cli_error("runs", str(target))
    assert _magic_error(ip, f"runs {target}").startswith(f"no run store at {target}/")


@pytest.mark.parametrize("run", ["v99", "damaged"])
def test_a_run_of_another_version_or_damaged_reads_as_the_cli_says(
    ip: Any, store: Path, run: str
) -> None:
    folder = store / run
    # the damaged run warns that it falls back to its log, then fails there
    with pytest.warns(RuntimeWarning, match="summary.json") if run == "damaged" else _none():
        message = _magic_error(ip, f"show {folder}")
    assert message == _cli_error("show", str(folder))
    assert ("schema_version 99" if run == "v99" else "events.jsonl, line 1") in message


def test_an_os_error_reading_the_store_is_one_line(
    ip: Any, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    iterdir = Path.iterdir

    def denied(self: Path) -> Any:
        if self == store:  # a store the user may not list
            raise PermissionError(13, "Permission denied", str(self))
        return iterdir(self)

    monkeypatch.setattr(Path, "iterdir", denied)
    assert _magic_error(ip, f"runs {store}") == f"{store}: Permission denied"


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [
        ("bad.csv", b'a,b\n1,2,3,4\n"unterminated', "cannot read"),
        ("bad.parquet", b"garbage", "cannot read"),
        ("bad.jsonl", b"{not json\n", "cannot read"),
        ("latin1.csv", "q\ncafé\n".encode("latin-1"), "cannot read"),
    ],
)
def test_a_damaged_data_file_is_a_usage_error_naming_it(
    ip: Any, tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(UsageError) as caught:
        ip.run_cell_magic("eval", f"{path} --store {tmp_path / 'runs'}", "q")
    message = str(caught.value)
    assert message.startswith(f"%%eval {path}: {expected} {path} as ")
    assert "\n" not in message
    assert not (tmp_path / "runs").exists()  # refused before anything ran


def test_an_unreadable_data_file_says_why(
    ip: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "data.csv"
    path.write_text("q\na\n")

    def denied(p: Any) -> pd.DataFrame:
        raise PermissionError(13, "Permission denied", str(p))

    monkeypatch.setattr(pd, "read_csv", denied)
    with pytest.raises(UsageError, match=r"data\.csv: Permission denied$"):
        ip.run_cell_magic("eval", f"{path} --store {tmp_path / 'runs'}", "q")


def test_no_traceback_is_printed(ip: Any, store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = ip.run_cell(f"%eval runs {store.parent / 'nowhere'}")
    assert isinstance(result.error_in_exec, UsageError)
    out = capsys.readouterr()
    assert "no run store at" in out.out + out.err
    assert "Traceback" not in out.out + out.err
