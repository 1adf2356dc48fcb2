"""Fixtures shared by the interop tests: a real Inspect AI log per format, made once."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session", params=["eval", "json"])
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny task's log, written by Inspect AI with `mockllm` (`.eval`, then `.json`)."""
    pytest.importorskip("inspect_ai", reason="the extra evalbook[inspect]")
    # Inspect AI is an optional extra: only the tests that ask for a log import it
    from _inspect_task import make_log

    return make_log(tmp_path_factory.mktemp(f"inspect-{request.param}"), request.param)
