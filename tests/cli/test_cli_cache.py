"""`evalbook cache info PATH` and `evalbook cache clear PATH [--yes]`."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from _cli_helpers import cli, in_process
from evalbook._judges._cache import MARKER, ResponseCache


def _filled(folder: Path, n: int = 3) -> ResponseCache:
    cache = ResponseCache(folder)
    for i in range(n):
        key = cache.key({"i": i}, epoch=1, occurrence=0)
        cache.put(key, {"score": i, "text": "x" * 600}, model="gpt-a" if i else "gpt-b")
    return cache


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
    key = cache.key({"i": 0}, epoch=1, occurrence=0)
    assert key is not None and cache.get(key) == (False, None)
    code, out, _ = in_process(capsys, "cache", "info", str(folder))
    assert code == 0 and "entries 0 (0 bytes)" in out


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

    def denied(path: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "c" / "ab"))

    monkeypatch.setattr("evalbook._cli._cmd_cache.cache_clear", denied)
    code, out, err = in_process(capsys, "cache", "clear", str(tmp_path / "c"), "--yes")
    assert (code, out) == (2, "")
    assert err == (
        f"evalbook cache: error: cannot clear the cache folder '{tmp_path / 'c'}': "
        f"Permission denied ({tmp_path / 'c' / 'ab'})\n"
    )
    monkeypatch.setattr("evalbook._cli._cmd_cache.cache_info", denied)
    code, _, err = in_process(capsys, "cache", "info", str(tmp_path / "c"))
    assert code == 2 and "cannot read the cache folder" in err
