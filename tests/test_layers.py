"""The layers contract (pyproject.toml `[tool.importlinter]`, docs/architecture.md) holds, and
it can fail: a copy of the package with one upward import is reported as broken."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "evalbook"
LINT = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")

pytestmark = pytest.mark.skipif(not Path(LINT).exists(), reason="import-linter is not installed")


def _lint(src: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports with the project's contract against the package found under `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    return subprocess.run(
        [LINT, "--no-cache", str(ROOT / "pyproject.toml")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )


def _copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(PACKAGE, src / "evalbook", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def test_the_package_keeps_the_contract(tmp_path: Path) -> None:
    out = _lint(_copy(tmp_path), tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 kept, 0 broken" in out.stdout
    # no import is let through: a display hook imports _render, below the object it shows
    assert "ignored imports" not in out.stdout


@pytest.mark.parametrize(
    ("module", "upward"),
    [
        ("_model/_definitions.py", "from evalbook._store import _load"),  # model -> store
        ("_store/_load.py", "from evalbook._runner import _engine"),  # store -> runner
        ("_util/_fmt.py", "import evalbook.display"),  # a leaf -> display
        ("_render/_style.py", "from evalbook._model import _run_data"),  # renderers -> model
        ("_runner/_plan.py", "def _f() -> None:\n    from evalbook._api import _run"),  # lazily
    ],
)
def test_an_upward_import_breaks_the_contract(tmp_path: Path, module: str, upward: str) -> None:
    src = _copy(tmp_path)
    target = src / "evalbook" / module
    target.write_text(target.read_text() + "\n\n" + upward + "\n")
    out = _lint(src, tmp_path)
    assert out.returncode != 0, out.stdout
    assert "BROKEN" in out.stdout
    assert module.split("/")[0] in out.stdout
