"""The documentation runs: every ```python block of every `docs/*.md` (and of the README) is
executed.

Blocks of one file run in order in one namespace (like cells of a notebook), in a temporary
working directory, offline, with progress bars off. A block that starts with `>>>` is a
doctest: its shown output is checked too. Use ```text, ```bash or ```console for anything
that is not Python. One pytest item per file; a failure names the file and the block's line.
"""

from __future__ import annotations

import doctest
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

DOCS = Path(__file__).resolve().parent.parent / "docs"

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its info string, first line number (1-based) and source."""

    info: str
    line: int
    source: str


def code_blocks(text: str) -> list[Block]:
    """Every fenced block of a Markdown text, in order."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        fence, info, indent = m.group("fence"), m.group("info").strip(), len(m.group("indent"))
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            close = _FENCE.match(lines[j])
            if (
                close
                and close.group("fence")[0] == fence[0]
                and len(close.group("fence")) >= len(fence)
                and not close.group("info").strip()
            ):
                break
            body.append(lines[j][indent:] if lines[j][:indent].isspace() else lines[j])
            j += 1
        blocks.append(Block(info, i + 2, "\n".join(body) + "\n"))
        i = j + 1
    return blocks


def python_blocks(text: str) -> list[Block]:
    """The blocks the runner executes: info string `python` or `py` (first word)."""
    return [b for b in code_blocks(text) if b.info.split(" ")[0].lower() in ("python", "py")]


def run_blocks(path: Path, namespace: dict[str, Any]) -> None:
    """Execute a file's Python blocks in order in `namespace`; line numbers point into it."""
    for block in python_blocks(path.read_text(encoding="utf-8")):
        if block.source.lstrip().startswith(">>>"):
            _run_doctest(path, block, namespace)
            continue
        padded = "\n" * (block.line - 1) + block.source
        code = compile(padded, str(path), "exec")
        try:
            exec(code, namespace)
        except Exception as exc:
            raise AssertionError(
                f"{path.name}, block at line {block.line}: {type(exc).__name__}: {exc}"
            ) from exc


def _run_doctest(path: Path, block: Block, namespace: dict[str, Any]) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.source, namespace, path.name, str(path), block.line - 1)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False
    )
    failures: list[str] = []
    runner.run(test, out=failures.append, clear_globs=False)
    if runner.failures:
        raise AssertionError(
            f"{path.name}, doctest block at line {block.line}:\n" + "".join(failures)
        )


# The README's examples run too, so that the first page anyone reads stays true.
DOC_FILES = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]


@pytest.mark.parametrize("doc", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_doc_runs(doc: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EVALBOOK_PROGRESS", "0")
    namespace: dict[str, Any] = {"__name__": f"docs.{doc.stem}"}
    run_blocks(doc, namespace)


# -- the runner itself -----------------------------------------------------------------------


def test_runner_finds_blocks_in_order_with_their_lines() -> None:
    text = "# T\n\n```python\nx = 1\n```\n\ntext\n\n```bash\nls\n```\n\n````py\ny = x + 1\n````\n"
    blocks = python_blocks(text)
    assert [(b.line, b.source) for b in blocks] == [(4, "x = 1\n"), (14, "y = x + 1\n")]
    assert [b.info for b in code_blocks(text)] == ["python", "bash", "py"]


def test_runner_shares_a_namespace_and_reports_the_failing_block(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("```python\nx = 41\n```\n\n```python\nx += 1\nassert x == 43, x\n```\n")
    namespace: dict[str, Any] = {}
    with pytest.raises(AssertionError, match=r"page.md, block at line 6: AssertionError: 42"):
        run_blocks(doc, namespace)
    assert namespace["x"] == 42


def test_runner_checks_doctest_output(tmp_path: Path) -> None:
    doc = tmp_path / "page.md"
    doc.write_text("```python\n>>> 1 + 1\n2\n```\n")
    run_blocks(doc, {})
    doc.write_text("```python\n>>> 1 + 1\n3\n```\n")
    with pytest.raises(AssertionError, match="doctest block at line 2"):
        run_blocks(doc, {})


def yaml_blocks(text: str) -> list[Block]:
    """The ```yaml (or ```yml) blocks: each must parse, and a workflow must be well formed."""
    return [b for b in code_blocks(text) if b.info.split(" ")[0].lower() in ("yaml", "yml")]


def check_yaml(path: Path, block: Block) -> None:
    """A yaml block parses; one that is a GitHub Actions workflow (it has `jobs`) has a
    trigger, and each job a runner and steps that each run a command or use an action."""
    where = f"{path.name}, yaml block at line {block.line}"
    try:
        data = yaml.safe_load(block.source)
    except yaml.YAMLError as exc:
        raise AssertionError(f"{where}: {exc}") from exc
    if not (isinstance(data, dict) and "jobs" in data):
        return
    assert "on" in data or True in data, f"{where}: a workflow needs `on:`"  # YAML 1.1: on=True
    assert isinstance(data["jobs"], dict) and data["jobs"], f"{where}: no jobs"
    for name, job in data["jobs"].items():
        assert "runs-on" in job, f"{where}: job {name} has no runs-on"
        steps = job.get("steps")
        assert isinstance(steps, list) and steps, f"{where}: job {name} has no steps"
        for step in steps:
            assert isinstance(step, dict) and ("run" in step) != ("uses" in step), (
                f"{where}: job {name}: a step runs a command or uses an action: {step}"
            )


@pytest.mark.parametrize("doc", DOC_FILES, ids=[p.name for p in DOC_FILES])
def test_doc_yaml_is_valid(doc: Path) -> None:
    for block in yaml_blocks(doc.read_text(encoding="utf-8")):
        check_yaml(doc, block)


def test_yaml_check_fails_on_a_broken_workflow(tmp_path: Path) -> None:
    good = "on: push\njobs:\n  a:\n    runs-on: x\n    steps:\n      - run: ls\n"
    check_yaml(tmp_path / "p.md", Block("yaml", 1, good))
    for bad in (good.replace("runs-on", "runs_on"), good.replace("- run: ls", "- nothing: 1"),
                "jobs: [\n"):  # fmt: skip
        with pytest.raises(AssertionError, match="yaml block at line 1"):
            check_yaml(tmp_path / "p.md", Block("yaml", 1, bad))


def test_there_are_docs() -> None:
    assert DOC_FILES, f"no Markdown files in {DOCS}"
