"""The pytest plugin (`pytest11` entry point `evalbook`), run as a user runs it: pytest in a
subprocess, on a generated project with a stored baseline and two evals, one passing and
one failing its check against that baseline.

Each run is a new pytest process (about 5 s: pandas, then the evals), so one project is
built per module and each test runs pytest on it with other options.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb

pytestmark = pytest.mark.slow  # a pytest process per test: about 10 s each on an idle machine

# 40 cases; the baseline gets 36 right (90 %), `good` 36 (90 %), `candidate` 20 (50 %)
EVALS = {
    "eval_quality.py": """
        import pandas as pd
        import evalbook as eb

        ok = eb.define_score("ok", label="Right", primary=True)
        data = pd.DataFrame({"x": range(40)})

        @eb.scorer(ok)
        def right(x):
            return float(x % 10 != 0)

        good = eb.Eval(data, task=lambda x: x, scorers=[right], name="good",
                       check=dict(min=0.8, max_errors=0))
        not_a_test = eb.Eval(data, task=lambda x: x, scorers=[right], name="unchecked")
    """,
    "eval_regress.py": """
        import pandas as pd
        import evalbook as eb

        ok = eb.define_score("ok", label="Right", primary=True)
        data = pd.DataFrame({"x": range(40)})

        @eb.scorer(ok)
        def worse(x):
            return float(x % 2 == 0)

        candidate = eb.Eval(data, task=lambda x: x, scorers=[worse],
                            check=dict(against="baseline", max_drop=0.2))
    """,
}


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text), encoding="utf-8")


def _baseline(store: Path) -> eb.Run:
    ok = eb.define_score("ok", label="Right", primary=True)
    data = pd.DataFrame({"x": range(40)})
    scorer = eb.scorer(ok)(lambda x: float(x % 10 != 0))
    return eb.run(
        data, task=lambda x: x, scorers=[scorer], name="baseline", store=store, progress=False
    )


def pytest_run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m pytest ARGS` in `folder`, with only that folder's configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "FORCE_COLOR"))}
    env["EVALBOOK_PROGRESS"] = "0"
    ini = folder / "pytest.ini"
    if not ini.exists():
        ini.write_text("[pytest]\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ini), "-p", "no:randomly", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("evals")
    _write(folder, EVALS)
    _baseline(folder / "runs")
    return folder


def _properties(xml: Path) -> dict[str, dict[str, str]]:
    """Each test case's JUnit properties, by the case's name."""
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        props = {p.get("name", ""): p.get("value", "") for p in case.iter("property")}
        out[case.get("name", "")] = props
    return out


def test_one_passes_one_fails_with_the_report_properties_and_headlines(project: Path) -> None:
    proc = pytest_run(project, "--evalbook", "--junitxml=report.xml")
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    assert "1 failed, 1 passed" in out
    # the failure is the check's report, as `evalbook gate` words it, and no traceback
    assert "_ eval candidate _" in out
    assert "\nagainst baseline (" in out
    assert "FAIL  ok: delta −40.0 pp vs baseline, 95% CI [" in out
    assert "(--max-drop)\n" in out and "gate failed: 1 of 2 conditions" in out
    assert "Traceback" not in out and "_pytest_plugin.py" not in out
    # one headline line per eval in the terminal summary
    assert "eval_quality.py::good: Right 90% · completed 100% · check passed" in out
    assert "eval_regress.py::candidate: Right 50% · completed 100% · check FAILED" in out
    # the JUnit XML carries each eval's figures
    props = _properties(project / "report.xml")
    assert set(props) == {"good", "candidate"}
    good, candidate = props["good"], props["candidate"]
    assert float(good["mean"]) == pytest.approx(0.9) and float(good["completion"]) == 1.0
    assert float(good["ci_low"]) < 0.9 < float(good["ci_high"])
    assert "delta" not in good and "p_value" not in good
    assert float(candidate["mean"]) == pytest.approx(0.5)
    assert float(candidate["delta"]) == pytest.approx(-0.4)
    assert 0 < float(candidate["p_value"]) < 0.01
    # the evals ran into ./runs, each under its name (the variable's, when it has none)
    names = sorted(p.name.rsplit("-", 1)[0] for p in (project / "runs").iterdir())
    assert names.count("good") >= 1 and names.count("candidate") >= 1
    assert "unchecked" not in names  # an Eval without check= is not a test

    # --lf: only the eval that failed runs again
    again = pytest_run(project, "--evalbook", "--lf")
    assert "rerun previous 1 failure" in again.stdout, again.stdout
    assert "eval_quality.py" not in again.stdout
    assert again.stdout.rstrip().splitlines()[-1].strip("= ").startswith("1 failed in ")


def test_k_selects_an_eval_by_name(project: Path) -> None:
    proc = pytest_run(project, "--evalbook", "-k", "good", "-p", "no:cacheprovider")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed, 1 deselected" in proc.stdout


def test_x_stops_at_the_first_failure(project: Path) -> None:
    proc = pytest_run(project, "--evalbook", "-x", "-p", "no:cacheprovider", "eval_regress.py")
    assert proc.returncode == 1 and "stopping after 1 failures" in proc.stdout, proc.stdout


def test_xdist_runs_them_in_two_workers(project: Path) -> None:
    proc = pytest_run(project, "--evalbook", "-n", "2", "-p", "no:cacheprovider")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 1 passed" in proc.stdout
    assert "gate failed: 1 of 2 conditions" in proc.stdout
    assert "eval_quality.py::good: Right 90% · completed 100% · check passed" in proc.stdout


def test_off_unless_asked_and_on_by_the_ini_with_its_own_files(tmp_path: Path) -> None:
    _write(
        tmp_path, {"eval_x.py": EVALS["eval_quality.py"], "check_y.py": EVALS["eval_quality.py"]}
    )
    off = pytest_run(tmp_path, "-p", "no:cacheprovider")
    assert off.returncode == 5 and "no tests ran" in off.stdout, off.stdout  # nothing collected
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nevalbook = true\nevalbook_files = check_*.py\n", encoding="utf-8"
    )
    on = pytest_run(tmp_path, "-p", "no:cacheprovider", "--evalbook-store", "elsewhere")
    assert on.returncode == 0, on.stdout + on.stderr
    assert "check_y.py::good" in on.stdout and "eval_x.py" not in on.stdout
    assert "1 passed" in on.stdout
    assert [p.name.startswith("good-") for p in (tmp_path / "elsewhere").iterdir()] == [True]


def test_a_missing_baseline_fails_in_one_line_before_any_case_runs(tmp_path: Path) -> None:
    _write(tmp_path, {"eval_regress.py": EVALS["eval_regress.py"]})
    proc = pytest_run(tmp_path, "--evalbook", "-p", "no:cacheprovider")
    assert proc.returncode == 1 and "1 failed" in proc.stdout, proc.stdout
    assert "evalbook: ConfigurationError: against='baseline': no run named 'baseline'" in (
        proc.stdout
    )
    assert "Traceback" not in proc.stdout
    assert not (tmp_path / "runs").exists()  # nothing ran


def test_a_failed_assert_of_eb_check_in_any_test_shows_the_whole_report(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "test_mine.py": """
                import pandas as pd
                import evalbook as eb

                def test_quality():
                    run = eb.run(pd.DataFrame({"x": range(20)}), task=lambda x: x, name="mine",
                                 scorers=[lambda x: float(x % 4 != 0)], store=None,
                                 progress=False)
                    assert eb.check(run, min=0.8, max_errors=0)
            """
        },
    )
    proc = pytest_run(tmp_path, "-p", "no:cacheprovider")  # the plugin is not turned on
    assert proc.returncode == 1, proc.stdout
    section = proc.stdout.split(" evalbook check ", 1)[1]
    assert section.splitlines()[1:5] == [
        "gate mine: lambda 75% · completed 100%",
        "ok    completion 100% (20 of 20 passed or failed) >= min 100% (--min-completion)",
        "FAIL  lambda: mean 75% < min 80% (--min)",
        "ok    lambda: 0 error records <= max 0 (--max-errors)",
    ]


def test_the_plugin_loads_no_library_when_pytest_starts() -> None:
    code = (
        "import sys, pytest, evalbook._pytest_plugin; "
        "print(','.join(m for m in ('pandas', 'numpy', 'pyarrow', 'asyncio', 'evalbook._api') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
