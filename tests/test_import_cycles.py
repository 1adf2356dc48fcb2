"""No import cycle among evalbook's modules (docs/architecture.md, "The import rule, checked").

The layers contract forbids imports upward between layers; a cycle inside one layer (two
modules importing each other, at the top of a file or inside a function) is the other way a
module loses its place. The modules' imports are read with `ast`, so nothing is imported.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "evalbook"


def _graph(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the package's other modules (`from . import x` included)."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, (path, is_package) in modules.items():
        base = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                start = base
                for _ in range(node.level - 1):
                    start = start.rpartition(".")[0]
                source = node.module or ""
                if node.level:
                    source = f"{start}.{source}" if source else start
                names = [source, *(f"{source}.{a.name}" for a in node.names)]
            else:
                continue
            for name in names:
                target = known(name) if name.startswith(package.name) else None
                # a package's own modules reach its __init__ by being imported: not an edge
                inside = target is not None and module.startswith(target + ".")
                if target is not None and target != module and not inside:
                    graph[module].add(target)
    return graph


def cycles(package: Path) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    graph = _graph(package)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle() -> None:
    assert cycles(PACKAGE) == []


def test_a_cycle_inside_a_function_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "evalbook"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "_render" / "_style.py"  # _figure imports _style: _style back, lazily
    target.write_text(target.read_text() + "\n\ndef _f() -> None:\n    from . import _figure\n")
    assert cycles(copy) == [["evalbook._render._figure", "evalbook._render._style"]]
