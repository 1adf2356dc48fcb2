"""Shared test settings: no progress bars, no stray run folders in the repository."""

from __future__ import annotations

import os

os.environ.setdefault("EVALBOOK_PROGRESS", "0")
