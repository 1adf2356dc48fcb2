"""No module reads an underscore attribute of another module's object: what one layer needs of
another is a public name (e.g. `RunData.results`), so a module's private parts can change
without another module noticing. Reading an attribute its own module defines is fine; so are
the Python protocols a private-looking name belongs to (NamedTuple's `_replace`, the
notebook display hooks)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "evalbook"
PROTOCOL = {
    "_replace",
    "_asdict",
    "_fields",
    "_repr_html_",
    "_repr_mimebundle_",
    "_ipython_display_",
}


def _defined(tree: ast.AST) -> set[str]:
    """The underscore names a module defines: functions, classes, assigned attributes."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def foreign_reads(source: str) -> list[tuple[int, str]]:
    """(line, attribute) of each underscore attribute read that the module does not define."""
    tree = ast.parse(source)
    own = _defined(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        attr = node.attr
        if not attr.startswith("_") or attr.startswith("__") or attr in PROTOCOL or attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls", "sys"):
            continue  # its own class's; sys._getframe is the interpreter's
        found.append((node.lineno, attr))
    return found


def test_no_module_reads_another_modules_private_attribute() -> None:
    found = {
        str(path.relative_to(SRC)): reads
        for path in sorted(SRC.rglob("*.py"))
        if (reads := foreign_reads(path.read_text(encoding="utf-8")))
    }
    assert len(list(SRC.rglob("*.py"))) > 100
    assert found == {}, f"underscore attributes of other modules' objects read: {found}"


def test_a_foreign_private_read_is_found() -> None:
    assert foreign_reads("def f(run):\n    return run._results\n") == [(2, "_results")]
    assert foreign_reads("class A:\n    _x = 1\n\ndef f(a):\n    return a._x\n") == []
    assert foreign_reads("def f(c):\n    return c._replace(a=1)\n") == []
