"""Fault injection where the run records usage: damaged files and kill -9 never change usage.

- Byte flips and truncations of an `events.jsonl` whose `case.ended` lines carry usage, each
  loaded and classified as in tests/faults/test_byte_flips.py, with `run.usage()` and
  `run.usage_summary()` part of what must be identical (or detected).
- Byte flips in `cases.parquet` (its `usage` column) and `summary.json` (its `usage` totals),
  the log intact, and edits that keep each file well-formed but change one sample's usage:
  each load is detected or identical, never different.
- kill -9 at random moments, then resume (tests/faults/_fault_procs.py with `usage=True`):
  the resumed run's `usage()` equals an uninterrupted run's, so no sample's usage is lost or
  counted twice.

Figures are printed and attached to the report. The long forms:
`python tools/faults_byte_flips.py --usage --trials 200` and
`python tools/faults_kill.py --usage --trials 100`.
"""

from __future__ import annotations

import json
import random
import shutil
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fault_procs import kill_trials
from pandas.testing import assert_frame_equal
from test_byte_flips import BAD, Trials, line

import evalbook as eb
from evalbook._runner._meter import current_meter

N_CASES = 24
Tables = tuple[pd.DataFrame, ...]


def _task(i: int, question: str, ctx: Any) -> str:
    # every form a call reports in: a usage dict, keywords, a cost or none, an invalid amount
    if i % 4 == 0:
        ctx.record_usage({"prompt_tokens": 100 + i, "completion_tokens": i}, model="m")
    elif i % 4 == 1:
        ctx.record_usage(input_tokens=10 * i, output_tokens=3, cost=i / 64)
    elif i % 4 == 2:
        ctx.record_usage(input_tokens=i, cost=-1)  # invalid: that call's usage is unknown
    if i == 11:
        raise RuntimeError("model down")
    return question.upper() if i % 3 else question


@eb.scorer
def judged(output: Any, i: int) -> float:
    meter = current_meter()
    assert meter is not None
    if i % 3:
        meter.record(input_tokens=50, output_tokens=5, cost=0.125, retries=i % 2)
    else:
        meter.record(input_tokens=50, output_tokens=5, cached=True)
    return float(i % 2)


def stored_usage_run(root: Path, final_files: bool = False) -> Path:
    """A stored run of 24 cases x 2 epochs whose task and judge record usage; its folder holds
    the log and data.parquet only (loading reads the log), or every file (`final_files`)."""
    data = pd.DataFrame({"i": range(N_CASES), "question": [f"q{i}" for i in range(N_CASES)]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = eb.run(
            data,
            task=_task,
            scorers=[judged],
            name="usage-flips",
            store=root,
            epochs=2,
            prices={"m": (1.0, 2.0)},
            progress=False,
        )
    assert run.path is not None and len(run.usage()) > N_CASES
    for name in () if final_files else ("cases.parquet", "scores.parquet", "summary.json"):
        (run.path / name).unlink()
    return run.path


def _tables(folder: Path) -> Tables:
    run = eb.load_run(folder)
    return run.cases, run.scores, run.usage(), run.usage_summary()


def _same(a: Tables, b: Tables) -> bool:
    try:
        for x, y in zip(a, b, strict=True):
            assert_frame_equal(x.astype(object), y.astype(object))
    except AssertionError:
        return False
    return True


class UsageTrials(Trials):
    """Damaged copies of one stored log with usage, loaded and classified (the classes of
    tests/faults/test_byte_flips.py; the tables compared include usage and its summary), each
    flip inside a `"usage":{...}` part of the log."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        assert self.log.count(b'"usage":') >= N_CASES
        self.spans = [
            (start, self.log.index(b"\n", start))
            for start in range(len(self.log))
            if self.log.startswith(b'"usage":', start)
        ]

    def stored(self, root: Path) -> Path:
        return stored_usage_run(root)

    def tables(self, folder: Path) -> Any:
        return _tables(folder)

    def same(self, a: Any, b: Any) -> bool:
        return _same(a, b)

    def flip_offset(self, rng: random.Random) -> int:
        start, end = rng.choice(self.spans)
        return rng.randrange(start, end)


def usage_log_trials(flips: int, cuts: int, seed: int) -> tuple[Counter[str], Counter[str]]:
    """`flips` byte flips in the usage parts and `cuts` truncations of one stored log."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(prefix="evalbook-usage-flips-") as tmp:
        trials = UsageTrials(Path(tmp))
        trials.flips(flips, rng)
        flipped = Counter(trials.counts)
        trials.counts.clear()
        trials.cuts(cuts, rng)
        return flipped, Counter(trials.counts)


def _load_class(folder: Path, name: str, baseline: Tables) -> str:
    """Load a run whose final file `name` was changed: detected, identical, raised or bad."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            got = _tables(folder)
        except Exception as exc:
            named = name in str(exc) and not isinstance(exc, KeyError | TypeError)
            return "raised" if named else "raw"
    if _same(got, baseline):
        return "detected" if caught else "identical"
    return "wrong recovery" if caught else "silently different"


def _rewrite_usage_column(path: Path, row: int, change: Callable[[dict[str, Any]], None]) -> None:
    table = pq.read_table(path)
    texts = table.column("usage").to_pylist()
    usage = json.loads(texts[row])
    change(usage)
    texts[row] = json.dumps(usage)
    at = table.column_names.index("usage")
    table = table.set_column(at, "usage", pa.array(texts, type=table.schema.field(at).type))
    pq.write_table(table, path)


# Well-formed edits (the file's page checksums rewritten) that change a total summary.json
# holds, which loading checks. An edit that keeps every total (a source renamed) is not a
# fault the store can tell from the truth: flips are caught by the pages' CRC-32.
EDITS: dict[str, Callable[[dict[str, Any]], None]] = {
    "more input tokens": lambda u: u["task"].update(input_tokens=u["task"]["input_tokens"] + 1),
    "a cost moved": lambda u: (u["task"].update(cost=0.0), u["judged"].update(cost=0.5)),
    "a call more": lambda u: u["judged"].update(calls=u["judged"]["calls"] + 1),
    "a cached call more": lambda u: u["judged"].update(
        cached_calls=u["judged"].get("cached_calls", 0) + 1
    ),
    "a tally dropped": lambda u: u.pop("judged"),
}


def final_usage_faults(n: int, seed: int) -> dict[str, Counter[str]]:
    """`n` byte flips in each of cases.parquet and summary.json (the log intact), and each
    well-formed edit of one sample's stored usage: counts per file or edit."""
    rng = random.Random(seed)
    out: dict[str, Counter[str]] = {}
    with tempfile.TemporaryDirectory(prefix="evalbook-usage-final-") as tmp:
        source = stored_usage_run(Path(tmp) / "store", final_files=True)
        baseline = _tables(source)
        for name in ("cases.parquet", "summary.json"):
            content = (source / name).read_bytes()
            counts: Counter[str] = Counter()
            for t in range(n):
                folder = Path(tmp) / f"{name}-{t}"
                shutil.copytree(source, folder)
                damaged = bytearray(content)
                damaged[rng.randrange(len(damaged))] ^= rng.randrange(1, 256)
                (folder / name).write_bytes(bytes(damaged))
                counts[_load_class(folder, name, baseline)] += 1
            out[f"{name} flips"] = counts
        edits: Counter[str] = Counter()
        for label, change in EDITS.items():
            folder = Path(tmp) / f"edit-{label.replace(' ', '-')}"
            shutil.copytree(source, folder)
            _rewrite_usage_column(folder / "cases.parquet", 1, change)  # case 0, epoch 2
            kind = _load_class(folder, "cases.parquet", baseline)
            edits[kind] += 1
            if kind in BAD:
                print(f"  usage edit {label!r}: {kind}")
        summary = json.loads((source / "summary.json").read_text())
        for key in ("calls", "input_tokens", "cost"):
            folder = Path(tmp) / f"summary-{key}"
            shutil.copytree(source, folder)
            changed = {**summary, "usage": {**summary["usage"], key: summary["usage"][key] + 1}}
            (folder / "summary.json").write_text(json.dumps(changed))
            edits[_load_class(folder, "summary.json", baseline)] += 1
        out["usage edits"] = edits
    return out


def _report(record_property: Callable[[str, object], None], kind: str, c: Counter[str]) -> None:
    print(line(kind, c))
    record_property(kind.replace(" ", "_"), line(kind, c))


def test_flips_and_cuts_of_a_log_with_usage_never_change_usage_silently(
    record_property: pytest.RecordProperty,
) -> None:
    flipped, cut = usage_log_trials(flips=40, cuts=20, seed=18)
    _report(record_property, "usage log byte flips", flipped)
    _report(record_property, "usage log truncations", cut)
    for kind in BAD:
        assert flipped[kind] == 0 and cut[kind] == 0, kind
    assert sum(flipped.values()) == 40 and sum(cut.values()) == 20
    assert flipped["detected"] + flipped["raised"] >= 35  # a flip in usage is found


def test_damaged_usage_in_the_final_files_is_detected_or_identical(
    record_property: pytest.RecordProperty,
) -> None:
    counts = final_usage_faults(n=12, seed=18)
    for kind, c in counts.items():
        _report(record_property, kind, c)
    for kind, c in counts.items():
        for bad in BAD:
            assert c[bad] == 0, (kind, bad)
    assert sum(counts["usage edits"].values()) == len(EDITS) + 3


@pytest.mark.slow
def test_kill_9_then_resume_keeps_every_samples_usage_once(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    tally = kill_trials(tmp_path, 10, seed=18, usage=True)
    print(tally.line())
    record_property("usage_kill_trials", tally.line())
    assert tally.trials == 10
    assert tally.problems == []
    assert (tally.lost, tally.twice_run, tally.usage_different, tally.different) == (0, 0, 0, 0)
    # kills land while samples run, else the trials test little (loose: load moves them)
    assert tally.mid_run >= 1
