"""docs/architecture.md stays true: every module of `src/evalbook/` is named in its layer.

The "Layers" section has one paragraph per layer, opened by the layer's name in bold
(`**`_store`**`, or `**`_cli`, `_magics`**` for two). A module is named there by its path
below its layer (`_tally.py`, `_log/_read.py`, `dask/_driver.py`); a bare file name is
enough when no other module of the layer has it. A top-level module (`_errors.py`) is named
in the paragraph of its own name.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "evalbook"
DOC = ROOT / "docs" / "architecture.md"
_HEAD = re.compile(r"^\*\*(?P<names>`[^*]+`)(?:\.)?\*\*", re.M)


def paragraphs(text: str) -> dict[str, str]:
    """The Layers section's paragraphs by layer name (one paragraph may open two layers)."""
    start = text.index("\n## Layers")
    end = text.index("\n## ", start + 1)
    section = text[start:end]
    heads = list(_HEAD.finditer(section))
    out: dict[str, str] = {}
    for i, head in enumerate(heads):
        body = section[head.start() : heads[i + 1].start() if i + 1 < len(heads) else None]
        for name in re.findall(r"`([^`]+)`", head.group("names")):
            out[name] = out.get(name, "") + body
    return out


def modules() -> list[tuple[str, str]]:
    """(layer, path below the layer) of every module, `__init__.py` files left out."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC)
        if rel.name == "__init__.py":
            continue
        if len(rel.parts) == 1:
            found.append((rel.stem, rel.name))
        else:
            found.append((rel.parts[0], "/".join(rel.parts[1:])))
    return found


def missing(text: str, found: list[tuple[str, str]]) -> list[str]:
    """The modules of `found` that `text` does not name in their layer's paragraph."""
    by_layer = paragraphs(text)
    names = Counter((layer, Path(sub).name) for layer, sub in found)
    out = []
    for layer, sub in found:
        body = by_layer.get(layer, "")
        spellings = {f"`{sub}`", f"`{layer}/{sub}`"}
        if names[(layer, Path(sub).name)] == 1:
            spellings.add(f"`{Path(sub).name}`")
        if not any(s in body for s in spellings):
            out.append(f"{layer}/{sub}")
    return out


def test_every_module_is_on_the_map() -> None:
    found = modules()
    assert len(found) > 100  # the walk found the package
    gaps = missing(DOC.read_text(encoding="utf-8"), found)
    assert not gaps, f"docs/architecture.md does not name these modules in their layer: {gaps}"


@pytest.mark.parametrize(
    ("drop", "module"),
    [
        ("`_tally.py`", "_model/_tally.py"),  # a module of a layer
        ("`_log/_read.py`", "_store/_log/_read.py"),  # a module of a subpackage
        ("`dask/_limits.py`", "_runner/dask/_limits.py"),  # a name two modules share
        ("`_errors.py`", "_errors/_errors.py"),  # a top-level module
    ],
)
def test_a_module_left_off_the_map_is_found(drop: str, module: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert drop in text
    assert module in missing(text.replace(drop, "`(gone)`"), modules())


def test_a_name_elsewhere_does_not_count() -> None:
    # named only in another layer's paragraph: still missing from its own
    text = DOC.read_text(encoding="utf-8").replace("`_tally.py`", "`_tally_gone.py`")
    text = text.replace("**`_util`**", "**`_util`** `_tally.py`", 1)
    assert "_model/_tally.py" in missing(text, modules())


def test_test_files_have_unique_names() -> None:
    # tests/ has no packages: pytest imports each file by its basename, so two test files of
    # one name in two layers fail the whole collection ("import file mismatch")
    names: dict[str, list[str]] = {}
    for path in Path(__file__).parent.rglob("test_*.py"):
        names.setdefault(path.name, []).append(str(path.relative_to(Path(__file__).parent)))
    assert not {n: p for n, p in names.items() if len(p) > 1}
