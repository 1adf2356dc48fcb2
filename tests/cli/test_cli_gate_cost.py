"""`evalbook gate --max-cost / --max-latency-p95` and the `--max-cost` run option (CLI, magics)."""

from __future__ import annotations

import math
import re
import textwrap
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython

import evalbook as eb
from _cli_helpers import assert_user_error, cli, in_process

OK = eb.define_score("ok", primary=True)


def _run(
    costs: list[float | None], store: Path | None, *, name: str = "paid", sleep: float = 0.0
) -> eb.Run:
    """One case per cost; a case records its cost (None: records nothing), after `sleep` s."""
    df = pd.DataFrame({"id": [f"c{i}" for i in range(len(costs))], "cost": costs})

    def task(id: str, cost: float | None, ctx: eb.Context) -> str:
        if sleep:
            time.sleep(sleep)  # a floor under each duration, so the p95 is above a threshold
        if cost is not None and not math.isnan(cost):
            ctx.record_usage(input_tokens=10, output_tokens=2, cost=cost)
        return id

    return eb.run(
        df,
        task=task,
        scorers=[eb.scorer(OK)(lambda output: 1.0)],
        name=name,
        store=store,
        progress=False,
    )


def _gate(capsys: pytest.CaptureFixture[str], run: eb.Run, *args: str) -> tuple[int, str, str]:
    return in_process(capsys, "gate", str(run.path), *args)


def test_max_cost_passes_and_fails_with_observed_and_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run([0.25, 0.25, 0.5], tmp_path)
    code, out, _ = _gate(capsys, run, "--max-cost", "1")
    assert code == 0, out
    assert "ok    cost $1 <= max $1 (--max-cost)" in out
    code, out, _ = _gate(capsys, run, "--max-cost", "0.99")
    assert code == 1
    assert "FAIL  cost $1 > max $0.99 (--max-cost)" in out


def test_unknown_cost_fails_never_counted_as_zero(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run([None, None], tmp_path)
    code, out, err = _gate(capsys, run, "--max-cost", "100")
    assert code == 1, (out, err)
    assert "FAIL  cost unknown: no sample recorded a cost" in out
    assert "never counted as $0 (max $100) (--max-cost)" in out


def test_partly_known_cost_says_how_many_samples_it_covers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run([0.5, None, 0.25], tmp_path)
    code, out, _ = _gate(capsys, run, "--max-cost", "1")
    assert code == 0
    assert "cost $0.75 (known for 2 of 3 samples) <= max $1 (--max-cost)" in out


def test_max_latency_p95(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run([0.1, 0.1], tmp_path, sleep=0.05)
    p95 = float(run.usage_summary()["latency_p95_s"].iloc[0])
    assert p95 >= 0.05
    code, out, _ = _gate(capsys, run, "--max-latency-p95", "0.01")
    assert code == 1
    (obs,) = re.findall(
        r"^FAIL  latency p95 (\d+\.?\d*) s > max 0\.01 s \(--max-latency-p95\)$", out, re.M
    )
    decimals = len(obs.partition(".")[2])
    assert float(obs) == pytest.approx(p95, abs=0.5 * 10**-decimals)  # the p95, as far as shown
    code, out, _ = _gate(capsys, run, "--max-latency-p95", "600", "--max-cost", "0.2")
    assert code == 0, out
    assert "latency p95" in out and "<= max 600 s" in out


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--max-cost", "-1"),
        ("--max-cost", "nan"),
        ("--max-cost", "inf"),
        ("--max-cost", "cheap"),
        ("--max-latency-p95", "-2"),
        ("--max-latency-p95", "nan"),
        ("--max-latency-p95", "soon"),
    ],
)
def test_bad_values_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, value: str
) -> None:
    code, out, err = in_process(capsys, "gate", str(tmp_path), flag, value)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and repr(value) in lines[0], err
    assert "Traceback" not in err and out == ""


def test_bad_value_in_a_subprocess_has_no_traceback(tmp_path: Path) -> None:
    assert_user_error(cli("gate", "somerun", "--max-cost", "-0.5", cwd=tmp_path), "--max-cost")


def test_cost_and_latency_conditions_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run([0.1, 0.2], tmp_path)
    code, out, _ = _gate(capsys, run, "--max-cost", "0.3", "--max-latency-p95", "600")
    assert code == 0, out
    checks = [line for line in out.splitlines() if line.startswith(("ok", "FAIL"))]
    assert len(checks) == 2
    assert checks[0] == "ok    cost $0.3 <= max $0.3 (--max-cost)"
    assert checks[1].startswith("ok    latency p95 ") and checks[1].endswith("(--max-latency-p95)")
    code, out, _ = _gate(capsys, run, "--max-cost", "0.29")
    assert code == 1 and "FAIL  cost $0.3 > max $0.29 (--max-cost)" in out
    for condition in (["--max-cost", "0"], ["--max-latency-p95", "1"]):  # each is a condition
        code, out, err = _gate(capsys, run, *condition)
        assert code in (0, 1) and "no condition" not in err, (out, err)


@pytest.mark.parametrize(
    ("cost", "limit", "line"),
    [
        (1.0004, "1", "FAIL  cost $1.0004 > max $1 (--max-cost)"),
        (0.99999, "1", "ok    cost $0.99999 <= max $1 (--max-cost)"),
        (1.0 + 1e-12, "1", "ok    cost $1 <= max $1 (--max-cost)"),  # float noise: equal
    ],
)
def test_a_cost_near_its_limit_never_reads_equal_to_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cost: float, limit: str, line: str
) -> None:
    code, out, _ = _gate(capsys, _run([cost], tmp_path), "--max-cost", limit)
    assert line in out.splitlines() and code == (1 if line.startswith("FAIL") else 0), out


# -- the --max-cost run option --------------------------------------------------------------

EVAL = textwrap.dedent(
    """
    import pandas as pd
    import evalbook as eb

    df = pd.DataFrame({"id": [f"c{i}" for i in range(6)]})

    def task(id, ctx):
        ctx.record_usage(cost=0.25)
        return id

    paid = eb.Eval(df, task=task, scorers=[lambda output: 1.0], name="paid", concurrency=1)
    """
)


def test_run_max_cost_stops_starting_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "ev.py").write_text(EVAL)
    store = tmp_path / "runs"
    code, out, err = in_process(
        capsys, "run", str(tmp_path / "ev.py"), "--max-cost", "0.5", "--store", str(store)
    )
    assert code == 4, err  # incomplete: a CI step must not read it as a whole run
    assert "max_cost=$0.5" in err  # the budget is named
    assert "(4 not run)" in out  # $0.25 each: the third sample never started
    assert "is incomplete: 4 samples did not run" in err and "--resume" in err
    # the command's user is told the command's words, never Python's
    assert "evalbook run FILE --resume RUN --max-cost USD" in err and "eb.run(" not in err
    (folder,) = store.iterdir()
    code, _, err = in_process(capsys, "show", str(folder))
    assert code == 0 and f"resume it: evalbook run FILE --resume {folder.resolve()}" in err, err
    assert "eb.run(" not in err
    # in Python, the same warnings speak Python
    with pytest.warns(RuntimeWarning, match="resume it: eb.run") as caught:
        eb.load_run(folder)
    assert f"resume={str(folder.resolve())!r}" in str(caught[0].message)
    assert "evalbook run" not in str(caught[0].message)


def test_run_max_cost_bad_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ev.py").write_text(EVAL)
    code, _, err = in_process(capsys, "run", str(tmp_path / "ev.py"), "--max-cost", "-3")
    assert code == 2 and "--max-cost" in err and len(err.strip().splitlines()) == 1


# -- %%eval --max-cost -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    shell.user_ns["df"] = pd.DataFrame({"q": [f"q{i}" for i in range(6)]})
    shell.run_cell("import evalbook as eb\nok = eb.scorer(lambda output: 1.0)\n")
    return shell


def test_cell_magic_max_cost_is_the_runs_budget(ip: Any, tmp_path: Path) -> None:
    body = "ctx.record_usage(cost=0.25)\nq\n"
    with pytest.warns(RuntimeWarning, match=r"max_cost=\$0\.5"):
        run = ip.run_cell_magic(
            "eval", f"df --scorers ok --concurrency 1 --max-cost 0.5 --store {tmp_path}", body
        )
    assert isinstance(run, eb.Run)
    assert run.options["max_cost"] == 0.5
    assert int(run.cases["outcome"].notna().sum()) == 2  # the third sample never started


@pytest.mark.parametrize("bad", ["-1", "nan", "cheap"])
def test_cell_magic_bad_max_cost_is_a_usage_error(ip: Any, tmp_path: Path, bad: str) -> None:
    result = ip.run_cell(f"%%eval df --scorers ok --max-cost {bad} --store {tmp_path}\nq\n")
    error = result.error_in_exec
    assert isinstance(error, UsageError), error
    assert "max" in str(error) and "\n" not in str(error).strip()
    assert not any(tmp_path.iterdir())  # nothing ran, nothing was stored


def test_max_cost_is_a_cell_only_option(ip: Any) -> None:
    with pytest.raises(UsageError, match="--max-cost: only for the %%eval cell magic"):
        ip.run_line_magic("eval", "runs --max-cost 1")
