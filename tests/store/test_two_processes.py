"""Two processes and one run folder: the writer keeps it, a second resume is refused up front."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest

import evalbook as eb

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import pandas as pd
    import evalbook as eb

    store, ready, go = (Path(a) for a in sys.argv[1:4])

    def task(question):
        if question == "b":  # mid-run: say so, then wait for the other process to have tried
            ready.write_text("x")
            while not go.exists():
                time.sleep(0.01)
        return question.upper()

    data = pd.DataFrame({"question": ["a", "b", "c"]})
    eb.run(data, task=task, name="held", store=store, concurrency=1, progress=False)
    """
)


def test_a_second_process_resuming_a_run_being_written_gets_a_configuration_error(
    tmp_path: Path,
) -> None:
    store, ready, go = tmp_path / "store", tmp_path / "ready", tmp_path / "go"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(store), str(ready), str(go)],
        env={**os.environ, "EVALBOOK_PROGRESS": "0"},
    )
    try:
        for _ in range(6000):  # the child imports evalbook, then starts its run (at most 60 s)
            if ready.exists() or child.poll() is not None:
                break
            time.sleep(0.01)
        assert ready.exists(), "the writing process did not start its run"
        (folder,) = list(store.iterdir())
        calls: list[str] = []

        def task(question: str) -> str:
            calls.append(question)
            return question

        data = pd.DataFrame({"question": ["a", "b", "c"]})
        with pytest.raises(eb.ConfigurationError, match="another run"):
            eb.run(data, task=task, resume=folder, progress=False)
        assert calls == []  # refused before any case ran
    finally:
        go.write_text("x")
        assert child.wait(timeout=120) == 0
    loaded = eb.load_run(folder)  # the writer finished its run, untouched by the refusal
    assert loaded.cases["output"].tolist() == ["A", "B", "C"]
    assert (folder / "summary.json").exists()
