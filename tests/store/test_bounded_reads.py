"""Reads of a run folder are bounded: a sparse 8 GiB file named events.jsonl is refused
quickly, with little memory (docs/file-formats.md, "Bounded reads")."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _store_helpers import drop_final_files, run_t
from evalbook._store import _listing
from evalbook._store._log._file import MAX_LINE

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
    assert f"longer than {MAX_LINE >> 20} MiB" in result["error"]
    assert result["growth_mb"] < 300  # a generous bound: the line bound is 64 MiB


def test_runs_reads_only_the_first_line_and_the_end_of_a_large_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = run_t(tmp_path, name="done")
    cut = run_t(tmp_path, name="cut")
    for run in (done, cut):
        assert run.path is not None
        drop_final_files(run.path)
    log = cut.path / "events.jsonl"  # type: ignore[operator]
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[:-3]))
    full = _listing.runs(tmp_path)
    replayed = {"": 0}

    def no_replay(*args: object, **kwargs: object) -> None:
        replayed[""] += 1
        raise AssertionError("a large log is not replayed to list it")

    monkeypatch.setattr(_listing, "LIST_REPLAY_BYTES", 100)  # every log is "large" now
    monkeypatch.setattr(_listing, "replay", no_replay)
    table = _listing.runs(tmp_path)
    assert table["name"].tolist() == ["done", "cut"] and replayed[""] == 0
    assert table["status"].tolist() == ["complete", "incomplete"]
    assert table["n_cases"].tolist() == full["n_cases"].tolist()
    assert table["completion"][0] == full["completion"][0] == done.headline.completion
    assert table["headline"].isna().all()  # the headline needs the whole log
    assert table["id"].tolist() == full["id"].tolist()
