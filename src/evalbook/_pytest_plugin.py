"""The pytest plugin: every `eb.Eval` with `check=` in an `eval_*.py` file is one test.

Registered as the `pytest11` entry point `evalbook` (pyproject.toml), so pytest loads it in
every session; it does nothing until `pytest --evalbook` or `evalbook = true` in the ini turns
it on, and it loads the library (pandas, pyarrow) only then, when an eval file is collected:
an inactive plugin costs pytest one cheap import. An item runs its Eval into the store
(`--evalbook-store`, else the Eval's `store=`, else `runs`), then checks the run with the
Eval's conditions (`_api/_eval.run_and_check`, over `eb.check`, the gate `evalbook gate`
runs); a failing check fails the item with the check's report. docs/ci.md is the guide.
"""

from __future__ import annotations

import fnmatch
import math
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:  # the library loads only once the plugin is on (see EvalFile.collect)
    from ._api._eval import Eval

__all__ = [
    "AGAINST_PROPERTIES",
    "PROPERTIES",
    "CheckFailed",
    "EvalFile",
    "EvalItem",
    "Headlines",
    "failed_checks",
    "pytest_addoption",
    "pytest_collect_file",
    "pytest_configure",
    "pytest_runtest_makereport",
]

# the JUnit properties each item records, in this order (`delta`, `p_value` with `against`)
PROPERTIES = ("mean", "ci_low", "ci_high", "completion")
AGAINST_PROPERTIES = ("delta", "p_value")
_HEADLINE = "evalbook_headline"  # a property the terminal summary reads (xdist sends it too)


class CheckFailed(Exception):
    """An eval's check did not pass; its message is the check's report."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--evalbook`, `--evalbook-store DIR`; the ini options `evalbook`, `evalbook_files`."""
    group = parser.getgroup("evalbook", "evalbook: evals as tests (docs/ci.md)")
    group.addoption(
        "--evalbook",
        action="store_true",
        default=False,
        help="collect every eb.Eval with check= in eval_*.py files as a test",
    )
    group.addoption(
        "--evalbook-store",
        metavar="DIR",
        default=None,
        help="the run store the evals run into (default: the Eval's store=, else runs)",
    )
    parser.addini("evalbook", "collect evals as tests (as --evalbook)", type="bool", default=False)
    parser.addini(
        "evalbook_files",
        "glob patterns of the files whose evals are collected",
        type="args",
        default=["eval_*.py"],
    )


def _active(config: pytest.Config) -> bool:
    return bool(config.getoption("evalbook") or config.getini("evalbook"))


def _matches(path: Path, patterns: list[str]) -> bool:
    """A pattern with no `/` matches the file's name, one with `/` its whole path."""
    for pattern in patterns:
        if "/" in pattern:
            if fnmatch.fnmatch(path.as_posix(), pattern if pattern[0] == "*" else f"*/{pattern}"):
                return True
        elif fnmatch.fnmatch(path.name, pattern):
            return True
    return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalFile | None:
    """An `EvalFile` for a Python file matching `evalbook_files`, when the plugin is on."""
    config = parent.config
    if not _active(config) or file_path.suffix != ".py":
        return None
    if not _matches(file_path, list(config.getini("evalbook_files"))):
        return None
    found: EvalFile = EvalFile.from_parent(parent, path=file_path)
    return found


class EvalFile(pytest.Module):
    """A file of evals, imported as pytest imports a test module; one item per eval."""

    def collect(self) -> Iterator[EvalItem]:
        # the library, not a layer above: it loads only now, when the plugin is on and an
        # eval file is collected (pytest imports this module in every session)
        from ._api._eval import Eval

        seen: set[int] = set()
        for var, value in vars(self.obj).items():
            if not isinstance(value, Eval) or value.check is None or id(value) in seen:
                continue
            seen.add(id(value))
            yield EvalItem.from_parent(self, name=value.name or var, evaluation=value)


class EvalItem(pytest.Item):
    """One eval: run it into the store, then check it; fails with the check's report."""

    def __init__(self, *, evaluation: Eval, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.evaluation = evaluation

    def runtest(self) -> None:
        """Run the eval, record its figures as properties, fail when its check fails."""
        from ._api._eval import run_and_check  # the library: loaded on use (see collect)
        from ._util._text import visible

        store = self.config.getoption("evalbook_store")
        run, result = run_and_check(self.evaluation, store=store, name=self.name)
        values: dict[str, float | None] = {
            "mean": result.mean,
            "ci_low": result.ci_low,
            "ci_high": result.ci_high,
            "completion": result.completion,
        }
        if result.against is not None:
            values.update(delta=result.delta, p_value=result.p_value)
        for key, value in values.items():  # PROPERTIES, then AGAINST_PROPERTIES
            self.user_properties.append((key, _number(value)))
        verdict = "check passed" if result.passed else "check FAILED"
        self.user_properties.append((_HEADLINE, f"{visible(run.headline.text)} · {verdict}"))
        if not result.passed:
            raise CheckFailed(result.report)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """The check's report; a configuration mistake as its one line; else pytest's own."""
        from ._api._refs import USER_ERRORS, user_error_line  # the library (see collect)

        if isinstance(excinfo.value, CheckFailed):
            return str(excinfo.value)
        if isinstance(excinfo.value, USER_ERRORS):
            return f"evalbook: {type(excinfo.value).__name__}: {user_error_line(excinfo.value)}"
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the eval is: its file, and `eval NAME`."""
        return self.path, None, f"eval {self.name}"


def _number(value: float | None) -> str:
    """A property's value: the number as Python writes it, `nan` when there is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "nan"
    return repr(float(value))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Any test (plugin on or off): a failed `assert eb.check(...)` gets the check's whole
    report as a section of its failure, since pytest shows a value's repr on one line, cut."""
    report: pytest.TestReport = yield
    if report.failed and call.excinfo is not None:
        for text in failed_checks(call.excinfo):
            report.sections.append(("evalbook check", text))
    return report


def failed_checks(excinfo: pytest.ExceptionInfo[BaseException]) -> list[str]:
    """The reports of the failed `eb.Check`s in the frame an AssertionError came from."""
    gate = sys.modules.get("evalbook._compare._gate")
    if gate is None or not isinstance(excinfo.value, AssertionError):
        return []  # no check was ever made in this process (or no assert failed)
    tb = excinfo.tb
    while tb.tb_next is not None:
        tb = tb.tb_next
    out: dict[int, str] = {}
    for value in tb.tb_frame.f_locals.values():  # an assert's operands are locals there
        if isinstance(value, gate.Check) and not value.passed:
            out.setdefault(id(value), value.report)
    return list(out.values())


def pytest_configure(config: pytest.Config) -> None:
    """When the plugin is on, register what prints the evals' headlines at the end."""
    if _active(config):
        config.pluginmanager.register(Headlines(), "evalbook-headlines")


class Headlines:
    """One headline line per eval that ran, in the terminal summary (xdist workers' too)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep an eval's headline from its `call` report's properties."""
        if report.when != "call":
            return
        for key, value in report.user_properties:
            if key == _HEADLINE:
                self.lines.append((report.nodeid, str(value)))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The lines, under an `evalbook` heading."""
        if not self.lines:
            return
        terminalreporter.section("evalbook", sep="-")
        for nodeid, line in self.lines:
            terminalreporter.write_line(f"{nodeid}: {line}")
