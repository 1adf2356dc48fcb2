"""Shared test settings: no progress bars, no stray run folders in the repository."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("EVALBOOK_PROGRESS", "0")


@pytest.fixture(autouse=True)
def _run_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own temporary folder, so the default store ("runs") lands there."""
    monkeypatch.chdir(tmp_path)
