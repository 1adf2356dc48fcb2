"""Early stopping in a run (docs/spend-less.md): `stop_when=eb.decided(...)` against a
base run and `stop_when=eb.precise(...)`; no sample starts once decided, those in flight are
kept; the decision in `run.options`, the log and the headline; a real SIGKILL and a resume
come to the same decision; configuration mistakes before any case runs."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalbook as eb

N = 600
_rng = np.random.default_rng(34)
DATA = pd.DataFrame({"id": [f"c{i:03d}" for i in range(N)], "base_ok": _rng.random(N) < 0.6})
DATA["better"] = DATA["base_ok"] | (_rng.random(N) < 0.35)  # about +14 pp
DATA["worse"] = DATA["base_ok"] & (_rng.random(N) < 0.6)  # about −24 pp
OK = eb.define_score("ok", primary=True)


def _scorer(column: str) -> eb.scorer:  # type: ignore[valid-type]
    @eb.scorer(OK)
    def score(row: dict[str, object]) -> float:
        return float(bool(row[column]))

    return score


def _candidate(column: str, **options: object) -> eb.Run:
    """A run of DATA scored by `column`, in memory, stopped by `eb.decided(max_drop=0.02)`
    unless `options` say otherwise (`against=`, `stop_when=`, ...)."""
    kwargs: dict[str, object] = {
        "task": lambda id: id,
        "store": None,
        "stop_when": eb.decided(max_drop=0.02),
        "progress": False,
        **options,
    }
    return eb.run(DATA, scorers=[_scorer(column)], **kwargs)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> eb.Run:
    store = tmp_path_factory.mktemp("store")
    return eb.run(
        DATA,
        task=lambda id: id,
        scorers=[_scorer("base_ok")],
        store=str(store),
        name="base",
        progress=False,
    )


def test_a_better_run_stops_early_non_inferior_and_none_starts_after(
    base: eb.Run, tmp_path: Path
) -> None:
    started: list[str] = []

    async def task(id: str) -> str:
        started.append(id)
        await asyncio.sleep(0.002)
        return id

    run = eb.run(
        DATA,
        task=task,
        scorers=[_scorer("better")],
        store=str(tmp_path),
        name="cand",
        against=base,
        stop_when=eb.decided(max_drop=0.02),
        concurrency=8,
        progress=False,
    )
    stopped = run.options["stopped"]
    assert stopped["decision"] == "non_inferior"
    assert stopped["ran"] < N / 2 and stopped["of"] == N
    # every sample that started finished and is kept; none started after the decision
    assert len(started) == stopped["ran"] == int(run.cases["outcome"].notna().sum())
    assert stopped["at"] <= stopped["ran"]  # the decision's samples, and those in flight
    assert stopped["low"] > -0.02
    # the samples ran in the seeded order: its first `at` cases are eb.sample's
    first = set(eb.sample(DATA, stopped["at"], seed=0)["id"])
    assert first <= set(started)
    text = run.headline.text
    assert f"stopped after {stopped['ran']} of 600 cases: non-inferior at −2 pp" in text
    assert "not run" not in text and "completed 100%" in text
    assert run.options["stop_when"] == {"rule": "decided", "max_drop": 0.02, "alpha": 0.05}
    assert run.options["against"]["name"] == "base"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a decided run is not "incomplete"
        loaded = eb.load_run(run.path)
    assert loaded.options["stopped"] == stopped
    (run.path / "summary.json").unlink()  # from the log alone (as after a crash)
    for name in ("cases.parquet", "scores.parquet"):
        (run.path / name).unlink(missing_ok=True)
    assert eb.load_run(run.path).options["stopped"] == stopped


def test_a_worse_run_is_called_inferior_and_fails_its_gate(base: eb.Run) -> None:
    run = _candidate("worse", against=base)
    assert run.options["stopped"]["decision"] == "inferior"
    assert "inferior at −2 pp" in run.headline.text
    from evalbook._compare._gate import GateSpec, check_gate

    checks = check_gate(run, GateSpec(min=0.0))
    failing = [c for c in checks if not c.holds]
    assert [c.flag for c in failing] == ["decision"]
    assert "inferior at −2 pp" in failing[0].text


def test_against_a_stored_path_and_an_undecided_run(base: eb.Run) -> None:
    run = _candidate("base_ok", against=str(base.path), stop_when=eb.decided(max_drop=0.001))
    stopped = run.options["stopped"]
    # the same values as the base: the delta is 0 on every case, never clear of −0.1 pp
    assert stopped["decision"] == "undecided" and stopped["ran"] == N
    assert "stopped" not in run.headline.text


def test_precise_stops_once_the_interval_is_narrow_enough() -> None:
    run = _candidate("base_ok", stop_when=eb.precise(half_width=0.1), seed=3)
    stopped = run.options["stopped"]
    assert stopped["decision"] == "precise"
    assert (stopped["high"] - stopped["low"]) / 2 <= 0.1
    assert stopped["ran"] < N
    assert "precise to ±10 pp" in run.headline.text


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"stop_when": "decided"}, "stop_when= takes"),
        ({"stop_when": eb.decided(max_drop=0.02)}, "needs the base run"),
        ({"against": "x"}, "against= is the base run"),
        ({"stop_when": eb.precise(half_width=0.05), "against": "x"}, "leave against= out"),
        ({"stop_when": eb.precise(half_width=0.05), "epochs": 2}, "epochs=1"),
        ({"stop_when": eb.precise(half_width=0.05), "seed": "a"}, "seed= must be"),
    ],
)
def test_configuration_mistakes_before_any_case_runs(kwargs: dict[str, object], match: str) -> None:
    calls: list[str] = []
    with pytest.raises(eb.ConfigurationError, match=match):
        eb.run(
            DATA,
            task=calls.append,
            scorers=[_scorer("base_ok")],
            store=None,
            progress=False,
            **kwargs,
        )  # type: ignore[arg-type]
    assert calls == []
    with pytest.raises(eb.ConfigurationError, match="between 0 and 1"):
        eb.decided(max_drop=2)


CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import numpy as np, pandas as pd
    import evalbook as eb

    store, base_path, calls, kill_after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    data = pd.read_parquet(sys.argv[5])
    ok = eb.define_score("ok", primary=True)

    @eb.scorer(ok)
    def score(row):
        return float(bool(row["better"]))

    done = []

    def task(id):
        with open(calls, "a") as f:
            f.write(id + "\\n")
        done.append(id)
        if kill_after and len(done) == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)
        return id

    resume = sys.argv[6] if len(sys.argv) > 6 else None
    run = eb.run(data, task=task, scorers=[score], name="cand", store=store, resume=resume,
                 against=base_path, stop_when=eb.decided(max_drop=0.02), concurrency=1,
                 progress=False)
    print(run.path)
    """
)


def _child(
    tmp_path: Path, base: eb.Run, kill_after: int, *resume: str
) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    data = tmp_path / "data.parquet"
    DATA.to_parquet(data)
    return subprocess.run(
        [
            sys.executable,
            str(script),
            str(tmp_path / "store"),
            str(base.path),
            str(tmp_path / "calls.txt"),
            str(kill_after),
            str(data),
            *resume,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )


def test_a_sigkill_then_resume_comes_to_the_same_decision(base: eb.Run, tmp_path: Path) -> None:
    whole = eb.run(
        DATA,
        task=lambda id: id,
        scorers=[_scorer("better")],
        store=None,
        against=base,
        stop_when=eb.decided(max_drop=0.02),
        concurrency=1,
        progress=False,
    ).options["stopped"]
    assert whole["ran"] > 12
    killed = _child(tmp_path, base, 10)
    assert killed.returncode == -9, killed.stderr
    (folder,) = (tmp_path / "store").iterdir()
    resumed = _child(tmp_path, base, 0, str(folder))
    assert resumed.returncode == 0, resumed.stderr
    run = eb.load_run(folder)
    stopped = run.options["stopped"]
    assert {k: stopped[k] for k in ("decision", "ran", "at", "low", "high")} == {
        k: whole[k] for k in ("decision", "ran", "at", "low", "high")
    }
    calls = (tmp_path / "calls.txt").read_text().split()
    # the sample in flight at the kill ran again; no finished one was lost or ran twice
    assert len(calls) == whole["ran"] + 1 and len(set(calls)) == whole["ran"]
    # once decided, a further resume starts no sample
    again = _child(tmp_path, base, 0, str(folder))
    assert again.returncode == 0, again.stderr
    assert len((tmp_path / "calls.txt").read_text().split()) == whole["ran"] + 1
    assert eb.load_run(folder).options["stopped"]["decision"] == "non_inferior"


def test_compare_gives_the_sequential_interval_beside_the_fixed_n_one(base: eb.Run) -> None:
    run = _candidate("better", name="cand", against=base)
    low, high = run.options["stopped"]["low"], run.options["stopped"]["high"]
    comparison = eb.compare(base, run)
    (note,) = [w for w in comparison.warnings if "sequential" in w]
    assert "Run 'cand' stopped after" in note and "against 'base'" in note
    assert f"{low * 100:+.1f}".replace("-", "−") in note and f"{high * 100:+.1f}" in note
    assert comparison.summary.loc[0, "n_paired"] == run.options["stopped"]["ran"]


def test_the_headline_card_speaks_of_the_stop(base: eb.Run) -> None:
    run = _candidate("better", against=base)
    html = run._repr_html_()
    early = N - run.options["stopped"]["ran"]
    assert f"stopped early {early}" in html and "not run" not in html
    assert "non-inferior at −2 pp" in html
    assert run.summary().loc[0, "dropped_reasons"] == f"stopped_early {early}"
    assert set(run.scores.loc[run.scores["status"].isna(), "reason"]) == {"stopped_early"}
