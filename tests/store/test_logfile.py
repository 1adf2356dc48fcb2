"""The append-only run log file: writes, 0.1.0 padding, crashes, locks, fsyncs, full disks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

# the append-only log file alone: writes, padding, locks, fsyncs, a full disk
from evalbook._store._log import _file as _log
from evalbook._store._log._file import LogFile, LogInUse, cut_partial_line, strip_padding
from evalbook._store._log._read import read_events

FIXTURES = Path(__file__).parent / "fixtures"

chunks = st.lists(st.binary(min_size=1, max_size=3 * 4096).map(lambda b: b.replace(b"\0", b"x")))


@settings(max_examples=40, deadline=None)
@given(parts=chunks)
def test_the_file_holds_every_write_in_order(parts: list[bytes]) -> None:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "events.jsonl"
    log = LogFile(path, append=False)
    size = 0
    for part in parts:
        log.write(part)
        size += len(part)
        assert path.stat().st_size == size  # on the kernel's side as soon as write returns
    log.close()
    assert path.read_bytes() == b"".join(parts)


def test_an_open_log_holds_every_write_at_once_and_nothing_else(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    lines = [b'{"schema_version":2,"event":"x","n":%d}\n' % i for i in range(300)]
    for line in lines:
        log.write(line)
    assert path.read_bytes() == b"".join(lines)  # what another process (or a crash) sees
    log.close()
    assert path.read_bytes() == b"".join(lines)


def test_a_killed_writer_leaves_a_log_that_reads_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from evalbook._store._log._file import LogFile
        log = LogFile(Path({str(path)!r}), append=False)
        for i in range(1000):
            log.write(b'{{"schema_version":2,"event":"x","n":%d}}\\n' % i)
        log.write(b'{{"schema_version":2,"event":"cut')  # a line the crash interrupts
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert done.returncode == -9
    assert not path.read_bytes().endswith(b"\0")  # no padding: each case is one write
    with pytest.warns(RuntimeWarning, match="truncated"):
        events = list(read_events(path))
    assert [e["n"] for e in events] == list(range(1000))
    log = LogFile(path, append=True)  # resuming cuts the partial line
    log.write(b'{"schema_version":2,"event":"x","n":1000}\n')
    log.close()
    assert [e["n"] for e in read_events(path)] == list(range(1001))


def test_strip_padding_and_cut_partial_line(tmp_path: Path) -> None:
    assert strip_padding(b"a\nb\n\0\0\0") == b"a\nb\n"
    assert strip_padding(b"a\n") == b"a\n"
    path = tmp_path / "log"
    path.write_bytes(b"one\ntw" + b"\0" * 100)
    cut_partial_line(path)
    assert path.read_bytes() == b"one\n"
    path.write_bytes(b"one\n")
    cut_partial_line(path)
    assert path.read_bytes() == b"one\n"


def test_a_second_writer_is_refused_until_the_first_closes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    first = LogFile(path, append=False)
    first.write(b"a\n")
    with pytest.raises(LogInUse, match="open for writing elsewhere"):
        LogFile(path, append=True)
    first.close()
    second = LogFile(path, append=True)  # at once, while the fsync thread may still run
    second.write(b"b\n")
    second.close()
    assert path.read_bytes() == b"a\nb\n"


def test_a_0_1_0_log_with_padding_reads_and_resumes(tmp_path: Path) -> None:
    """0.1.0 wrote through a memory map: a hard crash left NUL bytes after the last line."""
    path = tmp_path / "events.jsonl"
    path.write_bytes((FIXTURES / "v010-crashed" / "events.jsonl").read_bytes())
    assert path.read_bytes().endswith(b"\0" * 4096)
    with pytest.warns(UnicodeWarning, match="lone surrogate"):  # 0.1.0 kept them: escaped now
        events = list(read_events(path))
    assert [e["event"] for e in events].count("case.ended") == 3
    log = LogFile(path, append=True)  # continuing it cuts the padding first
    log.write(b'{"schema_version":2,"event":"x"}\n')
    log.close()
    assert b"\0" not in path.read_bytes()
    with pytest.warns(UnicodeWarning):
        assert [e["event"] for e in read_events(path)][-1] == "x"


def test_a_full_disk_is_an_error_and_leaves_no_partial_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    log.write(b"first\n")
    real = os.write

    def short_then_full(fd: int, data: bytes) -> int:
        if len(data) > 3:  # the kernel takes 3 bytes, then the disk is full
            return real(fd, bytes(data[:3]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_log.os, "write", short_then_full)
    with pytest.raises(OSError, match="No space left"):
        log.write(b"second line\n")
    monkeypatch.undo()
    assert path.read_bytes() == b"first\n"  # the part the kernel took is taken back
    log.write(b"third\n")  # space again: the log goes on from its last line
    log.close()
    assert path.read_bytes() == b"first\nthird\n"


def test_a_short_write_is_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    real = os.write
    monkeypatch.setattr(_log.os, "write", lambda fd, data: real(fd, bytes(data[:2])))
    log.write(b"abcdefg\n")
    monkeypatch.undo()
    log.close()
    assert path.read_bytes() == b"abcdefg\n"


def test_the_log_is_fsynced_off_the_writer_about_once_a_second(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(threading.current_thread().name)
        real(fd)

    monkeypatch.setattr(_log.os, "fsync", fsync)
    monkeypatch.setattr(_log, "SYNC_EVERY_S", 0.01)
    log = LogFile(tmp_path / "events.jsonl", append=False)
    log.write(b"a\n")
    for _ in range(500):  # until the helper thread has fsync'ed once (at most ~5 s)
        if synced:
            break
        threading.Event().wait(0.01)
    assert synced and set(synced) == {"evalbook-fsync"}  # never the writer's thread
    log.close()
    log._syncer.join(timeout=10)
    assert not log._syncer.is_alive() and len(synced) >= 2  # and once more at the end


def test_writing_a_closed_log_is_an_error(tmp_path: Path) -> None:
    log = LogFile(tmp_path / "events.jsonl", append=False)
    log.close()
    log.close()  # twice is fine
    with pytest.raises(OSError):
        log.write(b"late\n")


def test_a_file_system_without_locks_still_gets_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    def no_locks(fd: int, operation: int) -> None:
        raise OSError(37, "No locks available")  # ENOLCK, as on some network mounts

    monkeypatch.setattr(fcntl, "flock", no_locks)
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    log.write(b"a\n")
    log.close()
    assert path.read_bytes() == b"a\n"


def test_being_written_while_a_writer_holds_the_log(tmp_path: Path) -> None:
    from evalbook._store._log._file import being_written

    path = tmp_path / "events.jsonl"
    assert not being_written(path)  # no file yet
    log = LogFile(path, append=False)
    assert being_written(path)
    log.close()
    assert not being_written(path)


def test_a_reader_probing_the_lock_does_not_refuse_a_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl
    import time
    import types

    path = tmp_path / "events.jsonl"
    path.write_bytes(b"a\n")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a reader's probe, caught at the worst moment
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        # ...and over 20 ms later: let go in the writer's 4th wait of 5 ms. A timer thread
        # could fire after the writer's last try on a loaded machine; this cannot.
        waits.append(seconds)
        if len(waits) == 4:
            os.close(fd)
        time.sleep(seconds)

    monkeypatch.setattr(_log, "time", types.SimpleNamespace(sleep=sleep))
    log = LogFile(path, append=True)  # waits for it instead of failing
    log.write(b"b\n")
    log.close()
    assert len(waits) == 4  # it waited, and took the lock once the reader let go
    assert path.read_bytes() == b"a\nb\n"
