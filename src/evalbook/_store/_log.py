"""The append-only file behind a run's `events.jsonl`, cheap enough to write once per case.

Every finished case is handed to the kernel before the run moves on, so a crash of the process
(`kill -9`, a kernel restart) loses at most the cases in flight. Where the platform allows, the
file is written through a shared memory map: a case then costs a memory copy instead of a
system call (the call, not the copy, is most of the cost). The mapped space is reserved ahead
by writing NUL bytes (so a full disk is an `OSError` up front, never a `SIGBUS`), and an
orderly close cuts the file back to its content. Only a hard crash leaves the reserved space,
as NUL bytes after the last line, which `read_events` ignores. Elsewhere, or if mapping fails,
each case is one `write`.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "LogFile",
    "LogInUse",
    "being_written",
    "cut_partial_line",
    "raw_write",
    "strip_padding",
]

_SYNC_EVERY_NS = 1_000_000_000  # an fsync about once a second
WINDOW = 1 << 20  # bytes mapped (and reserved) at a time; a multiple of the page size
# madvise(MADV_POPULATE_WRITE), Linux 5.14+ (Python 3.11's mmap has no name for it yet)
_POPULATE_WRITE: int | None = getattr(
    mmap, "MADV_POPULATE_WRITE", 23 if sys.platform == "linux" else None
)


class LogInUse(RuntimeError):
    """Another writer (a run or a resume, in this process or another) holds the log."""


def strip_padding(data: bytes) -> bytes:
    """A log's bytes without the reserved space a hard crash leaves at its end (NUL bytes).

    JSON text never holds a NUL byte (it is escaped as `\\u0000`), so trailing NULs are
    always padding.

    Example:
        >>> strip_padding(b'{"a":1}\\n\\x00\\x00')
        b'{"a":1}\\n'
    """
    return data.rstrip(b"\0")


def cut_partial_line(path: Path) -> None:
    """Drop padding and a truncated last line, so that appended events start a line."""
    with path.open("rb+") as f:
        data = strip_padding(f.read())
        f.truncate(data.rfind(b"\n") + 1 if not data.endswith(b"\n") else len(data))


_RAW_WRITE: Callable[[int, bytes], int] | None = None


def raw_write() -> Callable[[int, bytes], int]:
    """The function unmapped logs are written with: `os.write`, or libc's write holding the GIL.

    `os.write` releases the GIL, and while worker threads run sync tasks, taking it back
    costs far more (tens of µs) than the write itself, once per case. A write to the page
    cache takes microseconds, so where libc is at hand it is called without releasing the
    GIL (`ctypes.PyDLL`).
    """
    global _RAW_WRITE
    if _RAW_WRITE is None:
        _RAW_WRITE = _libc_write() or os.write
    return _RAW_WRITE


def _libc_write() -> Callable[[int, bytes], int] | None:
    try:
        import ctypes

        libc = ctypes.PyDLL(None, use_errno=True)
        fn = libc.write
    except (OSError, AttributeError):  # no libc (e.g. Windows)
        return None
    fn.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
    fn.restype = ctypes.c_ssize_t

    def write(fd: int, data: bytes) -> int:
        while True:
            n: int = fn(fd, data, len(data))
            if n >= 0:
                return n
            err = ctypes.get_errno()
            if err != errno.EINTR:
                raise OSError(err, os.strerror(err))

    return write


_ZEROS: bytes | None = None


def reserve(fd: int, offset: int, length: int) -> None:
    """Write `length` NUL bytes at `offset`: disk space for mapped writes (OSError if full).

    Writing (rather than `ftruncate`) makes the file system allocate the blocks now, so a
    full disk is an `OSError` here and never a `SIGBUS` when the mapped page is touched.
    """
    global _ZEROS
    if _ZEROS is None:
        _ZEROS = bytes(WINDOW)
    zeros = memoryview(_ZEROS)[:length]
    while zeros:
        n = os.pwrite(fd, zeros, offset)
        zeros, offset = zeros[n:], offset + n


_LOCK_TRIES = 20  # x 5 ms: a reader (`being_written`) holds its shared lock for microseconds


def _lock(fd: int, path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # no advisory locks here (Windows): nothing to check
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
    try:
        import fcntl
    except ImportError:  # no advisory locks here (Windows): cannot tell
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
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


def _unlock(fd: int) -> None:
    try:
        import fcntl
    except ImportError:
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


def _sync(fd: int, close: bool) -> None:
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        if close:
            os.close(fd)


def _background(fn: Callable[..., None], *args: object) -> threading.Thread:
    thread = threading.Thread(target=fn, args=args, name="evalbook-fsync", daemon=True)
    thread.start()
    return thread


class LogFile:
    """An append-only file, locked against other writers, fsync'ed about once a second.

    `write()` hands the bytes to the kernel before it returns (through the memory map, or
    one `write` call); errors are raised as `OSError`. `close()` cuts the reserved space,
    then fsyncs and closes the file in a helper thread (fsync waits on the disk, not the CPU).

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "events.jsonl"
        >>> log = LogFile(path, append=False)
        >>> log.write(b'{"event":"x"}\\n')
        >>> log.close()
        >>> path.read_bytes()
        b'{"event":"x"}\\n'
    """

    def __init__(self, path: Path, *, append: bool, mapped: bool = True) -> None:
        """Create `path` (`append=False`: it must not exist) or continue it (`append=True`:
        after cutting what a crash left behind its last complete line)."""
        self.path = path
        self._map: mmap.mmap | None = None
        self._base = 0  # the file offset of the map (of the end, while nothing is mapped)
        # [the map or None, where the next byte goes in it, when an fsync is due (monotonic
        # ns)]: a list, so that the C hot path (`_speedups.case_ended`) can append too
        self.cursor: list[Any] = [None, 0, time.monotonic_ns() + _SYNC_EVERY_NS]
        flags = os.O_RDWR | os.O_CREAT | (0 if append else os.O_EXCL)
        fd = os.open(path, flags, 0o644)
        try:
            _lock(fd, path)
            if append:
                cut_partial_line(path)
            self._end = os.fstat(fd).st_size  # where the next byte goes
            os.lseek(fd, self._end, os.SEEK_SET)  # plain writes go on from the end
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd
        self._mapped = mapped and hasattr(os, "pwrite") and hasattr(mmap, "MAP_SHARED")
        self._syncer: threading.Thread | None = None

    @property
    def _end(self) -> int:
        """The file offset where the next byte goes."""
        at: int = self.cursor[1]
        return self._base + at

    @_end.setter
    def _end(self, end: int) -> None:
        self.cursor[1] = end - self._base

    def write(self, data: bytes) -> None:
        fd = self._fd
        if fd is None:
            raise OSError(errno.EBADF, f"{self.path} is closed")
        cursor = self.cursor
        m, at = cursor[0], cursor[1]
        if m is not None and at + len(data) <= WINDOW:  # the hot path: a memory copy
            m[at : at + len(data)] = data
            cursor[1] = at + len(data)
        else:
            self._write_slow(fd, data)
        if time.monotonic_ns() > cursor[2]:
            self._sync_soon(fd)

    def _sync_soon(self, fd: int) -> None:
        """fsync in a helper thread (unless one still runs), then again in a second."""
        if self._syncer is None or not self._syncer.is_alive():
            self.cursor[2] = time.monotonic_ns() + _SYNC_EVERY_NS
            self._syncer = _background(_sync, fd, False)

    def _write_slow(self, fd: int, data: bytes) -> None:
        """Write across windows (mapping the next ones), or with `write` calls.

        A failure (e.g. a full disk) takes the whole write back: no partial line is left.
        """
        start = self._end
        try:
            rest = self._fill(fd, memoryview(data)) if self._mapped else memoryview(data)
            write = raw_write()
            while rest:
                n = write(fd, bytes(rest))
                self._end += n
                rest = rest[n:]
        except OSError:
            self._unmap()
            self._end = start
            os.ftruncate(fd, start)
            os.lseek(fd, start, os.SEEK_SET)
            raise

    def _fill(self, fd: int, view: memoryview) -> memoryview:
        """Copy `view` into mapped windows; what is left if mapping turns out impossible."""
        while view:
            m = self._map
            at = self._end - self._base
            if m is None or at >= WINDOW:
                m = self._next_window(fd)
                if m is None:
                    return view
                at = self._end - self._base
            n = min(len(view), WINDOW - at)
            m[at : at + n] = view[:n]
            self._end += n
            view = view[n:]
        return view

    def _next_window(self, fd: int) -> mmap.mmap | None:
        """Map the window holding the file's end, or None (and switch to plain writes)."""
        self._unmap()
        end = self._end
        base = end - end % mmap.ALLOCATIONGRANULARITY
        reserve(fd, end, base + WINDOW - end)  # OSError: e.g. a full disk
        try:
            m = mmap.mmap(fd, WINDOW, flags=mmap.MAP_SHARED, offset=base)
        except (OSError, ValueError):  # e.g. a file system without shared maps
            self._plain(fd)  # plain writes from now on
            return None
        if _POPULATE_WRITE is not None:
            # one call makes every page writable now, instead of a page fault (costly in a
            # virtual machine) every few cases; older kernels refuse it, which is harmless
            with contextlib.suppress(OSError):
                m.madvise(_POPULATE_WRITE)
        self._map = m
        self._base = base
        self.cursor[:2] = [m, end - base]
        return m

    def _plain(self, fd: int) -> None:
        self._mapped = False
        os.ftruncate(fd, self._end)
        os.lseek(fd, self._end, os.SEEK_SET)

    def _unmap(self) -> None:
        if self._map is not None:
            self.cursor[0] = None  # first: the C path must not write into a closed map
            self._map.close()
            self._map = None

    def close(self) -> None:
        """Cut the reserved space, then fsync and close the file in a helper thread."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            self._unmap()
            os.ftruncate(fd, self._end)
            _unlock(fd)  # the fsync thread keeps the file open a little longer
        except OSError:
            pass
        if self._syncer is not None:
            self._syncer.join()
        _background(_sync, fd, True)
