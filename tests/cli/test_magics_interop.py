"""`%eval import`, `%eval show --attempts`, `%eval show A B --pool`, `%eval export --otlp`.

They wrap `eb.import_results`, `run.attempts()`, `eb.pool` and `eb.export_otel`, and refuse
misplaced options with one UsageError line, as the CLI does (docs/notebooks.md, magics).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from tests._otlp_receiver import OtlpReceiver

import evalbook as eb

PROMPTFOO = Path(__file__).resolve().parent.parent / "interop" / "fixtures" / "promptfoo"


@pytest.fixture(scope="module")
def ip() -> Any:
    shell = start_ipython() or get_ipython()  # None if another test started it first
    shell.run_line_magic("load_ext", "evalbook")
    return shell


def _flaky_run(store: Path, name: str, passing: int) -> eb.Run:
    tries: dict[str, int] = {}

    def task(q: str) -> str:
        tries[q] = tries.get(q, 0) + 1
        if q == "b" and tries[q] == 1:
            raise RuntimeError("first try fails")
        return q

    df = pd.DataFrame({"q": list("abcd")})
    return eb.run(
        df,
        task=task,
        scorers=[
            eb.scorer(eb.define_score("ok", primary=True))(lambda q: float(q < "abcd"[passing]))
        ],
        attempts=2,
        name=name,
        store=store,
        progress=False,
    )


def test_import_wraps_import_results(ip: Any) -> None:
    run = ip.run_line_magic("eval", f"import {PROMPTFOO / 'results.json'} --name pf")
    direct = eb.import_results(PROMPTFOO / "results.json", name="pf")
    assert isinstance(run, eb.Run) and run.name == "pf"
    pd.testing.assert_frame_equal(run.summary(), direct.summary())
    same = ip.run_line_magic("eval", f"import {PROMPTFOO / 'results.json'} --format promptfoo")
    assert same.headline.text == direct.headline.text
    with pytest.raises(UsageError, match="not a results file evalbook can import"):
        ip.run_line_magic("eval", f"import {PROMPTFOO / 'README.md'}")
    with pytest.raises(UsageError, match="no such file"):
        ip.run_line_magic("eval", "import nothing-here.json")


def test_show_attempts_and_pool(ip: Any, tmp_path: Path) -> None:
    a = _flaky_run(tmp_path, "a", 2)
    b = _flaky_run(tmp_path, "b", 3)
    ip.user_ns.update(a=a, b=b)
    attempts = ip.run_line_magic("eval", "show a --attempts")
    pd.testing.assert_frame_equal(attempts, a.attempts())
    assert len(attempts) == 5  # b's sample took two attempts
    pooled = ip.run_line_magic("eval", "show a b --pool")
    pd.testing.assert_frame_equal(pooled, eb.pool([a, b]))
    assert pooled.set_index("score").loc["ok", "mean"] == pytest.approx(5 / 8)
    for line, fragment in [
        ("show a b", "usage: %eval show RUN"),
        ("show a --attempts --pool", "--attempts does not apply with --pool"),
        ("show a b --pool --cluster q", "--cluster does not apply with --pool"),
        ("show a --attempts --by q", "do not apply with --attempts"),
        ("show a --attempts 3", "takes no number"),
        ("runs --pool", "--pool: only for %eval show"),
        ("show a --format inspect", "--format: only for %eval import"),
        ("show a --name x", "--name: only for the %%eval cell magic"),
    ]:
        with pytest.raises(UsageError, match=fragment):
            ip.run_line_magic("eval", line)


def test_export_otlp_wraps_export_otel(ip: Any, tmp_path: Path) -> None:
    ip.user_ns["a"] = _flaky_run(tmp_path, "a", 2)
    with OtlpReceiver() as rx:
        sent = ip.run_line_magic("eval", f"export a --otlp {rx.url}")
        assert sent.gauges == {"evalbook.score.ok": pytest.approx(0.5)}
        assert sent.samples == 4 and rx.metrics and rx.traces
        rx.refuse(503)
        with pytest.raises(UsageError, match="503"):
            ip.run_line_magic("eval", f"export a --otlp {rx.url}")
    with pytest.raises(UsageError, match="--otlp: only for %eval export"):
        ip.run_line_magic("eval", "show a --otlp http://127.0.0.1:1")


def test_export_otlp_steps_sends_a_span_per_step(ip: Any) -> None:
    harbor = PROMPTFOO.parent / "harbor" / "agent-job"
    ip.user_ns["agent"] = eb.import_results(harbor)
    n_steps = len(ip.user_ns["agent"].steps())
    with OtlpReceiver() as rx:
        sent = ip.run_line_magic("eval", f"export agent --otlp {rx.url} --otlp-steps")
        assert sent.spans == len(rx.spans()) == 1 + 2 + n_steps
    with pytest.raises(UsageError, match="--otlp-steps applies only with --otlp URL"):
        ip.run_line_magic("eval", "export agent out.csv --otlp-steps")
    with pytest.raises(UsageError, match="--otlp-steps: only for the %eval line magic"):
        ip.run_cell_magic("eval", "df --otlp-steps", "q")


def test_cell_magic_keeps_attempts_as_a_number(ip: Any, tmp_path: Path) -> None:
    ip.user_ns["df"] = pd.DataFrame({"q": ["x"]})
    with pytest.raises(UsageError, match="give the tries per sample"):
        ip.run_cell_magic("eval", f"df --attempts --store {tmp_path}", "q")
    with pytest.raises(UsageError, match="--pool: only for the %eval line magic"):
        ip.run_cell_magic("eval", f"df --pool --store {tmp_path}", "q")
    run = ip.run_cell_magic("eval", f"df --attempts 2 --store {tmp_path}", "q")
    assert run.options["attempts"] == 2
