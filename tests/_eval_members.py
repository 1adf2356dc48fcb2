"""An Inspect `.eval` log with its sample members changed: hostile or odd samples for the
importer's tests, written as a zip the importer reads like any other."""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from pathlib import Path


def rewritten(path: Path, out: Path, change: Callable[[bytes, int], bytes]) -> Path:
    """`path` copied to `out` with each sample member's bytes changed by `change(data, n)`
    (`n`: the member's position among the samples)."""
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w") as dst:
        n = 0
        for info in src.infolist():
            data = src.read(info)
            if info.filename.startswith("samples/"):
                data = change(data, n)
                n += 1
            dst.writestr(info.filename, data, zipfile.ZIP_DEFLATED)
    return out
