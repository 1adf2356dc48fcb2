"""`evalbook cache info PATH` and `evalbook cache clear PATH [--yes]`."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evalbook as eb
from _cli_helpers import cli, in_process

MARKER = "evalbook-cache.json"  # the file that says a folder is a cache (docs/file-formats.md)


class Filled:
    """A cache folder filled by judges, as a user fills one: `n` replies, the first from
    `gpt-b` and the others from `gpt-a`, each with a 600-character justification."""

    def __init__(self, folder: Path, n: int = 3) -> None:
        self.folder, self.n, self.asked = folder, n, 0
        self.ask()

    def ask(self) -> None:
        """Judge the cases again: a reply not in the cache is asked of the client."""

        def client(messages: list[dict[str, Any]], tool: dict[str, Any]) -> dict[str, Any]:
            self.asked += 1
            return {"score": 1, "justification": "x" * 600}

        data = pd.DataFrame({"q": [f"q{i}" for i in range(self.n)]})
        for model, rows in (("gpt-b", data[:1]), ("gpt-a", data[1:])):
            judged = eb.judge("fine", "{output}", client=client, model=model, cache=self.folder)
            eb.run(rows, task=lambda q: q, scorers=[judged], store=None, progress=False)


def _filled(folder: Path, n: int = 3) -> Filled:
    return Filled(folder, n)


def test_info_prints_entries_size_models_and_dates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _filled(tmp_path / "c")
    code, out, err = in_process(capsys, "cache", "info", str(tmp_path / "c"))
    assert (code, err) == (0, "")
    assert re.search(r"^entries 3 \(\d+\.\d KB\)$", out, re.M), out
    assert "models  gpt-a (2), gpt-b (1)" in out
    assert re.search(r"^written \d{4}-\d\d-\d\dT.* to \d{4}-\d\d-\d\dT.* \(UTC\)$", out, re.M)


def test_clear_removes_the_entries_and_keeps_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "c"
    cache = _filled(folder)
    code, out, err = in_process(capsys, "cache", "clear", str(folder), "--yes")
    assert (code, out, err) == (0, f"removed 3 entries from {folder}\n", "")
    assert [p.name for p in folder.iterdir()] == [MARKER]
    code, out, _ = in_process(capsys, "cache", "info", str(folder))
    assert code == 0 and "entries 0 (0 bytes)" in out
    assert cache.asked == 3
    cache.ask()  # every reply was deleted: each is asked again, none read from the cache
    assert cache.asked == 6


def test_clear_asks_on_a_terminal_and_refuses_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "c"
    _filled(folder)
    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    code, out, err = in_process(capsys, "cache", "clear", str(folder))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "add --yes" in err
    assert len(list(folder.glob("*/*.json"))) == 3

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr("sys.stdin", Terminal("n\n"))
    code, out, _ = in_process(capsys, "cache", "clear", str(folder))
    assert code == 0 and out.endswith("nothing removed\n")
    assert len(list(folder.glob("*/*.json"))) == 3
    monkeypatch.setattr("sys.stdin", Terminal("y\n"))
    code, out, _ = in_process(capsys, "cache", "clear", str(folder))
    assert code == 0 and out.endswith(f"removed 3 entries from {folder}\n")


@pytest.mark.parametrize("action", ["info", "clear"])
def test_a_missing_or_foreign_folder_is_exit_2_and_nothing_is_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str
) -> None:
    yes = ["--yes"] if action == "clear" else []
    code, out, err = in_process(capsys, "cache", action, str(tmp_path / "nope"), *yes)
    assert (code, out) == (2, "")
    assert err == f"evalbook cache: error: no such cache folder: '{tmp_path / 'nope'}'\n"
    # A folder laid out like a cache but without the marker: refused, every file stays.
    foreign = tmp_path / "notes"
    (foreign / "ab").mkdir(parents=True)
    (foreign / "ab" / f"{'ab' * 32}.json").write_text("{}")
    (foreign / "keep.txt").write_text("mine")
    code, out, err = in_process(capsys, "cache", action, str(foreign), *yes)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "not an evalbook response cache" in err
    assert sorted(p.name for p in foreign.rglob("*")) == ["ab", f"{'ab' * 32}.json", "keep.txt"]
    file = tmp_path / "file.txt"
    file.write_text("x")
    code, _, err = in_process(capsys, "cache", action, str(file), *yes)
    assert code == 2 and "is a file, not a cache folder" in err


def test_the_command_runs_as_a_subprocess_without_traceback(tmp_path: Path) -> None:
    _filled(tmp_path / "c", n=2)
    done = cli("cache", "info", "c", cwd=tmp_path)
    assert done.returncode == 0 and "entries 2" in done.stdout
    done = cli("cache", "clear", "elsewhere", "--yes", cwd=tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "evalbook cache: error: no such cache folder: 'elsewhere'"


@pytest.mark.parametrize("words", [["cache"], ["cache", "info"], ["cache", "clear"]])
def test_the_cache_commands_have_help(words: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = in_process(capsys, *words, "--help")
    assert code == 0 and out.startswith(f"usage: evalbook {' '.join(words)}")


def test_a_folder_that_cannot_be_read_or_cleared_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _filled(tmp_path / "c")
    inside = str(tmp_path / "c") + os.sep
    unlink, scandir = os.unlink, os.scandir

    def no_unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if str(path).startswith(inside):  # an entry the user may not delete
            raise PermissionError(13, "Permission denied", str(path))
        unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", no_unlink)
    code, out, err = in_process(capsys, "cache", "clear", str(tmp_path / "c"), "--yes")
    assert (code, out) == (2, "")
    (entry,) = re.findall(r"\((.*)\)\n$", err)
    assert err == (
        f"evalbook cache: error: cannot clear the cache folder '{tmp_path / 'c'}': "
        f"Permission denied ({entry})\n"
    )
    assert entry.startswith(inside) and entry.endswith(".json")
    assert len(list((tmp_path / "c").glob("*/*.json"))) == 3  # nothing was deleted

    def no_scandir(path: Any = ".") -> Any:
        if str(path).startswith(str(tmp_path / "c")):  # a folder the user may not list
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", no_scandir)
    code, _, err = in_process(capsys, "cache", "info", str(tmp_path / "c"))
    assert code == 2 and "cannot read the cache folder" in err and len(err.splitlines()) == 1
