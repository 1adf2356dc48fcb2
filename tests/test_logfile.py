"""The append-only run log file: mapped and plain writes, padding, crashes, locks, full disks."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalbook._store import _log as _logfile
from evalbook._store._events import read_events
from evalbook._store._log import LogFile, LogInUse, cut_partial_line, raw_write, strip_padding

PAGE = mmap.ALLOCATIONGRANULARITY


@pytest.fixture
def small_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """One page per window, so that a few writes cross many window boundaries."""
    monkeypatch.setattr(_logfile, "WINDOW", PAGE)


chunks = st.lists(st.binary(min_size=1, max_size=3 * PAGE).map(lambda b: b.replace(b"\0", b"x")))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(parts=chunks)
def test_mapped_and_plain_writes_give_the_same_file(
    tmp_path_factory: pytest.TempPathFactory, small_windows: None, parts: list[bytes]
) -> None:
    folder = tmp_path_factory.mktemp("log")
    for mapped in (True, False):
        log = LogFile(folder / f"{mapped}.jsonl", append=False, mapped=mapped)
        for part in parts:
            log.write(part)
        log.close()
        assert (folder / f"{mapped}.jsonl").read_bytes() == b"".join(parts)


def test_an_open_mapped_log_holds_every_write_then_padding(
    tmp_path: Path, small_windows: None
) -> None:
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    lines = [b'{"schema_version":2,"event":"x","n":%d}\n' % i for i in range(300)]
    for line in lines:
        log.write(line)
    # what another process (or a crash now) sees: every line, then reserved NUL bytes
    seen = path.read_bytes()
    assert seen.startswith(b"".join(lines)) and len(seen) % PAGE == 0
    assert set(seen[len(b"".join(lines)) :]) <= {0}
    log.close()
    assert path.read_bytes() == b"".join(lines)


def test_a_killed_writer_leaves_a_log_that_reads_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    script = textwrap.dedent(
        f"""
        import os, signal
        from pathlib import Path
        from evalbook._store._log import LogFile
        log = LogFile(Path({str(path)!r}), append=False)
        for i in range(1000):
            log.write(b'{{"schema_version":2,"event":"x","n":%d}}\\n' % i)
        log.write(b'{{"schema_version":2,"event":"cut')  # a line the crash interrupts
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], check=False, timeout=60)
    assert done.returncode == -9
    raw = path.read_bytes()
    assert raw.endswith(b"\0")  # the reserved space is still there
    with pytest.warns(RuntimeWarning, match="truncated"):
        events = list(read_events(path))
    assert [e["n"] for e in events] == list(range(1000))
    log = LogFile(path, append=True)  # resuming cuts the partial line and the padding
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


def test_a_full_disk_is_an_error_up_front(
    tmp_path: Path, small_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(28, "No space left on device")

    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    log.write(b"first\n")
    monkeypatch.setattr(_logfile, "reserve", full)
    with pytest.raises(OSError, match="No space left"):
        log.write(b"x" * PAGE)  # needs a new window
    assert path.read_bytes() == b"first\n"  # the space is given back at once
    log.close()
    assert path.read_bytes() == b"first\n"


def test_when_mapping_fails_plain_writes_take_over(
    tmp_path: Path, small_windows: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "events.jsonl"
    log = LogFile(path, append=False)
    log.write(b"mapped\n")

    def no_map(*args: object, **kwargs: object) -> mmap.mmap:
        raise OSError(19, "No such device")

    monkeypatch.setattr(_logfile.mmap, "mmap", no_map)
    log.write(b"y" * (2 * PAGE) + b"\n")
    log.write(b"plain\n")
    log.close()
    assert path.read_bytes() == b"mapped\n" + b"y" * (2 * PAGE) + b"\nplain\n"


def test_the_plain_writer_reports_errors(tmp_path: Path) -> None:
    path = tmp_path / "x"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        assert raw_write()(fd, b"abc\n") == 4
    finally:
        os.close(fd)
    assert path.read_bytes() == b"abc\n"
    with pytest.raises(OSError):
        raw_write()(fd, b"closed")  # a closed descriptor: EBADF, raised as OSError


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
    from evalbook._store._log import being_written

    path = tmp_path / "events.jsonl"
    assert not being_written(path)  # no file yet
    log = LogFile(path, append=False)
    assert being_written(path)
    log.close()
    assert not being_written(path)


def test_a_reader_probing_the_lock_does_not_refuse_a_writer(tmp_path: Path) -> None:
    import fcntl
    import threading

    path = tmp_path / "events.jsonl"
    path.write_bytes(b"a\n")
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)  # a reader's probe, caught at the worst moment
    threading.Timer(0.02, os.close, args=(fd,)).start()  # ...and over 20 ms later
    log = LogFile(path, append=True)  # waits for it instead of failing
    log.write(b"b\n")
    log.close()
    assert path.read_bytes() == b"a\nb\n"
