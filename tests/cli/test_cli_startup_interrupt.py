"""A Ctrl-C while the `evalbook` command starts (the library loading) is one line and exit 130,
never a traceback (docs/cli.md, "Exit codes")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

# the console script's own code (pip writes it so), saying "ready" once `evalbook._cli` is
# imported: before that, a Ctrl-C lands while Python itself starts (its `site`) or while it reads
# the few lines of `evalbook/__init__.py` and `_cli/__init__.py` (no pandas, no typing) — that
# is Python's to report, and a loaded machine stretches it to 100 ms. From "ready" on, `main`
# loads the library inside its `try`: the first signal comes 30 ms after "ready"
ENTRY = (
    "import sys; from evalbook._cli import main; sys.stderr.write('ready\\n'); "
    "sys.stderr.flush(); sys.exit(main())"
)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_a_ctrl_c_during_start_up_is_one_line_not_a_traceback(record_property: Any) -> None:
    outcomes: dict[str, int] = {}
    for delay in (0.03, 0.06, 0.1, 0.2, 0.4, 0.6):
        child = subprocess.Popen(
            [sys.executable, "-c", ENTRY, "runs", "--store", "nowhere"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert child.stderr is not None
        assert child.stderr.readline() == "ready\n"
        time.sleep(delay)
        if child.poll() is None:  # not ended already (it may, on a fast machine)
            child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert "Traceback" not in err, (delay, err)
        if child.returncode == 130:
            assert err.strip().splitlines()[-1].endswith("error: interrupted"), (delay, err)
            outcomes["interrupted"] = outcomes.get("interrupted", 0) + 1
        else:  # it ended first (or Python had not yet set its handler: killed by the signal)
            assert child.returncode in (0, 2, -signal.SIGINT), (delay, child.returncode, err)
            outcomes["other"] = outcomes.get("other", 0) + 1
    figure = f"SIGINT at 6 delays after the script starts: {outcomes}, 0 tracebacks"
    print(figure)
    record_property("startup_sigint", figure)
    assert outcomes.get("interrupted", 0) >= 3  # most land while the library loads
