"""The append-only file behind a run's `events.jsonl`.

Each finished case is one `os.write` to a file opened with `O_APPEND`: once it returns, the
bytes are the kernel's, so a crash of the process (`kill -9`, a kernel restart) loses at most
the cases in flight. A helper thread fsyncs the file about once a second (an fsync waits on the
disk, so it never runs on the event loop), and the file is locked (`flock`) against a second
writer. Logs written by evalbook 0.1.0 may end in NUL bytes after a hard crash (it wrote
through a memory map with space reserved ahead); readers ignore them (`strip_padding`).

Reading streams the file line by line (`LineReader`): a line longer than `MAX_LINE` is
refused, so a sparse file of NULs or a device named like a log never fills the memory.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # Windows has no advisory locks: a log is then not guarded, only written
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MAX_LINE",
    "LineReader",
    "LineTooLong",
    "LogFile",
    "LogInUse",
    "being_written",
    "count_lines",
    "cut_partial_line",
    "set_aside",
    "strip_padding",
]

# The longest line a reader accepts: an output can be big (a whole document), but a line of
# 64 MiB is no case of a real run, while an 8 GiB sparse file of NULs is no log at all.
MAX_LINE = 64 << 20
_COUNT_CHUNK = 1 << 20
_COUNT_LIMIT = 256 << 20  # counting the lines after a damaged one reads at most this much
SYNC_EVERY_S = 1.0  # an fsync about once a second, while something was written
_LOCK_TRIES = 20  # x 5 ms: a reader (`being_written`) holds its shared lock for microseconds


class LogInUse(RuntimeError):
    """Another writer (a run or a resume, in this process or another) holds the log."""


def strip_padding(data: bytes) -> bytes:
    """A log's bytes without the NUL bytes a hard crash of evalbook 0.1.0 left at its end.

    JSON text never holds a NUL byte (it is escaped as `\\u0000`), so trailing NULs are
    always padding.

    Example:
        >>> strip_padding(b'{"a":1}\\n\\x00\\x00')
        b'{"a":1}\\n'
    """
    return data.rstrip(b"\0")


class LineTooLong(ValueError):
    """A line of a log is longer than `MAX_LINE` (no log holds one: a damaged file)."""

    def __init__(self, path: Path, number: int, offset: int) -> None:
        super().__init__(
            f"{path}, line {number}: longer than {MAX_LINE >> 20} MiB without a line end, "
            "so it is not read (no evalbook log holds such a line: the file is damaged or "
            "is not a run log)"
        )
        self.number, self.offset = number, offset


class LineReader:
    """The complete lines of a log, streamed: `(number, offset, bytes without the newline)`.

    Memory stays bounded by `MAX_LINE` whatever the file holds. The end of the file after the
    last newline is either NUL padding (left by evalbook 0.1.0; ignored) or a line cut short
    by a crash: then `truncated` is its line number once the iteration has ended. A line
    longer than `MAX_LINE` raises `LineTooLong`.

    Example:
        >>> import io
        >>> lines = LineReader(io.BytesIO(b'{"a":1}\\n{"b"'), Path("events.jsonl"))
        >>> list(lines), lines.truncated
        ([(1, 0, b'{"a":1}')], 2)
    """

    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f, self.path = f, path
        self.truncated: int | None = None
        self.end = 0  # the offset after the last complete line read

    def __iter__(self) -> Iterator[tuple[int, int, bytes]]:
        number, offset, readline = 0, 0, self.f.readline
        while raw := readline(MAX_LINE + 1):
            number += 1
            if raw[-1] == 10:  # b"\n"
                yield number, offset, raw[:-1]
                offset += len(raw)
                self.end = offset
                continue
            if len(raw) > MAX_LINE:
                raise LineTooLong(self.path, number, offset)
            if strip_padding(raw).strip():  # not only the NULs a crash of 0.1.0 left
                self.truncated = number
            return


def count_lines(f: BinaryIO) -> tuple[int, bool]:
    """How many lines start from `f`'s position on (bounded: `(counted, exact)`)."""
    lines, read, last = 0, 0, b"\n"
    while chunk := f.read(_COUNT_CHUNK):
        lines += chunk.count(b"\n")
        read += len(chunk)
        last = chunk[-1:]
        if read >= _COUNT_LIMIT:
            return lines, False
    return lines + (strip_padding(last) not in (b"", b"\n")), True


def cut_partial_line(path: Path) -> None:
    """Drop padding and a truncated last line, so that appended events start a line.

    Only the end of the file is read (from the last newline on), in bounded chunks.
    """
    with path.open("rb+") as f:
        size = f.seek(0, os.SEEK_END)
        end = size
        while end > 0:  # back over the NULs and the cut line, chunk by chunk
            start = max(0, end - _COUNT_CHUNK)
            f.seek(start)
            chunk = f.read(end - start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                end = start + newline + 1
                break
            end = start
        if end != size:
            f.truncate(end)


def set_aside(path: Path, offset: int | None) -> Path:
    """Copy the whole log to `<name>.damaged-<n>` beside it, then cut the log at `offset`.

    For a resume of a log damaged at the line starting at `offset`: nothing is lost (the copy
    keeps every byte), and what the resume appends follows the last good line, where a later
    read still finds it (`offset=None`: no cut, for a log about to be written anew). Call it
    while holding the log's lock. Returns the copy's path.
    """
    for n in range(1, 10_000):
        copy = path.with_name(f"{path.name}.damaged-{n}")
        try:
            # 0600, as the store's other files: a log may hold what its cases held
            fd = os.open(
                copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600
            )
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as out, path.open("rb") as src:
            _copy_data(src, out)
            out.flush()
            os.fsync(out.fileno())
        break
    else:
        raise OSError(f"{path}: too many damaged copies beside it; remove some")
    if offset is not None:
        os.truncate(path, offset)
    return copy


def _copy_data(src: BinaryIO, out: BinaryIO) -> None:
    """Copy `src` to `out` byte for byte, its holes kept holes: a sparse file of 4 GiB that
    holds a few KB of lines costs a few KB to copy (where the system says where data is)."""
    size = os.fstat(src.fileno()).st_size
    seek_data, seek_hole = getattr(os, "SEEK_DATA", None), getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        shutil.copyfileobj(src, out)
        return
    at = 0
    while at < size:
        try:
            start = os.lseek(src.fileno(), at, seek_data)
        except OSError:  # ENXIO: no data after `at`, only a hole to the end
            break
        end = os.lseek(src.fileno(), start, seek_hole)
        src.seek(start)
        out.seek(start)
        left = end - start
        while left > 0:
            chunk = src.read(min(left, 1 << 20))
            if not chunk:
                break
            out.write(chunk)
            left -= len(chunk)
        at = end
    out.truncate(size)  # the last hole, if any, as a hole


def _lock(fd: int, path: Path) -> None:
    if fcntl is None:
        return
    for attempt in range(_LOCK_TRIES):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if attempt + 1 < _LOCK_TRIES:
                time.sleep(0.005)
        except OSError:  # a file system without locks (e.g. some network mounts): go on
            return
    raise LogInUse(f"{path} is open for writing elsewhere")


def _unlock(fd: int) -> None:
    if fcntl is None:
        return
    with contextlib.suppress(OSError):  # no locks on this file system: nothing to release
        fcntl.flock(fd, fcntl.LOCK_UN)


def being_written(path: Path) -> bool:
    """True while a run (in any process) holds `path` open for writing.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
        >>> log = LogFile(path, append=False)
        >>> being_written(path)
        True
        >>> log.close()
        >>> being_written(path)
        False
    """
    if fcntl is None:  # cannot tell
        return False
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO: no wait
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # no locks on this file system: cannot tell
        return False
    finally:
        os.close(fd)  # closing releases a lock taken above
    return False


class _Syncer(threading.Thread):
    """fsyncs a file about once a second while it is written; fsyncs and closes it at the end."""

    def __init__(self, fd: int) -> None:
        super().__init__(name="evalbook-fsync", daemon=True)
        self.fd = fd
        self.dirty = False  # set by the writer (a plain store: no lock on the hot path)
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SYNC_EVERY_S):
            if self.dirty:
                self.dirty = False
                self._fsync()
        self._fsync()
        os.close(self.fd)

    def _fsync(self) -> None:
        with contextlib.suppress(OSError):  # no fsync here: the kernel has the bytes anyway
            os.fsync(self.fd)


class LogFile:
    """An append-only file, locked against other writers, fsync'ed about once a second.

    `write()` is one `os.write` (more only if the kernel takes part of the bytes): the bytes
    are the kernel's when it returns. A failed write (e.g. a full disk) is an `OSError` and
    leaves no partial line. `close()` releases the lock at once; the last fsync and the close
    of the file happen in the helper thread.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
        >>> log = LogFile(path, append=False)
        >>> log.write(b'{"event":"x"}\\n')
        >>> log.close()
        >>> path.read_bytes()
        b'{"event":"x"}\\n'
    """

    def __init__(self, path: Path, *, append: bool, cut: bool = True) -> None:
        """Create `path` (`append=False`: it must not exist) or continue it (`append=True`:
        after cutting what a crash left behind its last complete line; `cut=False` leaves
        that to `cut_at()`, for a reader that holds the lock to see it first)."""
        self.path = path
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (0 if append else os.O_EXCL)
        # a log is never written through a symlink (it could be another run's log), and a
        # FIFO or device is refused at once (O_NONBLOCK: no wait for a reader)
        nonblock = getattr(os, "O_NONBLOCK", 0)
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | nonblock, 0o644)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EINVAL, f"{path} is not a regular file")
            if nonblock:
                os.set_blocking(fd, True)
            _lock(fd, path)
            if append and cut:
                cut_partial_line(path)
            self._end = os.fstat(fd).st_size  # where the next byte goes (a failed write's undo)
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self._syncer = _Syncer(fd)
        self._syncer.start()

    def cut_at(self, offset: int) -> None:
        """Cut the log at `offset`, the end of its last complete line as a read under this
        lock found it (the lock is held): no second read of the file to find it again."""
        if self._fd is not None and self._end != offset:
            os.ftruncate(self._fd, offset)
            self._end = offset

    def set_aside(self, offset: int) -> Path:
        """`set_aside` for this log (the lock is held): copy it whole, cut it at `offset`."""
        copy = set_aside(self.path, offset)
        if self._fd is not None:
            self._end = os.fstat(self._fd).st_size
        return copy

    def write(self, data: bytes) -> None:
        """Append `data` (whole lines) with one `os.write`; OSError if it cannot.

        The call itself takes about a microsecond, but `os.write` releases the GIL: while
        worker threads run sync scorers, taking it back is most of what a case's log costs
        (`benchmarks/bench_store.py`: about 10 µs per case on the echo task).
        """
        fd = self._fd
        if fd is None:
            raise OSError(errno.EBADF, f"{self.path} is closed")
        n = os.write(fd, data)
        if n != len(data):
            self._write_rest(fd, data, n)
        self._end += len(data)
        self._syncer.dirty = True

    def _write_rest(self, fd: int, data: bytes, n: int) -> None:
        """The kernel took part of `data`: write the rest, or take the part back."""
        view = memoryview(data)[n:]
        try:
            while view:
                view = view[os.write(fd, view) :]
        except OSError:
            os.ftruncate(fd, self._end)  # no partial line stays behind
            raise

    def close(self) -> None:
        """Release the lock; the helper thread fsyncs and closes the file."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        _unlock(fd)
        self._syncer.done.set()
