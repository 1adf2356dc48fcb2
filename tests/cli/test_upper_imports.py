"""The upper layers (judges, compare, display, api refs, CLI, magics) import cleanly: no
module-level import cycle, and imports inside functions only for optional dependencies and
display hooks, each with a comment saying why.

It reads the source tree, not the package's behaviour, so it names modules by their paths
(`HOOKS`: the modules loaded lazily on purpose).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "evalbook"
UPPER = ("_judges", "_compare", "display", "_cli", "_magics.py", "_api/_refs.py", "__init__.py")
OPTIONAL = ("IPython", "ipywidgets", "anywidget", "plotly", "openai", "cloudpickle")
# display hooks; the magics (IPython); the CLI's commands, loaded by its entry point so that a
# Ctrl-C while they load is caught (`_cli/__init__.py`)
HOOKS = ("evalbook.display", "evalbook._magics", "evalbook._cli._main")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(importer: str, node: ast.ImportFrom | ast.Import, is_package: bool) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = importer.split(".")
    if node.level:
        base = base[: len(base) - node.level + (1 if is_package else 0)]
        target = ".".join(base + ([node.module] if node.module else []))
    else:
        target = node.module or ""
    # `from . import _x` imports the module `pkg._x`
    return [f"{target}.{a.name}" if node.module is None else target for a in node.names]


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads: not in functions, not under `if TYPE_CHECKING:`."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.ClassDef):
            todo.extend(ast.iter_child_nodes(node))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets: set[str] = set()
        for node in _top_level_imports(tree):
            for target in _resolve(name, node, path.name == "__init__.py"):
                while target and target not in modules:  # `from x import name`: the module x
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            # importing a submodule loads its package first: not a cycle of its own
            if node.startswith(nxt + "."):
                continue
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_no_module_level_import_cycle() -> None:
    graph = _graph()
    assert "evalbook._cli._args" in graph["evalbook._cli._main"]  # the graph sees imports
    assert _cycle(graph) is None, " -> ".join(_cycle(graph) or [])


def test_imports_resolve_to_the_modules_they_load() -> None:
    def targets(importer: str, source: str, is_package: bool = False) -> list[str]:
        node = ast.parse(source).body[0]
        assert isinstance(node, ast.Import | ast.ImportFrom)
        return _resolve(importer, node, is_package)

    assert targets("p.q.m", "from . import _a, _b") == ["p.q._a", "p.q._b"]  # two modules
    assert targets("p.q.m", "from ._a import f, g") == ["p.q._a", "p.q._a"]
    assert targets("p.q.m", "from .. import x") == ["p.x"]
    assert targets("p.q", "from . import _a", is_package=True) == ["p.q._a"]
    assert targets("p.q.m", "import json, os.path") == ["json", "os.path"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"p.x": {"p"}, "p": set()}) is None


def test_imports_inside_functions_are_optional_dependencies_or_display_hooks() -> None:
    checked = 0
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if not rel.startswith(UPPER):
            continue
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        name = _module_name(path)
        for func in ast.walk(ast.parse(source)):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                checked += 1
                targets = _resolve(name, node, path.name == "__init__.py")
                where = f"{rel}:{node.lineno}"
                assert all(t.startswith(OPTIONAL + HOOKS) for t in targets), where
                nearby = lines[node.lineno - 2 : node.lineno]
                assert any("#" in line for line in nearby), f"{where}: say why it is lazy"
    assert checked >= 5
