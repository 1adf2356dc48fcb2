"""The parts of an Inspect AI log file: its header and its samples' JSON, each readable one kept.

Learned from Inspect AI's recorders (inspect_ai 0.3.285). `EvalRecorder._read_log`
(`log/_recorders/eval.py`): a `.eval` log is a zip archive of `header.json` (`_journal/start.json`
is written first and stands in while the eval runs), one `samples/<id>_epoch_<n>.json` per
sample (`_sample_filename`; a re-logged member supersedes the earlier one of its name),
`summaries.json` and `reductions.json`; Inspect's zipfile writes each member's sizes and CRC in
its local header, and reads members without checking CRCs. `JSONRecorder._read_header_streaming`
(`log/_recorders/json.py`): a `.json` log is one object whose keys come in `EvalLog`'s field
order, `version` and `status` first, `samples` near the end, NaN written as a JSON constant.
What is damaged is reported, never read (docs/interop.md, "Inspect AI"). Files are opened
through `_reading.py`: a regular file within the cap, a member within it too.
"""

from __future__ import annotations

import io
import json
import os
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ._imported import FormatError
from ._reading import HEAD_BYTES, MAX_BYTES, head, open_file, read_bytes, too_large

__all__ = [
    "EXPECTED",
    "Members",
    "RawSample",
    "damaged",
    "logs_in",
    "not_inspect",
    "read_eval",
    "read_json",
    "sniff",
]

EXPECTED = (
    "an Inspect AI log: a `.eval` zip archive holding header.json and samples/*.json, or a "
    '`.json` file starting {"version": N, "status": ...}'
)
# where a sample was read ("file:member" or "file:line") and its JSON: bytes, or parsed
RawSample = tuple[str, Any]
_HEADER = "header.json"
_START = "_journal/start.json"
_SAMPLES = "samples/"
_JSON_HEAD = re.compile(rb'\A\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_WS = re.compile(r"[ \t\n\r]*")
# zip records (APPNOTE 4.3.7, 4.3.12, 4.3.16): a local file header, a directory entry, its end
_LOCAL = struct.Struct("<IHHHHHIIIHH")
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")
_END = struct.Struct("<IHHHHIIH")
_ZIP = b"PK\x03\x04"
# the zip method number of Zstandard (APPNOTE 4.4.5), which Inspect writes its members with
_ZSTD = 93
# bytes of a local header's extra field read with it (a zip64 record is 20)
_EXTRA_GUESS = 32
# the keys of a .json log that are not its header
_NOT_HEADER = ("samples", "reductions")


def _is_eval(path: Path) -> bool:
    """A zip archive listing Inspect's header, or (cut short, without its zip directory) one
    whose first member is the `_journal/start.json` Inspect writes first."""
    try:
        first = head(path)
        if not first.startswith(_ZIP):
            return False
        try:
            with open_file(path) as f, zipfile.ZipFile(f) as zf:
                names = set(zf.namelist())
        except zipfile.BadZipFile:
            return first[_LOCAL.size : _LOCAL.size + len(_START)] == _START.encode()
    except Exception:  # sniff never raises: an unreadable file is not this format
        return False
    return _HEADER in names or _START in names


def _is_json(path: Path) -> bool:
    return _JSON_HEAD.match(head(path)) is not None


def _is_log(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix == ".eval":
        return path.is_file() and _is_eval(path)
    if suffix == ".json":
        return path.is_file() and _is_json(path)
    return False


def logs_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if _is_log(p))


def sniff(path: Path) -> bool:
    """An Inspect log file, or a folder holding Inspect logs (an Inspect `log_dir`): one is
    read, several are the reader's clear error ("holds 2 logs; pass the log file"), never
    the generic "not a results file"."""
    try:
        if path.is_dir():
            return len(logs_in(path)) >= 1
        return _is_log(path)
    except Exception:  # sniff never raises
        return False


def not_inspect(path: Path, why: str) -> FormatError:
    return FormatError(f"{path}: not an Inspect AI log ({why}); expected {EXPECTED}")


def damaged(path: Path, why: str) -> FormatError:
    return FormatError(
        f"{path}: this Inspect AI log is damaged and cannot be read ({why}); import an intact "
        "copy, or re-run the eval"
    )


# -- reading the parts: a header and raw samples, each readable one kept ---------------------


def read_eval(path: Path) -> tuple[bytes, Members, list[str]]:
    """The header's JSON, each sample member's JSON (CRC-checked), and what was unreadable.

    The samples (`Members`) are read one at a time as they are iterated (the archive stays
    open until then, or until `close()`), so a log of any size never has more than one
    member's bytes in memory; an unreadable member joins the list of what was unreadable as
    it is met.

    Raises:
        Refused: not a regular file, or larger than the cap (`_reading.MAX_BYTES`).
        FormatError: not a zip archive, or no header to read.
    """
    f = open_file(path)
    try:
        if f.read(len(_ZIP)) != _ZIP:
            raise not_inspect(path, "not a zip archive")
        f.seek(0)
        zf, skipped = _open_zip(path, f)
    except BaseException:
        f.close()
        raise
    try:
        # name-based access resolves to a name's last member, as Inspect's reader does
        members = {info.filename: info for info in zf.infolist()}
        head = _HEADER if _HEADER in members else _START if _START in members else None
        if head is None:
            raise not_inspect(path, f"the archive has no {_HEADER}")
        header, why = _member(zf, members[head])
        if header is None:
            raise damaged(path, f"{head}: {why}")
    except BaseException:
        zf.close()
        f.close()
        raise
    return header, Members(path, f, zf, members, skipped), skipped


def _open_zip(path: Path, f: IO[bytes]) -> tuple[zipfile.ZipFile, list[str]]:
    skipped: list[str] = []
    try:
        return zipfile.ZipFile(f), skipped
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        # the zip directory is at the archive's end: a log cut short has lost it
        salvaged, whole = _salvage(read_bytes(path))
        if not whole:
            why = f"its zip directory is unreadable and no member before it is whole: {exc}"
            raise damaged(path, why) from None
        skipped.append(
            f"{path.name}: the archive is cut short (no zip directory); read the {whole} whole "
            "members before the cut"
        )
        return zipfile.ZipFile(io.BytesIO(salvaged)), skipped


class Members:
    """A `.eval` log's sample members, read one at a time as it is iterated, in the archive's
    order; an unreadable one goes to `skipped` instead. `close()` (also at the end of the
    iteration) closes the archive."""

    def __init__(
        self,
        path: Path,
        f: IO[bytes],
        zf: zipfile.ZipFile | None,
        members: dict[str, zipfile.ZipInfo],
        skipped: list[str],
    ) -> None:
        self.path, self.f, self._zf, self.members, self.skipped = path, f, zf, members, skipped
        # a salvaged archive is made in memory of the file's whole members (`_salvage`)
        self.salvaged = bool(skipped)
        self.direct = None if self.salvaged else _Direct(f)

    @property
    def zf(self) -> zipfile.ZipFile:
        """The archive as zipfile reads it (a member `_Direct` does not read goes to it),
        opened on first use when the directory came from another reading (`again`)."""
        if self._zf is None:
            self._zf = zipfile.ZipFile(self.f)
        return self._zf

    def directory(self) -> tuple[tuple[int, ...], dict[str, zipfile.ZipInfo]]:
        """The file's identity (`fstat`: device, inode, size, change times) and its members."""
        return _identity(self.f), self.members

    @classmethod
    def again(
        cls, path: Path, directory: tuple[tuple[int, ...], dict[str, zipfile.ZipInfo]]
    ) -> Members | None:
        """The archive at `path` opened again with the members a reading of it found
        (`directory()`, of a whole archive); None when the file is not that one now."""
        identity, members = directory
        f = open_file(path)
        if _identity(f) != identity:
            f.close()
            return None
        return cls(path, f, None, members, [])

    def __iter__(self) -> Iterator[RawSample]:
        try:
            yield from self.only(self.names(), self.skipped)
        finally:
            self.close()

    def only(self, names: list[str], skipped: list[str]) -> Iterator[RawSample]:
        """The named sample members (of `names()`), read as iterating reads them, each
        unreadable one to `skipped`; the archive stays open (a worker reads run after run)."""
        for name in names:
            info = self.members[name]
            data = None if self.direct is None else self.direct.read(info)
            why = ""
            if data is None:
                data, why = _member(self.zf, info)
            if data is None:
                skipped.append(f"{self.path.name}:{name}: {why}")
            else:
                yield f"{self.path.name}:{name}", data

    def names(self) -> list[str]:
        """The sample members' names, in the archive's order."""
        return [n for n in self.members if n.startswith(_SAMPLES) and n.endswith(".json")]

    def whole(self) -> bool:
        """Whether the archive is the file itself (not one salvaged from a file cut short)."""
        return not self.salvaged

    def close(self) -> None:
        if self._zf is not None:
            self._zf.close()
        self.f.close()


def _identity(f: IO[bytes]) -> tuple[int, ...]:
    info = os.fstat(f.fileno())
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


class _Direct:
    """Inspect's zstd members read straight from the file, with one decompressor for all.

    zipfile (with Inspect's zstd support) makes a decompressor for each member it opens, which
    cost as much as the decompression itself. Here a member is read only when it is plainly
    whole: Zstandard, not encrypted, its local header's name the directory's, one zstd frame
    that gives exactly the declared size (never more: a member is not inflated past it) with
    the declared CRC. Anything else, `read` gives None and zipfile reads the member as before,
    reporting what is wrong with it: the bytes either way are the same, or none.
    """

    def __init__(self, f: IO[bytes]) -> None:
        import zstandard  # Inspect AI's own dependency: only its logs are read so

        self.fd = f.fileno()
        self.dctx = zstandard.ZstdDecompressor()
        self.error = zstandard.ZstdError

    def read(self, info: zipfile.ZipInfo) -> bytes | None:
        if info.compress_type != _ZSTD or info.flag_bits & 0x1:
            return None
        if not 0 < info.file_size <= MAX_BYTES:
            return None  # empty (zstd needs a bound), or too large: zipfile's reading says so
        # one read for the local header, its name and the data: the header's extra field is
        # Inspect's (none, or a zip64 record), read again when it is longer than guessed
        name_size = len(info.filename.encode("utf-8"))
        start = info.header_offset + _LOCAL.size
        want = _LOCAL.size + name_size + _EXTRA_GUESS + info.compress_size
        block = os.pread(self.fd, want, info.header_offset)
        if len(block) < _LOCAL.size:
            return None
        sig, _, flags, method, *_, n_name, n_extra = _LOCAL.unpack_from(block)
        if sig != 0x04034B50 or method != _ZSTD or flags & 0x1:
            return None
        name = block[_LOCAL.size : _LOCAL.size + n_name]
        try:
            if name.decode("utf-8" if flags & 0x800 else "cp437") != info.orig_filename:
                return None
        except UnicodeDecodeError:
            return None
        at = _LOCAL.size + n_name + n_extra
        raw = block[at : at + info.compress_size]
        if len(raw) != info.compress_size:  # a longer extra field than guessed, or cut short
            raw = os.pread(self.fd, info.compress_size, start + n_name + n_extra)
            if len(raw) != info.compress_size:
                return None
        try:
            data = self.dctx.decompress(raw, max_output_size=info.file_size, allow_extra_data=False)
        except self.error:
            return None
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            return None
        return data


def _salvage(body: bytes) -> tuple[bytes, int]:
    """The archive's whole members before a cut, with a zip directory made for them.

    Walks the local headers from the start (Inspect's zipfile writes each member's sizes and
    CRC there, no data descriptor); stops at the first member that is not whole, or whose
    sizes are not in its header (a data descriptor, zip64). The CRCs copied into the new
    directory are the writer's, so every member read from it is still checked.
    """
    pos, directory, n = 0, bytearray(), 0
    while body.startswith(b"PK\x03\x04", pos) and pos + _LOCAL.size <= len(body):
        _, need, flags, method, time, date, crc, size, full, n_name, n_extra = _LOCAL.unpack_from(
            body, pos
        )
        end = pos + _LOCAL.size + n_name + n_extra + size
        if flags & 0x08 or size == 0xFFFFFFFF or end > len(body):
            break
        name = body[pos + _LOCAL.size : pos + _LOCAL.size + n_name]
        directory += _CENTRAL.pack(
            0x02014B50, need, need, flags, method, time, date, crc, size, full, n_name,
            0, 0, 0, 0, 0, pos,
        )  # fmt: skip
        directory += name
        n += 1
        pos = end
    end_record = _END.pack(0x06054B50, 0, 0, n, n, len(directory), pos, 0)
    return body[:pos] + bytes(directory) + end_record, n


def _member(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[bytes | None, str]:
    """A member's bytes, read whole so zipfile checks its CRC; None and why when unreadable.

    A member is read only within the cap: zipfile stops at the size the directory declares.
    """
    if info.file_size > MAX_BYTES:
        return None, too_large(Path(info.filename), info.file_size).why
    try:
        return zf.read(info), ""
    except Exception as exc:  # a damaged member: bad CRC, broken stream, unknown method
        return None, f"unreadable ({type(exc).__name__}: {exc})"


def read_json(path: Path) -> tuple[bytes, list[RawSample], list[str]]:
    """The header's JSON, each sample's JSON, and where the log stops being readable.

    Raises:
        Refused: not a regular file, or larger than the cap (`_reading.MAX_BYTES`).
        FormatError: not an Inspect `.json` log, or damaged before its samples.
    """
    raw = read_bytes(path)
    if _JSON_HEAD.match(raw[:HEAD_BYTES]) is None:
        raise not_inspect(path, 'it does not start {"version": N, "status": ...}')
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        # keep what comes before the first undecodable byte: the scan stops there
        text = raw[: exc.start].decode("utf-8")
    fields: dict[str, Any] = {}
    samples: list[RawSample] = []
    stop = _scan(text, fields, samples, path.name)
    skipped: list[str] = []
    if stop is not None:
        at, why = stop
        if "eval" not in fields:
            raise damaged(path, f"line {_line(text, at)}: {why}, before its samples")
        skipped.append(
            f"{path.name}:{_line(text, at)}: {why}; the rest of the log is not read "
            f"({len(samples)} samples before it)"
        )
    header = json.dumps({k: v for k, v in fields.items() if k not in _NOT_HEADER})
    return header.encode(), samples, skipped


def _skip(text: str, pos: int) -> int:
    """The position after the JSON whitespace at `pos`."""
    found = _WS.match(text, pos)
    return pos if found is None else found.end()


def _line(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


def _scan(
    text: str, fields: dict[str, Any], samples: list[RawSample], file: str
) -> tuple[int, str] | None:
    """Read the log's top-level values into `fields`, each sample into `samples`.

    A value is kept only once the delimiter after it is read, so a log cut short never yields
    a shortened value. Returns where and why reading stopped, or None when it read to the end.
    """
    decoder = json.JSONDecoder()
    pos = _skip(text, _skip(text, 0) + 1)  # after the "{" the sniff saw
    while True:
        if text.startswith("}", pos):
            return None
        try:
            key, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
            if not text.startswith(":", pos) or not isinstance(key, str):
                return pos, "expected a key and ':'"
            pos = _skip(text, pos + 1)
            if key == "samples":
                stop, pos = _scan_samples(text, pos, decoder, samples, file)
                if stop is not None:
                    return stop
            else:
                value, pos = decoder.raw_decode(text, pos)
            pos = _skip(text, pos)
        except json.JSONDecodeError as exc:
            return exc.pos, f"cut short or damaged ({exc.msg})"
        except RecursionError:
            return pos, "nested too deeply"
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("}", pos):
            return pos, "cut short or damaged (expected ',' or '}')"
        if key != "samples":
            fields[key] = value


def _scan_samples(
    text: str,
    pos: int,
    decoder: json.JSONDecoder,
    samples: list[RawSample],
    file: str,
) -> tuple[tuple[int, str] | None, int]:
    """The `samples` array from `pos`: each sample whose delimiter follows it is kept."""
    if not text.startswith("[", pos):
        return (pos, "expected the samples array"), pos
    pos = _skip(text, pos + 1)
    while not text.startswith("]", pos):
        start = pos
        value, pos = decoder.raw_decode(text, pos)
        pos = _skip(text, pos)
        if text.startswith(",", pos):
            pos = _skip(text, pos + 1)
        elif not text.startswith("]", pos):
            return (pos, "cut short or damaged (expected ',' or ']')"), pos
        where = f"{file}:{_line(text, start)}"
        samples.append((where, value))
    return None, pos + 1
