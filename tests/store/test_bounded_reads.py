"""Reads of a run folder are bounded: a sparse 8 GiB file named events.jsonl is refused
quickly, with little memory (docs/file-formats.md, "Bounded reads")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb
from _store_helpers import MAX_LINE_MIB, drop_final_files

SCRIPT = textwrap.dedent(
    """
    import json, os, resource, sys, time, warnings
    from pathlib import Path
    import evalbook as eb

    store = Path(sys.argv[1])
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = eb.runs(store)
    listed = [str(w.message) for w in caught]
    try:
        eb.load_run(store / "huge")
        error = None
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"names": table["name"].tolist(), "warnings": listed, "error": error,
                      "seconds": seconds, "growth_mb": (after - before) / 1024}))
    """
)


def test_a_sparse_8_gib_log_is_refused_quickly_with_little_memory(
    tmp_path: Path, record_property: pytest.RecordProperty
) -> None:
    store = tmp_path / "store"
    (store / "huge").mkdir(parents=True)
    with (store / "huge" / "events.jsonl").open("wb") as f:
        f.truncate(8 << 30)  # sparse: costs no disk
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(store)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print(
        f"sparse 8 GiB log: {result['seconds']:.2f} s, peak RSS growth {result['growth_mb']:.0f} MB"
    )
    record_property("sparse_8gib_seconds", round(result["seconds"], 2))
    record_property("sparse_8gib_rss_growth_mb", round(result["growth_mb"]))
    assert result["names"] == []  # skipped, with a warning naming it
    assert any("huge" in w and "line 1" in w for w in result["warnings"]), result["warnings"]
    assert result["error"] is not None and "events.jsonl, line 1" in result["error"]
    assert f"longer than {MAX_LINE_MIB} MiB" in result["error"]
    assert result["growth_mb"] < 300  # a generous bound: the line bound is 64 MiB


LIST_REPLAY_MIB = 32  # eb.runs replays a log without summary.json up to this size


def test_runs_reads_only_the_first_line_and_the_end_of_a_large_log(tmp_path: Path) -> None:
    # 8 outputs of 5 MB: a 40 MB log, still above 32 MiB once its last case is cut off
    data = pd.DataFrame({"id": [f"c{i}" for i in range(8)], "n": range(8)})
    outputs = [f"{i}" + "x" * 5_000_000 for i in range(8)]

    def stored(name: str) -> eb.Run:
        run = eb.run(data, task=lambda n: outputs[n], scorers=[lambda output: 1.0], name=name,
                     store=tmp_path, progress=False)  # fmt: skip
        assert run.path is not None
        drop_final_files(run.path)
        return run

    done, cut = stored("done"), stored("cut")
    log = cut.path / "events.jsonl"  # type: ignore[operator]
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-3]))
    for run in (done, cut):
        assert (run.path / "events.jsonl").stat().st_size > LIST_REPLAY_MIB << 20  # type: ignore[operator]
    table = eb.runs(tmp_path)
    assert table["name"].tolist() == ["done", "cut"]
    assert table["status"].tolist() == ["complete", "incomplete"]
    assert table["n_cases"].tolist() == [8, 8]
    assert table["completion"][0] == done.headline.completion == 1.0
    assert table["headline"].isna().all()  # the headline needs the whole log: not replayed
    assert table["id"].tolist() == [done.id, cut.id]
